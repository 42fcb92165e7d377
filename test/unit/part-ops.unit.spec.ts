import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OP_CODES, PartOps, type PartOp } from "../../src/fold/part-ops.js";
import { STORED_PARTS } from "../../src/fold/stored-names.js";

describe("PartOps (the ops of one apply, as columns)", () => {
  it("gives back every op it was given, in order, as an object and column by column", () => {
    const op = fc.record({
      op: fc.constantFrom(...OP_CODES),
      part: fc.constantFrom(...STORED_PARTS),
      field: fc.string({ maxLength: 8 }),
      value: fc.oneof(fc.string({ maxLength: 8 }), fc.uint8Array({ maxLength: 8 }).map((b) => Buffer.from(b))),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 100, size: "max" }), (list: PartOp[]) => {
        const ops = PartOps.from(list);
        expect(ops.length).toBe(list.length);
        expect(ops.toArray()).toEqual(list);
        expect([...ops]).toEqual(list);
        list.forEach((o, i) => {
          expect([ops.op(i), ops.part(i), ops.fields[i], ops.values[i]]).toEqual([o.op, o.part, o.field, o.value]);
        });
        expect(PartOps.from(ops)).toBe(ops);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses an op or a part it does not know", () => {
    expect(() => PartOps.from([{ op: "SET" as never, part: "m", field: "f", value: "" }])).toThrow(/unknown op SET/);
    expect(() => PartOps.from([{ op: "HSET", part: "q" as never, field: "f", value: "" }])).toThrow(/unknown part q/);
  });
});
