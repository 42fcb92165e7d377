/**
 * The content digest's element hash (docs/architecture.md, "Change feed"):
 * sha256 over each piece's UTF-8 bytes followed by a NUL, as 32 latin1
 * characters. The expected value is computed independently, by createHash
 * over the joined text.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { partHash } from "../../src/core/part-hash.js";

const expected = (...pieces: string[]) => createHash("sha256").update(pieces.map((p) => p + "\u0000").join(""), "utf8").digest("binary");

describe("partHash", () => {
  it("is sha256 of the pieces, each followed by NUL, for any text (non-ASCII, astral, lone surrogates)", () => {
    const text = fc.string({ unit: "binary", maxLength: 300 });
    fc.assert(
      fc.property(fc.constantFrom("s", "h", "c"), text, text, fc.option(text, { nil: undefined }), (tag, a, b, c) => {
        const got = c === undefined ? partHash(tag, a, b) : partHash(tag, a, b, c);
        expect(got).toBe(c === undefined ? expected(tag, a, b) : expected(tag, a, b, c));
        expect(got).toHaveLength(32);
      }),
      { numRuns: 2000 },
    );
  });

  it("long texts, and short ones after them", () => {
    const long = "\u00e9\u{1F600}x".repeat(30_000); // 210,000 UTF-8 bytes
    expect(partHash("h", long, "tail")).toBe(expected("h", long, "tail"));
    expect(partHash("h", "a", "b")).toBe(expected("h", "a", "b"));
    expect(partHash("h", "c", "d")).toBe(expected("h", "c", "d"));
    expect(partHash("s", long, long, long)).toBe(expected("s", long, long, long));
    expect(partHash("h", "a", "b")).toBe(expected("h", "a", "b"));
  });
});
