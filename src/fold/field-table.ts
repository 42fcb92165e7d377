/**
 * The fields one apply writes, each with the parts (a bit each) that write it:
 * checkCommuting's table past a few dozen ops (delta.ts). Open addressing over
 * arrays every check reuses, emptied slot by slot at the next start. A Map
 * cleared per check made a new table and grew it by doubling: garbage on most
 * plans, and the tables of a long-lived map outlived scavenges.
 */
export class FieldTable {
  private keys: string[] = new Array<string>(256).fill("");
  private parts = new Int32Array(256);
  private taken = new Uint8Array(256);
  /** The slots taken since the last start, to empty them (and let go of their strings) at the next one. */
  private slots = new Int32Array(128);
  private count = 0;

  /** Start a check of at most `n` fields: the table is at least twice that. */
  start(n: number): this {
    this.empty();
    let size = this.keys.length;
    while (size < 2 * n) size *= 2;
    if (size !== this.keys.length) {
      this.keys = new Array<string>(size).fill("");
      this.parts = new Int32Array(size);
      this.taken = new Uint8Array(size);
    }
    if (this.slots.length < n) this.slots = new Int32Array(size);
    return this;
  }

  /** Mark `field` written by the parts in `bits`; whether one of them had written it already. */
  add(field: string, bits: number): boolean {
    const mask = this.keys.length - 1;
    for (let slot = hashOf(field) & mask; ; slot = (slot + 1) & mask) {
      if (this.taken[slot] === 0) {
        this.taken[slot] = 1;
        this.keys[slot] = field;
        this.parts[slot] = bits;
        this.slots[this.count++] = slot;
        return false;
      }
      if (this.keys[slot] === field) {
        const had = (this.parts[slot]! & bits) !== 0;
        this.parts[slot]! |= bits;
        return had;
      }
    }
  }

  /** Let go of every field (the table keeps no string past a check). */
  empty(): void {
    for (let i = 0; i < this.count; i++) {
      const slot = this.slots[i]!;
      this.taken[slot] = 0;
      this.keys[slot] = "";
    }
    this.count = 0;
  }
}

/**
 * FNV-1a over a field's length, its first 8 and its last 12 characters: the fields of one apply differ there (ids
 * and members end in a sha256's hex, index entries start with their offset). Equal hashes cost a probe, never a
 * wrong answer.
 */
function hashOf(s: string): number {
  const n = s.length;
  let h = Math.imul(0x811c9dc5 ^ n, 0x01000193);
  const head = n < 8 ? n : 8;
  for (let i = 0; i < head; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  for (let i = n - 12 > head ? n - 12 : head; i < n; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return (h ^ (h >>> 15)) >>> 0;
}
