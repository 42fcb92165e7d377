/**
 * mufold_apply_v4's call (mufold_v1.lua, the fold's one write per identity batch), in two forms that are the
 * same command:
 * - its keys and arguments as lists, for a cluster's client, which routes by the keys;
 * - the RESP bytes of the whole FCALL for one node, written from the plan's pieces without making those lists:
 *   the eleven key strings, the list of operands and the program's pieces were ~3 KB of garbage an apply.
 * test/unit/apply-command.unit.spec.ts holds the bytes of the two equal.
 *
 * Arguments: [generation, partition, from] with a guard (mufold_apply_v3's check, the control key after the
 * stored keys), the expected version, the number of watermarks and each one's field and offset, the program
 * (one `<opcode><part>*<count>` per run of planRuns, space-separated), then the runs' operands in order (a
 * field and a value per HSET, a field or member per HDEL, ZADD, ZREM and RPUSH, none per DEL).
 */
import type { Fragment } from "../../core/fragment.js";
import { planRuns, runOp, type OpCode, type PartOps, type RunPlan } from "../../fold/delta.js";
import type { PositionGuard } from "../../fold/identity-store.js";
import { STORED_PARTS } from "../../fold/stored-names.js";
import { digitsOf, startCommand, type AsciiPiece } from "./encoded-command.js";
import type { LentBytes } from "./lent-commands.js";
import { STORED_KEY_TAILS, controlKey, storedKeyHead, storedKeys } from "./keys.js";

/** mufold_apply_v4's opcodes (mufold_v1.lua). */
const OPCODES: Record<OpCode, string> = { HSET: "H", HDEL: "D", ZADD: "Z", ZREM: "R", DEL: "X", RPUSH: "L" };

/** One apply: the identity, the version it expects, the watermarks it moves, its ops, and its guard (or null). */
export interface ApplyCall {
  generation: number;
  identity: string;
  expectedVersion: number;
  watermarks: ReadonlyMap<string, bigint>;
  ops: PartOps;
  guard: PositionGuard | null;
}

/** The call's keys and arguments (a cluster's path). */
export function applyKeysAndArguments(prefix: string, call: ApplyCall): { keys: string[]; args: (string | number | Buffer)[] } {
  const { guard, watermarks, ops } = call;
  const args: (string | number | Buffer)[] = guard !== null ? [String(call.generation), guard.partition, guard.from.toString()] : [];
  args.push(String(call.expectedVersion), watermarks.size);
  for (const [field, offset] of watermarks) args.push(field, offset.toString());
  const plan = planRuns(ops);
  let program = "";
  for (let r = 0; r < plan.runs; r++) program += `${r === 0 ? "" : " "}${OPCODES[runOp(plan, r)]}${(plan.slot[r]! % STORED_PARTS.length) + 1}*${plan.size[r]}`;
  args.push(program);
  forEachOperand(plan, ops, (operand) => args.push(operand));
  const keys = storedKeys(prefix, call.generation, call.identity);
  if (guard !== null) keys.push(controlKey(prefix));
  return { keys, args };
}

/** The FCALL of `fn` with the call's keys and arguments, as RESP bytes (one node's path), lent (lent-commands.ts). */
export function applyCommandBytes(fn: string, prefix: string, call: ApplyCall): LentBytes {
  const { guard, watermarks, ops, identity } = call;
  const plan = planRuns(ops);
  const keys = STORED_KEY_TAILS.length + (guard !== null ? 1 : 0);
  let operands = 0;
  for (let r = 0; r < plan.runs; r++) {
    const op = runOp(plan, r);
    operands += op === "HSET" ? 2 * plan.size[r]! : op === "DEL" ? 0 : plan.size[r]!;
  }
  const args = (guard !== null ? 3 : 0) + 2 + 2 * watermarks.size + 1 + operands;
  const out = startCommand(3 + keys + args).bulk("FCALL").bulk(fn).bulkInteger(keys);
  const names = namesOf(prefix, call.generation);
  for (const tail of STORED_KEY_TAILS) out.bulkOf3(names.head, identity, tail);
  if (guard !== null) out.bulk(names.control).bulkInteger(call.generation).bulk(guard.partition).bulk(guard.from.toString());
  out.bulkInteger(call.expectedVersion).bulkInteger(watermarks.size);
  for (const [field, offset] of watermarks) {
    out.bulk(field);
    if (offset >= 0n && offset <= MAX_SAFE) out.bulkInteger(Number(offset));
    else out.bulk(offset.toString());
  }
  programPlan = plan;
  out.bulkAscii(programBytes(plan), writeProgram);
  programPlan = null;
  forEachOperand(plan, ops, (operand) => out.bulkOf(operand));
  return out.endLent();
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** The keys' head and the control key of the last (prefix, generation) asked: a worker writes one generation at a time. */
let names = { prefix: "", generation: -1, head: "", control: "" };

function namesOf(prefix: string, generation: number): { head: string; control: string } {
  if (names.prefix !== prefix || names.generation !== generation) names = { prefix, generation, head: storedKeyHead(prefix, generation), control: controlKey(prefix) };
  return names;
}

/** Each run's operands, in the program's order. */
function forEachOperand(plan: Readonly<RunPlan>, ops: PartOps, put: (operand: Fragment) => void): void {
  const { fields, values } = ops;
  for (let r = 0; r < plan.runs; r++) {
    const op = runOp(plan, r);
    if (op === "DEL") continue;
    const from = plan.offset[r]!;
    for (let j = 0; j < plan.size[r]!; j++) {
      const i = plan.order[from + j]!;
      put(fields[i]!);
      if (op === "HSET") put(values[i]!);
    }
  }
}

/** The program's length in bytes: per run an opcode, the part's number, `*` and the count; a space between runs. */
function programBytes(plan: Readonly<RunPlan>): number {
  let bytes = plan.runs > 0 ? plan.runs - 1 : 0;
  for (let r = 0; r < plan.runs; r++) bytes += 2 + digitsOf((plan.slot[r]! % STORED_PARTS.length) + 1) + digitsOf(plan.size[r]!);
  return bytes;
}

/** The plan writeProgram writes (set around the one call that passes it, so no closure is made per apply). */
let programPlan: Readonly<RunPlan> | null = null;

function writeProgram(piece: AsciiPiece): void {
  const plan = programPlan!;
  for (let r = 0; r < plan.runs; r++) {
    if (r > 0) piece.ascii(" ");
    piece.ascii(OPCODES[runOp(plan, r)]);
    piece.integer((plan.slot[r]! % STORED_PARTS.length) + 1);
    piece.ascii("*");
    piece.integer(plan.size[r]!);
  }
}
