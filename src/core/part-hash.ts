/**
 * The content digest's arithmetic (IdentityParts.digest): one sha256 per
 * stored part, summed mod 2^256, so a change adds and subtracts the hashes of
 * the parts it changed instead of hashing the whole packet again.
 */
import { hash } from "node:crypto";
import { AsciiDigest, HEX_DIGITS } from "./digest.js";
import type { Fragment } from "./fragment.js";

/**
 * The element hash of one stored part: sha256 of its fragment (followed by
 * "\0" and its proposal when a subject has one), as a 32-character latin1
 * string: a cached model keeps one per part, and a short string costs a
 * tenth of a Buffer. A fragment is JSON, which holds no raw NUL, and names
 * what orders it (a history entry its created_at and id, a subject its id,
 * a conflict its id), so its bytes alone say which part it is; hashing them
 * as they are, without a tag and member joined in front, spares a copy of
 * every fragment (1.2 KB a record in the fold, bench/engine.bench.ts).
 */
export function partHash(fragment: Fragment, proposal: string | null = null): string {
  if (proposal === null) return hash("sha256", fragment, "binary");
  // Written into one buffer: joined, the fragment and its proposal were flattened into a copy (~0.6 KB a subject).
  const into = joined.start();
  if (typeof fragment === "string") into.putText(fragment);
  else into.bytes(fragment, 0, fragment.length);
  return into.char(0).putText(proposal).binary();
}

const joined = new AsciiDigest();

/** A sum mod 2^256 of 32-byte big-endian numbers, in sixteen 16-bit words (most significant first). */
export class Sum256 {
  private readonly words: number[] = new Array<number>(16).fill(0);

  add(h: string, sign: 1 | -1): void {
    let carry = 0;
    for (let i = 15; i >= 0; i--) {
      const v = this.words[i]! + sign * ((h.charCodeAt(2 * i) << 8) | h.charCodeAt(2 * i + 1)) + carry;
      carry = Math.floor(v / 0x1_0000);
      this.words[i] = v - carry * 0x1_0000;
    }
  }

  clear(): void {
    this.words.fill(0);
  }

  /**
   * Lowercase hex without leading zeros ("0" for zero), as BigInt's toString(16): written into one buffer
   * (a flush asks once, for the digest; sixteen padded pieces and a regexp were ~1.2 µs of it).
   */
  hex(): string {
    const out = HEX_OUT;
    let at = 0;
    for (let i = 0; i < 16; i++) {
      const w = this.words[i]!;
      out[at++] = HEX_DIGITS[w >>> 12]!;
      out[at++] = HEX_DIGITS[(w >>> 8) & 0xf]!;
      out[at++] = HEX_DIGITS[(w >>> 4) & 0xf]!;
      out[at++] = HEX_DIGITS[w & 0xf]!;
    }
    let start = 0;
    while (start < 63 && out[start] === 0x30) start++;
    return out.toString("latin1", start, 64);
  }
}

const HEX_OUT = Buffer.alloc(64);
