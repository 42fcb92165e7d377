/**
 * Text made of ASCII pieces, written into one reused buffer and read back as
 * one flat string: a concatenation of many pieces is a tree of string objects
 * (then flattened into a copy), about twice the bytes of the text it makes.
 * A piece that is not ASCII (or a number `digits` does not write) spoils the
 * text (`text()` is then null), and the caller writes it the other way.
 */
import type { ByteLender } from "./byte-lender.js";

/** Powers of ten a double holds exactly, by exponent. */
const POW10 = Array.from({ length: 16 }, (_, i) => 10 ** i);

/** Pieces up to this long are copied by a loop, longer ones by Buffer's UTF-8 writer (a native call costs more than a short copy). */
const SHORT_PIECE = 32;

export class AsciiText {
  private buf = Buffer.allocUnsafe(8192);
  private used = 0;
  private ascii = true;

  start(): this {
    this.used = 0;
    this.ascii = true;
    return this;
  }

  put(piece: string): this {
    const length = piece.length;
    if (length > SHORT_PIECE) {
      // UTF-8 takes at most 3 bytes a UTF-16 unit: with that room nothing is cut, and the piece is ASCII exactly
      // when it took one byte a unit (each other unit takes two or more). One native pass copies and checks.
      if (this.used + 3 * length > this.buf.length) this.grow(3 * length);
      const buf = this.buf as Utf8Writable;
      const written = buf.utf8Write !== undefined ? buf.utf8Write(piece, this.used) : buf.write(piece, this.used, "utf8");
      this.used += written;
      if (written !== length) this.ascii = false;
      return this;
    }
    return this.copyShort(piece, 0, length);
  }

  /** `text.slice(from, to)`, without making it (a long range is cut and written natively, as `put` writes it). */
  putRange(text: string, from: number, to: number): this {
    return to - from > SHORT_PIECE ? this.put(text.slice(from, to)) : this.copyShort(text, from, to);
  }

  /**
   * A short run of `text`: most pieces are a key or a short value, and a loop costs less than a call into the
   * native writer, checking ASCII in the same pass (a char code above 0x7f spoils the text; its low byte is what
   * latin1 writes).
   */
  private copyShort(text: string, from: number, to: number): this {
    if (this.used + (to - from) > this.buf.length) this.grow(to - from);
    const buf = this.buf;
    let at = this.used;
    let bits = 0;
    for (let i = from; i < to; i++) {
      const c = text.charCodeAt(i);
      bits |= c;
      buf[at++] = c;
    }
    this.used = at;
    if (bits > 0x7f) this.ascii = false;
    return this;
  }

  /** A non-negative integer in decimal, zero-padded to `width` digits (no string made for it). */
  digits(n: number, width: number): this {
    if (!Number.isSafeInteger(n) || n < 0) {
      this.ascii = false; // not what this writes: the caller's other way does
      return this;
    }
    // Most numbers fit their width (instants, microseconds): no count of their digits then.
    let size = width;
    if (width < 1 || width >= POW10.length || n >= POW10[width]!) {
      size = 1;
      for (let x = n; x >= 10; x = Math.floor(x / 10)) size++;
      if (size < width) size = width;
    }
    if (this.used + size > this.buf.length) this.grow(size);
    const buf = this.buf;
    const start = this.used;
    let at = start + size;
    // Above 2^31 a digit costs a float division; below it, integer arithmetic (`| 0`) does.
    while (n > 0x7fffffff) {
      const q = Math.floor(n / 10);
      buf[--at] = 0x30 + (n - q * 10);
      n = q;
    }
    let m = n | 0;
    while (at > start) {
      const q = (m / 10) | 0;
      buf[--at] = 0x30 + (m - q * 10);
      m = q;
    }
    this.used = start + size;
    return this;
  }

  /** The text written since `start`; null when a piece was not ASCII. */
  text(): string | null {
    return this.ascii ? this.buf.toString("latin1", 0, this.used) : null;
  }

  /** The bytes written since `start`, lent by `lender` (byte-lender.ts); null when a piece was not ASCII. */
  lent(lender: ByteLender): Buffer | null {
    return this.ascii ? lender.lend(this.buf, 0, this.used) : null;
  }

  /**
   * The bytes written since `start`, handed over: this text goes on in a new
   * buffer of the same size, so the bytes are not copied (a packet's ~300 KB
   * copy was 4% of a reduction). Null when a piece was not ASCII.
   */
  take(): Buffer | null {
    if (!this.ascii) return null;
    const out = this.buf.subarray(0, this.used);
    this.buf = Buffer.allocUnsafe(this.buf.length);
    this.used = 0;
    return out;
  }

  private grow(extra: number): void {
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + extra));
    this.buf.copy(bigger, 0, 0, this.used);
    this.buf = bigger;
  }
}

/** Buffer's encoding-specific writer (what `write(s, at, "utf8")` calls after parsing its arguments). */
type Utf8Writable = Buffer & { utf8Write?: (s: string, offset: number) => number };
