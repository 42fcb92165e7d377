/**
 * Text made of ASCII pieces, written into one reused buffer and read back as
 * one flat string: a concatenation of many pieces is a tree of string objects
 * (then flattened into a copy), about twice the bytes of the text it makes.
 * A piece that is not ASCII spoils the text (`text()` is then null), and the
 * caller writes it the other way.
 */
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
    if (this.ascii && !isAscii(piece)) this.ascii = false;
    if (this.used + piece.length > this.buf.length) this.grow(piece.length);
    const buf = this.buf as LatinWritable;
    this.used += buf.latin1Write !== undefined ? buf.latin1Write(piece, this.used) : buf.write(piece, this.used, "latin1");
    return this;
  }

  /** The text written since `start`; null when a piece was not ASCII. */
  text(): string | null {
    return this.ascii ? this.buf.toString("latin1", 0, this.used) : null;
  }

  private grow(extra: number): void {
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + extra));
    this.buf.copy(bigger, 0, 0, this.used);
    this.buf = bigger;
  }
}

/** Whether every character of `s` is ASCII. */
function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** Buffer's encoding-specific writer (what `write(s, at, "latin1")` calls after parsing its arguments). */
type LatinWritable = Buffer & { latin1Write?: (s: string, offset: number) => number };
