/** The writes that turn one stored PartsView into the next: only what changed. */
import { META_FIELDS, STORED_PARTS, type IdentityPart, type StoredPart } from "./stored-names.js";
import type { PartsChanges } from "../core/identity-parts.js";
import type { Fragment } from "../core/fragment.js";
import { FieldTable } from "./field-table.js";
import type { PartsView } from "../core/packet-parts.js";
import { MAX_PROJECTION_HISTORY } from "../core/projection-limits.js";

/** RPUSH appends to the offset index (part `x`) only. */
export type OpCode = "HSET" | "HDEL" | "ZADD" | "ZREM" | "DEL" | "RPUSH";

export interface PartOp {
  op: OpCode;
  part: StoredPart;
  field: string;
  /** An HSET's value ("" for the other opcodes): a subject's or a history entry's fragment may be its bytes. */
  value: Fragment;
}

const hset = (part: IdentityPart, field: string, value: Fragment): PartOp => ({ op: "HSET", part, field, value });
const hdel = (part: IdentityPart, field: string): PartOp => ({ op: "HDEL", part, field, value: "" });
const zadd = (part: IdentityPart, member: string): PartOp => ({ op: "ZADD", part, field: member, value: "" });
const zrem = (part: IdentityPart, member: string): PartOp => ({ op: "ZREM", part, field: member, value: "" });

/** Parts an identity drops entirely once it is past the delivery bound. */
const SEALED_PARTS: IdentityPart[] = ["d", "s", "si", "h", "hi", "hl", "c", "ci", "p"];

/** The packet's scalar parts before a change. */
export interface Scalars {
  rejected: string | null;
  deliveries: number;
  skeleton: string;
  accepted: number;
}

/** The writes of one flush: the changed scalars, and each changed subject, history entry and conflict. */
export function opsForChanges(prev: Scalars, next: PartsView, changes: PartsChanges, sealing: boolean): PartOp[] {
  const ops: PartOp[] = [];
  if (next.rejected !== prev.rejected) ops.push(next.rejected === null ? hdel("m", META_FIELDS.rejected) : hset("m", META_FIELDS.rejected, next.rejected));
  if (next.deliveries !== prev.deliveries) ops.push(hset("m", META_FIELDS.deliveries, String(next.deliveries)));
  if (sealing) {
    // Past 1024 deliveries the packet is a constant rejected packet: drop the rest.
    if (prev.skeleton !== "") ops.push(hdel("m", META_FIELDS.skeleton), hdel("m", META_FIELDS.accepted));
    for (const part of SEALED_PARTS) ops.push({ op: "DEL", part, field: "", value: "" });
    return ops;
  }
  if (next.skeleton !== prev.skeleton) ops.push(hset("m", META_FIELDS.skeleton, next.skeleton));
  if (next.accepted !== prev.accepted) ops.push(hset("m", META_FIELDS.accepted, String(next.accepted)));
  // Each subject's latest history member is read only past the history bound: kept exactly there, absent below.
  const latestNeeded = next.accepted > MAX_PROJECTION_HISTORY;
  const latestKept = latestNeeded && prev.accepted > MAX_PROJECTION_HISTORY;
  if (latestNeeded && !latestKept) for (const [id, part] of next.subjects) ops.push(hset("hl", id, part.latest));
  if (!latestNeeded && prev.accepted > MAX_PROJECTION_HISTORY) ops.push({ op: "DEL", part: "hl", field: "", value: "" });
  for (const { id, before: old, after: part, rewritten } of changes.subjects) {
    if (part === undefined) {
      if (old === undefined) continue;
      ops.push(hdel("s", id), zrem("si", old.member));
      if (latestKept) ops.push(hdel("hl", id));
      if (old.proposal !== null) ops.push(hdel("p", id));
      continue;
    }
    if (old === undefined || old.member !== part.member) {
      if (old !== undefined) ops.push(zrem("si", old.member));
      ops.push(zadd("si", part.member));
    }
    if (old === undefined || rewritten) ops.push(hset("s", id, part.fragment));
    if (latestKept && (old === undefined || old.latest !== part.latest)) ops.push(hset("hl", id, part.latest));
    if ((old?.proposal ?? null) !== part.proposal) ops.push(part.proposal === null ? hdel("p", id) : hset("p", id, part.proposal));
  }
  for (const { id, before: old, after: part, rewritten } of changes.history) {
    if (part === undefined) {
      if (old !== undefined) ops.push(hdel("h", id), zrem("hi", old.member));
      continue;
    }
    if (old === undefined || old.member !== part.member) {
      if (old !== undefined) ops.push(zrem("hi", old.member));
      ops.push(zadd("hi", part.member));
    }
    if (old === undefined || rewritten) ops.push(hset("h", id, part.fragment));
  }
  for (const { id, before: old, after: fragment, rewritten } of changes.conflicts) {
    if (fragment === undefined || !rewritten) continue; // a conflict never goes away
    if (old === undefined) ops.push(zadd("ci", id));
    ops.push(hset("c", id, fragment));
  }
  return ops;
}

/** Ops of one opcode on one part, applied as one command (mufold_apply_v2). */
export interface OpRun {
  op: OpCode;
  part: StoredPart;
  ops: PartOp[];
}

/** Ops per run at most: a run's operands go through Lua's `unpack`, which is bounded by its stack (~8,000). */
export const MAX_RUN = 1000;

const OP_CODES: readonly OpCode[] = ["HSET", "HDEL", "ZADD", "ZREM", "DEL", "RPUSH"];

/**
 * The runs of one apply, as numbers: run r is opcode `OP_CODES[slot[r] / STORED_PARTS.length]` on part
 * `STORED_PARTS[slot[r] % STORED_PARTS.length]`, and its ops are `ops[order[offset[r] + j]]` for j below
 * `size[r]`. Reused by every call: read it before the next.
 */
export interface RunPlan {
  runs: number;
  slot: Int32Array;
  size: Int32Array;
  offset: Int32Array;
  order: Int32Array;
}

const PLAN: RunPlan = { runs: 0, slot: new Int32Array(64), size: new Int32Array(64), offset: new Int32Array(64), order: new Int32Array(256) };

/**
 * The ops of one apply as runs of one opcode on one part, in the order each
 * run first appears. That reorders ops, which is only sound because the ops
 * of one plan commute: no (part, field) is written twice and a deleted part
 * gets no other op. Both are checked here, so a plan that broke them is
 * refused instead of stored wrong. A store that writes the runs as bytes
 * reads the plan itself (no list per run: src/adapters/redis/apply-command.ts).
 */
export function planRuns(ops: readonly PartOp[]): Readonly<RunPlan> {
  checkCommuting(ops);
  const counts = SLOT_COUNTS.fill(0);
  const slots = SLOT_OF.length < ops.length ? (SLOT_OF = new Int32Array(2 * ops.length)) : SLOT_OF;
  for (let i = 0; i < ops.length; i++) counts[(slots[i] = slotOf(ops[i]!))]!++;
  if (PLAN.order.length < ops.length) PLAN.order = new Int32Array(2 * ops.length);
  // At most one run per op: sized for that, the run lists never grow mid-plan.
  if (PLAN.slot.length < ops.length) for (const list of ["slot", "size", "offset"] as const) PLAN[list] = new Int32Array(2 * ops.length);
  const placed = SLOT_PLACED.fill(0);
  let runs = 0;
  let used = 0;
  for (let i = 0; i < ops.length; i++) {
    const slot = slots[i]!;
    const k = placed[slot]!++;
    if (k % MAX_RUN === 0) {
      const size = Math.min(MAX_RUN, counts[slot]! - k);
      PLAN.slot[runs] = slot;
      PLAN.size[runs] = size;
      PLAN.offset[runs] = used;
      OPEN_RUN[slot] = runs++;
      used += size;
    }
    PLAN.order[PLAN.offset[OPEN_RUN[slot]!]! + (k % MAX_RUN)] = i;
  }
  PLAN.runs = runs;
  return PLAN;
}

/** The ops of one apply as runs (planRuns), each with its list of ops: the in-memory store's form. */
export function opRuns(ops: readonly PartOp[]): OpRun[] {
  const plan = planRuns(ops);
  const runs: OpRun[] = [];
  for (let r = 0; r < plan.runs; r++) {
    const list = new Array<PartOp>(plan.size[r]!);
    for (let j = 0; j < list.length; j++) list[j] = ops[plan.order[plan.offset[r]! + j]!]!;
    runs.push({ op: runOp(plan, r), part: runPart(plan, r), ops: list });
  }
  return runs;
}

/** Run r's opcode. */
export const runOp = (plan: Readonly<RunPlan>, r: number): OpCode => OP_CODES[Math.floor(plan.slot[r]! / STORED_PARTS.length)]!;
/** Run r's part. */
export const runPart = (plan: Readonly<RunPlan>, r: number): StoredPart => STORED_PARTS[plan.slot[r]! % STORED_PARTS.length]!;

const slotOf = (op: PartOp): number => OP_CODES.indexOf(op.op) * STORED_PARTS.length + STORED_PARTS.indexOf(op.part);
const SLOT_COUNTS = new Int32Array(OP_CODES.length * STORED_PARTS.length);
const SLOT_PLACED = new Int32Array(OP_CODES.length * STORED_PARTS.length);
/** Each slot's run being filled (an index into the plan's runs). */
const OPEN_RUN = new Int32Array(OP_CODES.length * STORED_PARTS.length);
/** Each op's slot, computed once per plan. */
let SLOT_OF = new Int32Array(256);

/** Up to this many ops, a written field is looked for among the ops before it; past it, in a table (reused). */
const SCAN_LIMIT = 64;
const fields = new FieldTable();

/** Refuse ops that do not commute: a part deleted and also written or deleted again, or a (part, field) written twice. */
function checkCommuting(ops: readonly PartOp[]): void {
  let deleted = 0; // a bit per part
  let written = 0;
  const scan = ops.length <= SCAN_LIMIT;
  if (!scan) fields.start(ops.length);
  try {
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      const bit = 1 << STORED_PARTS.indexOf(op.part);
      if ((deleted & bit) !== 0 || (op.op === "DEL" && (written & bit) !== 0)) {
        throw new Error(`two ops of one apply do not commute: ${op.op} on part ${op.part}, which the apply also deletes or writes`);
      }
      if (op.op === "DEL") {
        deleted |= bit;
        continue;
      }
      written |= bit;
      if (scan ? writtenBefore(ops, i) : fields.add(op.field, bit)) throw new Error(`two ops of one apply write field ${JSON.stringify(op.field)} of part ${op.part}`);
    }
  } finally {
    if (!scan) fields.empty();
  }
}

function writtenBefore(ops: readonly PartOp[], i: number): boolean {
  const { part, field } = ops[i]!;
  for (let j = 0; j < i; j++) {
    const o = ops[j]!;
    if (o.part === part && o.field === field && o.op !== "DEL") return true;
  }
  return false;
}

