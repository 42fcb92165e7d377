/**
 * The content digest's element hash (docs/architecture.md, "Change feed"):
 * sha256 over the fragment's UTF-8 bytes, followed by a NUL and the proposal
 * when there is one, as 32 latin1 characters. The expected value is computed
 * independently, by createHash over the text.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { partHash, Sum256 } from "../../src/core/part-hash.js";

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
    expect(partHash("x\ud800", "\udc00y\ud83d")).toBe(sha("x\ud800\u0000\udc00y\ud83d")); // lone surrogates: U+FFFD each
  });
});

describe("Sum256", () => {
  it("is the sum mod 2^256 of the hashes added less those subtracted, in hex as BigInt writes it", () => {
    const hash = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("latin1"));
    // Small and large values, so that leading zero words, carries and borrows all occur.
    const sparse = fc.tuple(fc.integer({ min: 0, max: 31 }), fc.integer({ min: 0, max: 255 })).map(([at, v]) => {
      const b = Buffer.alloc(32);
      b[at] = v;
      return b.toString("latin1");
    });
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.oneof(hash, sparse), fc.constantFrom<1 | -1>(1, -1)), { maxLength: 12 }), (steps) => {
        const sum = new Sum256();
        let expected = 0n;
        for (const [h, sign] of steps) {
          sum.add(h, sign);
          expected = BigInt.asUintN(256, expected + BigInt(sign) * BigInt("0x" + Buffer.from(h, "latin1").toString("hex")));
        }
        expect(sum.hex()).toBe(expected.toString(16));
      }),
      { numRuns: 2000 },
    );
  });

  it("is 0 when empty or cleared, and keeps no leading zeros", () => {
    const sum = new Sum256();
    expect(sum.hex()).toBe("0");
    const one = Buffer.alloc(32);
    one[31] = 1;
    sum.add(one.toString("latin1"), 1);
    expect(sum.hex()).toBe("1");
    sum.clear();
    expect(sum.hex()).toBe("0");
  });
});
