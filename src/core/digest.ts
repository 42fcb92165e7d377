/** sha256 over UTF-8 text; hashing is computation, not IO, so the core may use node:crypto. */
import * as crypto from "node:crypto";
import { canonicalJson } from "./canonical-json.js";
import { latin1 } from "./repeated-strings.js";
import type { PyValue } from "./pyvalue.js";

// crypto.hash (Node >= 20.12) skips the Hash object per call: the reducer hashes twice per delivery.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: "hex") => string }).hash;

export const sha256Hex: (text: string) => string = oneShot
  ? (text) => oneShot("sha256", text, "hex")
  : (text) => crypto.createHash("sha256").update(text, "utf8").digest("hex");

/** The strong entity tag of exact bytes, `"<sha256 hex>"`: what HTTP and the library both hand out. */
export function etagOf(body: Uint8Array | string): string {
  return `"${crypto.createHash("sha256").update(body).digest("hex")}"`;
}

/** `prefix + sha256(canonical_json(value))`, the shape of every id in the contract. */
export function canonicalDigest(value: PyValue, prefix: string): string {
  return prefix + sha256Hex(canonicalJson(value));
}

/**
 * sha256 of text given in pieces, written straight into a scratch buffer: no
 * concatenated string to flatten and re-encode (and collect) per hash. `put`
 * takes ASCII (its callers guarantee it: latin1 bytes are the UTF-8 bytes),
 * `putText` any text.
 */
export class AsciiDigest {
  private buf = Buffer.allocUnsafe(4096);
  private used = 0;
  /** Views of the first n bytes, by n (texts of a kind have few lengths): no view object per hash. */
  private views: Buffer[] = [];

  start(): this {
    this.used = 0;
    return this;
  }

  put(piece: string): this {
    if (this.used + piece.length > this.buf.length) this.grow(piece.length);
    const buf = this.buf as LatinWritable;
    this.used += buf.latin1Write !== undefined ? buf.latin1Write(piece, this.used) : buf.write(piece, this.used, "latin1");
    return this;
  }

  /** Any text, as UTF-8 (lone surrogates as U+FFFD, as hashing a string does): up to 3 bytes a UTF-16 unit. */
  putText(piece: string): this {
    if (this.used + 3 * piece.length > this.buf.length) this.grow(3 * piece.length);
    const buf = this.buf as Utf8Writable;
    this.used += buf.utf8Write !== undefined ? buf.utf8Write(piece, this.used) : buf.write(piece, this.used, "utf8");
    return this;
  }

  /**
   * `src[from..to)`: short runs by a loop, longer ones by Buffer's copy (no view made on Node 22 and 24; a view,
   * `subarray`, cost ~100 bytes of young garbage each).
   */
  bytes(src: Buffer, from: number, to: number): this {
    const n = to - from;
    if (this.used + n > this.buf.length) this.grow(n);
    if (n > 64) src.copy(this.buf, this.used, from, to);
    else for (let i = 0; i < n; i++) this.buf[this.used + i] = src[from + i]!;
    this.used += n;
    return this;
  }

  /** One ASCII character, by code. */
  char(code: number): this {
    if (this.used === this.buf.length) this.grow(1);
    this.buf[this.used++] = code;
    return this;
  }

  hex(): string {
    return this.digest("hex");
  }

  /** The digest as 32 latin1 characters (part-hash.ts). */
  binary(): string {
    return this.digest("binary");
  }

  /**
   * `prefix` and the digest in lowercase hex, as one flat string: an id. Concatenated, an id was a tree of the
   * two that every write of it into a buffer flattened into a third string.
   */
  prefixedHex(prefix: string): string {
    const raw = this.digest("binary");
    const out = ID_TEXT.length < prefix.length + 64 ? (ID_TEXT = Buffer.allocUnsafe(prefix.length + 64)) : ID_TEXT;
    let at = 0;
    for (let i = 0; i < prefix.length; i++) out[at++] = prefix.charCodeAt(i);
    for (let i = 0; i < 32; i++) {
      const b = raw.charCodeAt(i);
      out[at++] = HEX_DIGITS[b >> 4]!;
      out[at++] = HEX_DIGITS[b & 15]!;
    }
    return latin1(out, 0, at);
  }

  /** Whether the digest in lowercase hex is the ASCII at `bytes[at..at + 64)` (no string of the hex is made). */
  hexIsAt(bytes: Uint8Array, at: number): boolean {
    const raw = this.digest("binary");
    for (let i = 0; i < 32; i++) {
      const b = raw.charCodeAt(i);
      if (bytes[at + 2 * i] !== HEX_DIGITS[b >> 4] || bytes[at + 2 * i + 1] !== HEX_DIGITS[b & 15]) return false;
    }
    return true;
  }

  private digest(encoding: "hex" | "binary"): string {
    const bytes = this.view(this.used);
    return oneShotBytes ? oneShotBytes("sha256", bytes, encoding) : crypto.createHash("sha256").update(bytes).digest(encoding);
  }

  private view(n: number): Buffer {
    return (this.views[n] ??= this.buf.subarray(0, n));
  }

  private grow(extra: number): void {
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + extra));
    this.buf.copy(bigger, 0, 0, this.used);
    this.buf = bigger;
    this.views = [];
  }
}

/** Lowercase hex digits, by value (ASCII codes). */
export const HEX_DIGITS = Uint8Array.from("0123456789abcdef", (c) => c.charCodeAt(0));
let ID_TEXT = Buffer.allocUnsafe(128);

/** Buffer's encoding-specific writers (what `write(s, at, encoding)` calls after parsing its arguments). */
type LatinWritable = Buffer & { latin1Write?: (s: string, offset: number) => number };
type Utf8Writable = Buffer & { utf8Write?: (s: string, offset: number) => number };

const oneShotBytes = (crypto as { hash?: (algorithm: string, data: Uint8Array, encoding: "hex" | "binary") => string }).hash;
