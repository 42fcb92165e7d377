import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RepeatedStrings } from "../../src/core/repeated-strings.js";

describe("RepeatedStrings", () => {
  it("gives every range its latin1 text, whichever ranges took the slots before (more values than slots)", () => {
    const table = new RepeatedStrings(8);
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 12 }), { minLength: 1, maxLength: 60 }), fc.nat({ max: 3 }), (values, pad) => {
        for (const v of values) {
          // A range inside a larger buffer, as a record's field is.
          const bytes = Buffer.concat([Buffer.alloc(pad, 0x7b), Buffer.from(v), Buffer.alloc(pad, 0x7d)]);
          expect(table.of(bytes, pad, pad + v.length)).toBe(Buffer.from(v).toString("latin1"));
        }
      }),
      { numRuns: 500 },
    );
  });

  it("refuses a size that is not a power of two", () => {
    expect(() => new RepeatedStrings(6)).toThrow(/power of two/);
    expect(() => new RepeatedStrings(0)).toThrow(/power of two/);
  });
});
