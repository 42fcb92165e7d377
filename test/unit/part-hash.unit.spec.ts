/**
 * The content digest's element hash (docs/architecture.md, "Change feed"):
 * sha256 over the fragment's UTF-8 bytes, followed by a NUL and the proposal
 * when there is one, as 32 latin1 characters. The expected value is computed
 * independently, by createHash over the text.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { partHash } from "../../src/core/part-hash.js";

const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("binary");

describe("partHash", () => {
  it("is sha256 of the fragment, or of fragment NUL proposal, for any text (non-ASCII, astral, lone surrogates)", () => {
    const text = fc.string({ unit: "binary", maxLength: 300 });
    fc.assert(
      fc.property(text, fc.option(text, { nil: null }), (fragment, proposal) => {
        const got = proposal === null ? partHash(fragment) : partHash(fragment, proposal);
        expect(got).toBe(sha(proposal === null ? fragment : fragment + "\u0000" + proposal));
        expect(got).toHaveLength(32);
      }),
      { numRuns: 2000 },
    );
  });

  it("a proposal, even an empty one, changes the hash", () => {
    expect(partHash("{}", "")).not.toBe(partHash("{}"));
    expect(partHash("{}", "")).toBe(sha("{}\u0000"));
  });

  it("long texts, and short ones after them", () => {
    const long = "\u00e9\u{1F600}x".repeat(30_000); // 210,000 UTF-8 bytes
    expect(partHash(long, "tail")).toBe(sha(long + "\u0000tail"));
    expect(partHash("a")).toBe(sha("a"));
    expect(partHash("c", "d")).toBe(sha("c\u0000d"));
    expect(partHash(long, long)).toBe(sha(long + "\u0000" + long));
    expect(partHash("a")).toBe(sha("a"));
  });
});
