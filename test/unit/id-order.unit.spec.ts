import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sortedIds } from "../../src/core/id-order.js";

const HEX = "0123456789abcdef".split("");
const hex = (length: number) => fc.array(fc.constantFrom(...HEX), { minLength: length, maxLength: length }).map((d) => d.join(""));
/** Contract ids, often sharing their first ten hex digits (the number sortedIds packs) or more. */
const contractIds = fc
  .tuple(fc.array(hex(10), { minLength: 1, maxLength: 4 }), fc.array(fc.tuple(fc.nat(), hex(2), hex(52)), { maxLength: 300 }))
  .map(([leads, rest]) => rest.map(([i, mid, tail]) => `muo_${leads[i % leads.length]}${mid}${tail}`));

describe("sortedIds", () => {
  it("gives the engine's string sort for contract ids, ties in their leading digits included", () => {
    fc.assert(
      fc.property(contractIds, (ids) => {
        expect(sortedIds(ids)).toEqual([...ids].sort());
      }),
      { numRuns: 300 },
    );
  });

  it("gives the engine's string sort for ids of any other form, and past the packed index", () => {
    const mixed = ["muo_1" + "0".repeat(63), "muo_" + "f".repeat(64), "muo_" + "A".repeat(64), "muo_0", "obs-1", "", "muo_" + "0".repeat(64)];
    expect(sortedIds(mixed)).toEqual([...mixed].sort());
    // The contract's length and prefix, but not lowercase hex where the number is read: uppercase sorts after digits.
    const almost = ["muo_A" + "0".repeat(63), "muo_1" + "0".repeat(63), "muo_" + "0".repeat(64)];
    expect(sortedIds(almost)).toEqual(["muo_" + "0".repeat(64), "muo_1" + "0".repeat(63), "muo_A" + "0".repeat(63)]);
    fc.assert(
      fc.property(fc.array(fc.string(), { maxLength: 50 }), (ids) => {
        expect(sortedIds(ids)).toEqual([...ids].sort());
      }),
      { numRuns: 200 },
    );
    // More ids than the index bits hold: 9,000 contract ids, in reverse order.
    const many = Array.from({ length: 9000 }, (_, i) => `muo_${(8999 - i).toString(16).padStart(64, "0")}`);
    expect(sortedIds(many)).toEqual([...many].sort());
  });

  it("keeps a duplicate id twice, as the string sort does", () => {
    const id = `muo_${"ab".repeat(32)}`;
    const other = `muo_${"ab".repeat(31)}00`;
    expect(sortedIds([id, other, id])).toEqual([other, id, id]);
  });
});
