/** insertAt / removeAt edit a list exactly as splice does, without its returned array. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { insertAt, removeAt } from "../../src/core/list-edit.js";

describe("insertAt and removeAt", () => {
  it("given any list and any sequence of inserts and removes, then the list is what splice makes of it", () => {
    const edit = fc.oneof(fc.record({ insert: fc.nat(), item: fc.double({ noNaN: true }) }), fc.record({ remove: fc.nat() }));
    fc.assert(
      fc.property(fc.array(fc.double({ noNaN: true }), { maxLength: 20 }), fc.array(edit, { maxLength: 60 }), (start, edits) => {
        const mine = start.slice();
        const spliced = start.slice();
        for (const e of edits) {
          if ("insert" in e) {
            const at = e.insert % (mine.length + 1);
            insertAt(mine, at, e.item);
            spliced.splice(at, 0, e.item);
          } else if (mine.length > 0) {
            const at = e.remove % mine.length;
            removeAt(mine, at);
            spliced.splice(at, 1);
          }
          expect(mine).toEqual(spliced);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("given a list of three, then inserting at each end and in the middle, and removing them, leaves it as it was", () => {
    const list = ["a", "b", "c"];
    insertAt(list, 0, "first");
    insertAt(list, 4, "last");
    insertAt(list, 2, "mid");
    expect(list).toEqual(["first", "a", "mid", "b", "c", "last"]);
    removeAt(list, 2);
    removeAt(list, 4);
    removeAt(list, 0);
    expect(list).toEqual(["a", "b", "c"]);
  });
});
