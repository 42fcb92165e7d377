/**
 * Strings of byte ranges that repeat from record to record (a scope's refs, a
 * Kafka key): a direct-mapped table by a hash of the bytes. A range whose
 * bytes equal its slot's string is that string, not a new one; another takes
 * the slot. Each string is a copy (latin1: a byte a character), never a view,
 * so the table keeps no record alive, and it holds at most `slots` of them.
 */
export class RepeatedStrings {
  private readonly strings: string[];
  private readonly mask: number;

  /** `slots`: a power of two. */
  constructor(slots: number) {
    if (slots <= 0 || (slots & (slots - 1)) !== 0) throw new Error(`RepeatedStrings: ${slots} slots is not a power of two`);
    this.strings = new Array<string>(slots).fill("");
    this.mask = slots - 1;
  }

  /** `bytes.toString("latin1", from, to)`, as the string an earlier equal range became when its slot still holds it. */
  of(bytes: Buffer, from: number, to: number): string {
    const slot = hashOf(bytes, from, to) & this.mask;
    const held = this.strings[slot]!;
    if (holds(held, bytes, from, to)) return held;
    return (this.strings[slot] = latin1(bytes, from, to));
  }
}

/** FNV-1a of bytes [from, to). */
export function hashOf(b: Uint8Array, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Whether `s` is the bytes [from, to), a byte a character. */
export function holds(s: string, b: Uint8Array, from: number, to: number): boolean {
  if (s.length !== to - from) return false;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) !== b[from + i]) return false;
  return true;
}

/** Buffer's own latin1 reader (what `toString("latin1", from, to)` calls after checking its arguments). */
type Latin1Readable = Buffer & { latin1Slice?: (from: number, to: number) => string };

/** Bytes [from, to) as latin1 text. */
export function latin1(b: Buffer, from: number, to: number): string {
  const buf = b as Latin1Readable;
  return buf.latin1Slice !== undefined ? buf.latin1Slice(from, to) : buf.toString("latin1", from, to);
}
