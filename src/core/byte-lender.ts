/**
 * Bytes lent out of a few reused slabs, for bytes that live from the moment
 * they are written until a write to Redis lands: the fold's fragments (~2 KB a
 * record) and its apply commands (~8.5 KB an identity batch). A Buffer of their
 * own each was a new ArrayBuffer, or a new 8 KB slab of Node's pool every few:
 * under jemalloc, which the image preloads and which hands freed pages back to
 * the system, nearly every page of them was a fresh one, faulted in and zeroed,
 * and the churn of memory outside the heap set off full collections (a profile
 * of the fold: ~7% of a worker's CPU in allocating and first writing Buffers;
 * 4–8 full collections in a 100,000-record fold against 8–12). A slab whose bytes
 * were all given back is written again while its pages are warm.
 *
 * Each lent view is given back at most once, and only when nothing will read it
 * again. A view never given back keeps its slab from being reused; the slab then
 * goes when its last view does (the collector's: nothing here holds a slab that
 * has views out, so a view kept, or lost, never costs more than its slab).
 */

class Slab {
  /** Where the next view starts. */
  used = 0;
  /** Views lent from it and not given back. */
  out = 0;
  constructor(readonly bytes: Buffer) {}
}

export class ByteLender {
  private filling: Slab | null = null;
  private readonly spare: Slab[] = [];
  /** A lent view's slab, by the view's ArrayBuffer (one entry a slab: it goes with the slab). */
  private readonly slabs = new WeakMap<ArrayBufferLike, Slab>();
  private outNow = 0;

  /**
   * `slabBytes`: each slab's size; a view over a quarter of it gets bytes of its own. `keptSlabs`: slabs
   * kept for reuse once nothing lent from them is out, besides the one being filled.
   */
  constructor(
    readonly slabBytes: number,
    private readonly keptSlabs = 2,
  ) {}

  /** Views lent and not given back (those never to be given back included). */
  get out(): number {
    return this.outNow;
  }

  /** The bytes `source[from, to)`, copied into a slab (by Buffer's copy: no view of the range made, as `set` needs). */
  lend(source: Buffer, from: number, to: number): Buffer {
    const length = to - from;
    if (length > this.slabBytes / 4) return Buffer.from(source.subarray(from, to));
    let slab = this.filling;
    if (slab === null || slab.used + length > this.slabBytes) {
      // The full slab stays out until its last view is given back (giveBack then keeps it as a spare).
      slab = this.filling = this.spare.pop() ?? this.newSlab();
    }
    const at = slab.used;
    source.copy(slab.bytes, at, from, to);
    slab.used = (at + length + 7) & ~7;
    slab.out++;
    this.outNow++;
    return slab.bytes.subarray(at, at + length);
  }

  /**
   * `view`, lent by `lend`, is read by nobody any more. A view not lent here is ignored. One given back twice is a
   * bug that could free room another view holds: it throws when it finds its slab with nothing out.
   */
  giveBack(view: Uint8Array): void {
    const slab = this.slabs.get(view.buffer);
    if (slab === undefined) return;
    if (slab.out === 0) throw new Error("ByteLender.giveBack: a view given back twice (its slab has nothing out)");
    this.outNow--;
    if (--slab.out > 0) return;
    slab.used = 0; // nothing lent from it is out: it is filled again from its start
    if (slab !== this.filling && this.spare.length < this.keptSlabs) this.spare.push(slab);
  }

  private newSlab(): Slab {
    const slab = new Slab(Buffer.allocUnsafeSlow(this.slabBytes));
    this.slabs.set(slab.bytes.buffer, slab);
    return slab;
  }
}
