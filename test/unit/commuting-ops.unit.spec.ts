/**
 * planRuns refuses the ops of one apply that do not commute: a (part, field)
 * written twice, or a part deleted and also written or deleted again. Below
 * 65 ops it scans the ops before each one; past that it keeps a table
 * (field-table.ts). Both must refuse exactly what a plain set says.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PartOps, planRuns, type OpCode, type PartOp } from "../../src/fold/delta.js";
import { FieldTable } from "../../src/fold/field-table.js";
import { STORED_PARTS, type StoredPart } from "../../src/fold/stored-names.js";

/** What a plain set says: the first op that does not commute with those before it, or -1. */
function firstClash(ops: readonly PartOp[]): number {
  const written = new Set<string>();
  const deleted = new Set<StoredPart>();
  const touched = new Set<StoredPart>();
  for (let i = 0; i < ops.length; i++) {
    const { op, part, field } = ops[i]!;
    if (deleted.has(part)) return i;
    if (op === "DEL") {
      if (touched.has(part)) return i;
      deleted.add(part);
      continue;
    }
    touched.add(part);
    const key = `${part}\u0000${field}`;
    if (written.has(key)) return i;
    written.add(key);
  }
  return -1;
}

// Fields that share their first 8 and last 12 characters (the table's hash) and differ between: they collide.
const middle = fc.stringMatching(/^[a-c]{0,3}$/).map((m) => `head1234${m}tail56789012`);
const field = fc.oneof(fc.stringMatching(/^[a-z]{1,3}$/), middle, fc.string({ maxLength: 40 }));
const op = fc.record({
  op: fc.constantFrom<OpCode>("HSET", "HDEL", "ZADD", "ZREM", "RPUSH", "DEL"),
  part: fc.constantFrom(...STORED_PARTS),
  field,
  value: fc.constant(""),
});

describe("the ops of one apply that do not commute", () => {
  it("are refused exactly when a plain set finds a field written twice or a deleted part touched, below and past 64 ops", () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 0, maxLength: 200 }), (drawn) => {
        // DELs are rare in a plan: keep about one in ten.
        const ops = drawn.filter((o, i) => o.op !== "DEL" || i % 10 === 0);
        const clash = firstClash(ops);
        if (clash < 0) expect(() => planRuns(PartOps.from(ops))).not.toThrow();
        else expect(() => planRuns(PartOps.from(ops))).toThrow(/do not commute|write field/);
      }),
      { numRuns: 2_000 },
    );
  });

  it("past 64 ops, a field written by two parts commutes; one written twice by one part does not, however far apart", () => {
    const many = (n: number, part: StoredPart): PartOps =>
      PartOps.from( Array.from({ length: n }, (_, i) => ({ op: "HSET", part, field: `head1234${i}tail56789012`, value: "" })),
      );
    expect(() => planRuns(PartOps.from([...many(100, "d"), ...many(100, "s")]))).not.toThrow();
    expect(() => planRuns(PartOps.from([...many(100, "d"), { op: "HSET", part: "d", field: "head12340tail56789012", value: "" }]))).toThrow(/write field/);
    // A refused check leaves nothing behind: the next plan with the same fields passes.
    expect(() => planRuns(many(100, "d"))).not.toThrow();
  });
});

describe("FieldTable", () => {
  it("keeps no field past empty(), and grows for a check of more fields than it had room for", () => {
    const table = new FieldTable().start(3);
    expect(table.add("a", 1)).toBe(false);
    expect(table.add("a", 2)).toBe(false);
    expect(table.add("a", 1)).toBe(true);
    table.empty();
    expect(table.add("a", 1)).toBe(false);
    table.start(5_000);
    for (let i = 0; i < 5_000; i++) expect(table.add(`f${i}`, 1)).toBe(false);
    for (let i = 0; i < 5_000; i++) expect(table.add(`f${i}`, 1)).toBe(true);
  });

  it("serves any number of checks: each start frees the slots the last one took", { timeout: 20_000 }, () => {
    const table = new FieldTable();
    for (let check = 0; check < 1_000; check++) {
      table.start(100);
      for (let i = 0; i < 100; i++) expect(table.add(`c${check}f${i}`, 1)).toBe(false);
    }
    table.empty();
  });
});
