/**
 * mufold_apply's FCALL written from the plan's pieces (one node) is the same
 * command as its keys and arguments listed (a cluster), byte for byte, as
 * ioredis itself encodes the list.
 */
import fc from "fast-check";
import { Command } from "ioredis";
import { describe, expect, it } from "vitest";
import { applyCommandBytes, applyKeysAndArguments, type ApplyCall } from "../../src/adapters/redis/apply-command.js";
import { PartOps, type OpCode, type PartOp } from "../../src/fold/delta.js";
import { STORED_PARTS } from "../../src/fold/stored-names.js";
import { fragmentText } from "../../src/core/fragment.js";

const FN = "mufold_apply_v4";

function ioredisBytes(args: (string | number | Buffer)[]): Buffer {
  const written = new Command("FCALL", args).toWritable(undefined as never);
  return Buffer.isBuffer(written) ? written : Buffer.from(written, "utf8");
}

function listed(prefix: string, call: ApplyCall): Buffer {
  const { keys, args } = applyKeysAndArguments(prefix, call);
  return ioredisBytes([FN, keys.length, ...keys, ...args]);
}

/** The bulk strings of one RESP array. */
function bulks(bytes: Buffer): string[] {
  const text = bytes.toString("utf8");
  const out: string[] = [];
  let at = text.indexOf("\r\n") + 2;
  while (at < text.length) {
    const end = text.indexOf("\r\n", at);
    const length = Number(text.slice(at + 1, end));
    const value = Buffer.from(text.slice(end + 2)).subarray(0, length).toString("utf8");
    out.push(value);
    at = end + 2 + value.length + 2;
  }
  return out;
}

describe("the apply's FCALL", () => {
  it("given a small plan, then it lists the eleven keys, the watermarks, the program by runs and the operands by hand", () => {
    const ops: PartOp[] = [
      { op: "HSET", part: "s", field: "a", value: "1" },
      { op: "ZADD", part: "si", field: "m", value: "" },
      { op: "HSET", part: "s", field: "b", value: "2" },
      { op: "DEL", part: "hl", field: "", value: "" },
      { op: "RPUSH", part: "x", field: "e", value: "" },
    ];
    const call: ApplyCall = { generation: 3, identity: "mur_1", expectedVersion: 7, watermarks: new Map([["w:t:0", 41n]]), ops: PartOps.from(ops), guard: null };
    const bytes = applyCommandBytes(FN, "p", call).bytes;
    const keys = ["m", "d", "s", "si", "h", "hi", "hl", "c", "ci", "p", "x"].map((part) => `p:g3:{mur_1}:${part}`);
    // s is the third part, si the fourth, hl the seventh, x the eleventh.
    expect(bulks(bytes)).toEqual(["FCALL", FN, "11", ...keys, "7", "1", "w:t:0", "41", "H3*2 Z4*1 X7*1 L11*1", "a", "1", "b", "2", "m", "e"]);
    expect(bytes.equals(listed("p", call))).toBe(true);
  });

  it("given a guard, then the control key follows the stored keys and the guard leads the arguments", () => {
    const call: ApplyCall = { generation: 12, identity: "mur_2", expectedVersion: 0, watermarks: new Map(), ops: new PartOps(), guard: { partition: "t:4", from: 9_007_199_254_740_993n } };
    const all = bulks(applyCommandBytes(FN, "p", call).bytes);
    expect(all.slice(2, 4)).toEqual(["12", "p:g12:{mur_2}:m"]);
    expect(all.slice(14)).toEqual(["p:control", "12", "t:4", "9007199254740993", "0", "0", ""]);
    expect(applyCommandBytes(FN, "p", call).bytes.equals(listed("p", call))).toBe(true);
  });

  it("equals the listed call for any plan: every opcode and part, runs past 1,000 ops, offsets past 2^53, any text", () => {
    const text = fc.oneof(fc.string({ unit: "binary", maxLength: 12 }), fc.string({ maxLength: 12 }), fc.constant(""));
    const op = fc.record({
      op: fc.constantFrom<OpCode>("HSET", "HDEL", "ZADD", "ZREM", "RPUSH"),
      part: fc.constantFrom(...STORED_PARTS),
      // A fragment may be its bytes (fragment.ts): ASCII, of any length, written as they are.
      value: fc.oneof(text, fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)), maxLength: 300 }).map((s) => Buffer.from(s, "latin1"))),
    });
    const offset = fc.oneof(fc.bigInt({ min: 0n, max: 1n << 60n }), fc.constantFrom(0n, 9_007_199_254_740_991n, 9_007_199_254_740_992n));
    const guard = fc.option(fc.record({ partition: text, from: offset }), { nil: null });
    fc.assert(
      fc.property(text, text, fc.nat({ max: 99 }), fc.nat({ max: 1_000_000 }), fc.array(fc.tuple(text, offset), { maxLength: 3 }), fc.array(op, { maxLength: 40 }), guard, fc.boolean(), (prefix, identity, generation, version, marks, drawn, g, withDel) => {
        // Fields unique per part (the plan's ops commute), a DEL only of a part nothing else writes.
        const ops: PartOp[] = drawn.map((o, i) => ({ ...o, field: `${fragmentText(o.value)}#${i}` }));
        if (withDel) ops.push({ op: "DEL", part: "hl", field: "", value: "" });
        const plan = withDel ? ops.filter((o) => o.op === "DEL" || o.part !== "hl") : ops;
        const call: ApplyCall = { generation, identity, expectedVersion: version, watermarks: new Map(marks), ops: PartOps.from(plan), guard: g };
        expect(applyCommandBytes(FN, prefix, call).bytes.equals(listed(prefix, call))).toBe(true);
      }),
      { numRuns: 300 },
    );
    // Runs of one part past MAX_RUN are cut into several, interleaved with the other runs as they first appear.
    const many: PartOp[] = [];
    for (let i = 0; i < 2_500; i++) many.push({ op: "HSET", part: "h", field: `f${i}`, value: "v" }, { op: "ZADD", part: "hi", field: `m${i}`, value: "" });
    const call: ApplyCall = { generation: 1, identity: "mur_3", expectedVersion: 2, watermarks: new Map([["w:t:1", 5n]]), ops: PartOps.from(many), guard: null };
    const bytes = applyCommandBytes(FN, "p", call).bytes;
    expect(bulks(bytes)[18]).toBe("H5*1000 Z6*1000 H5*1000 Z6*1000 H5*500 Z6*500");
    expect(bytes.equals(listed("p", call))).toBe(true);
  });
});
