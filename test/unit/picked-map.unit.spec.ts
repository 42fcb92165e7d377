/**
 * PickedMap (src/core/picked-map.ts), the read-only view an identity's parts give of their history entries and
 * subjects: every read equals a Map built from the source's entries that the pick takes, and follows the source.
 */
import { describe, expect, it } from "vitest";
import { PickedMap } from "../../src/core/picked-map.js";

/** Entries whose value is even, halved: built here by filtering, not by the view. */
function expectedOf(source: Map<string, number>): Map<string, number> {
  return new Map([...source].filter(([, v]) => v % 2 === 0).map(([k, v]) => [k, v / 2]));
}

describe("a picked map", () => {
  const source = new Map<string, number>([["a", 2], ["b", 3], ["c", 8], ["d", 5]]);
  const view = new PickedMap(source, (v: number) => (v % 2 === 0 ? v / 2 : undefined), () => expectedOf(source).size);

  it("reads as a Map of the picked entries, in the source's order", () => {
    const expected = expectedOf(source);
    expect(view.size).toBe(2);
    expect([...view]).toEqual([...expected]);
    expect([...view.entries()]).toEqual([["a", 1], ["c", 4]]);
    expect([...view.keys()]).toEqual(["a", "c"]);
    expect([...view.values()]).toEqual([1, 4]);
    expect(["a", "b", "c", "x"].map((k) => [view.get(k), view.has(k)])).toEqual([[1, true], [undefined, false], [4, true], [undefined, false]]);
    const seen: [string, number, unknown][] = [];
    view.forEach(function (this: unknown, v, k, m) {
      seen.push([k, v, m === view ? this : null]);
    }, "self");
    expect(seen).toEqual([["a", 1, "self"], ["c", 4, "self"]]);
  });

  it("follows its source: no copy is kept", () => {
    source.set("b", 6);
    source.delete("a");
    expect([...view]).toEqual([...expectedOf(source)]);
    expect(view.get("b")).toBe(3);
    expect(view.has("a")).toBe(false);
  });
});
