/** The writes that turn one stored PartsView into the next: only what changed. */
import { META_FIELDS, STORED_PARTS, type IdentityPart, type StoredPart } from "./stored-names.js";
import type { PartsChanges } from "../core/identity-parts.js";
import { FieldTable } from "./field-table.js";
import { PartOps, SLOTS, opOfSlot, partOfSlot, type OpCode, type PartOp } from "./part-ops.js";
import type { PartsView } from "../core/packet-parts.js";
import { MAX_PROJECTION_HISTORY } from "../core/projection-limits.js";

export { PartOps, type OpCode, type PartOp } from "./part-ops.js";

/** Parts an identity drops entirely once it is past the delivery bound. */
const SEALED_PARTS: IdentityPart[] = ["d", "s", "si", "h", "hi", "hl", "c", "ci", "p"];

/** The packet's scalar parts before a change. */
export interface Scalars {
  rejected: string | null;
  deliveries: number;
  skeleton: string;
  accepted: number;
}

/**
 * The writes of one flush: the changed scalars, and each changed subject, history entry and conflict. `more`: the
 * ops the caller will add (room is made for them too).
 */
export function opsForChanges(prev: Scalars, next: PartsView, changes: PartsChanges, sealing: boolean, more = 0): PartOps {
  // Room for the usual: the scalars, three ops a subject (ZADD, HSET, a proposal's), two a history entry and two
  // a conflict. An unusual flush (a subject removed, the history bound crossed) grows the columns.
  const ops = new PartOps(4 + 3 * changes.subjects.length + 2 * changes.history.length + 2 * changes.conflicts.length + more);
  if (next.rejected !== prev.rejected) {
    if (next.rejected === null) ops.push("HDEL", "m", META_FIELDS.rejected);
    else ops.push("HSET", "m", META_FIELDS.rejected, next.rejected);
  }
  if (next.deliveries !== prev.deliveries) ops.push("HSET", "m", META_FIELDS.deliveries, String(next.deliveries));
  if (sealing) {
    // Past 1024 deliveries the packet is a constant rejected packet: drop the rest.
    if (prev.skeleton !== "") ops.push("HDEL", "m", META_FIELDS.skeleton).push("HDEL", "m", META_FIELDS.accepted);
    for (const part of SEALED_PARTS) ops.push("DEL", part, "");
    return ops;
  }
  if (next.skeleton !== prev.skeleton) ops.push("HSET", "m", META_FIELDS.skeleton, next.skeleton);
  if (next.accepted !== prev.accepted) ops.push("HSET", "m", META_FIELDS.accepted, String(next.accepted));
  // Each subject's latest history member is read only past the history bound: kept exactly there, absent below.
  const latestNeeded = next.accepted > MAX_PROJECTION_HISTORY;
  const latestKept = latestNeeded && prev.accepted > MAX_PROJECTION_HISTORY;
  if (latestNeeded && !latestKept) for (const [id, part] of next.subjects) ops.push("HSET", "hl", id, part.latest);
  if (!latestNeeded && prev.accepted > MAX_PROJECTION_HISTORY) ops.push("DEL", "hl", "");
  for (const { id, before: old, after: part, rewritten } of changes.subjects) {
    if (part === undefined) {
      if (old === undefined) continue;
      ops.push("HDEL", "s", id).push("ZREM", "si", old.member);
      if (latestKept) ops.push("HDEL", "hl", id);
      if (old.proposal !== null) ops.push("HDEL", "p", id);
      continue;
    }
    // A subject's member is fixed by its level, key and id, and a change is of one id: written when it first appears.
    if (old === undefined) ops.push("ZADD", "si", part.member);
    if (old === undefined || rewritten) ops.push("HSET", "s", id, part.fragment);
    if (latestKept && (old === undefined || old.latest !== part.latest)) ops.push("HSET", "hl", id, part.latest);
    if ((old?.proposal ?? null) !== part.proposal) {
      if (part.proposal === null) ops.push("HDEL", "p", id);
      else ops.push("HSET", "p", id, part.proposal);
    }
  }
  for (const { id, before: old, after: part, rewritten } of changes.history) {
    if (part === undefined) {
      if (old !== undefined) ops.push("HDEL", "h", id).push("ZREM", "hi", old.member);
      continue;
    }
    // (a history part makes its member when read: read once here)
    const member = part.member;
    if (old === undefined) ops.push("ZADD", "hi", member);
    else {
      const oldMember = old.member;
      if (oldMember !== member) ops.push("ZREM", "hi", oldMember).push("ZADD", "hi", member);
    }
    if (old === undefined || rewritten) ops.push("HSET", "h", id, part.fragment);
  }
  for (const { id, before: old, after: fragment, rewritten } of changes.conflicts) {
    if (fragment === undefined || !rewritten) continue; // a conflict never goes away
    if (old === undefined) ops.push("ZADD", "ci", id);
    ops.push("HSET", "c", id, fragment);
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

/**
 * The runs of one apply, as numbers: run r is the op slot `slot[r]` (part-ops.ts: an opcode on a part), and its
 * ops are `order[offset[r] + j]` for j below `size[r]`. Reused by every call: read it before the next.
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
export function planRuns(ops: PartOps): Readonly<RunPlan> {
  checkCommuting(ops);
  const n = ops.length;
  const counts = SLOT_COUNTS.fill(0);
  for (let i = 0; i < n; i++) counts[ops.slot(i)]!++;
  if (PLAN.order.length < n) PLAN.order = new Int32Array(2 * n);
  // At most one run per op: sized for that, the run lists never grow mid-plan.
  if (PLAN.slot.length < n) for (const list of ["slot", "size", "offset"] as const) PLAN[list] = new Int32Array(2 * n);
  const placed = SLOT_PLACED.fill(0);
  let runs = 0;
  let used = 0;
  for (let i = 0; i < n; i++) {
    const slot = ops.slot(i);
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

/** Ops of one opcode on one part, applied as one command (mufold_apply_v2). */
export interface OpRun {
  op: OpCode;
  part: StoredPart;
  ops: PartOp[];
}

/** The ops of one apply as runs (planRuns), each with its list of op objects: the in-memory store's form. */
export function opRuns(ops: PartOps): OpRun[] {
  const plan = planRuns(ops);
  const runs: OpRun[] = [];
  for (let r = 0; r < plan.runs; r++) {
    const list = new Array<PartOp>(plan.size[r]!);
    for (let j = 0; j < list.length; j++) list[j] = ops.get(plan.order[plan.offset[r]! + j]!);
    runs.push({ op: runOp(plan, r), part: runPart(plan, r), ops: list });
  }
  return runs;
}

/** Run r's opcode. */
export const runOp = (plan: Readonly<RunPlan>, r: number): OpCode => opOfSlot(plan.slot[r]!);
/** Run r's part. */
export const runPart = (plan: Readonly<RunPlan>, r: number): StoredPart => partOfSlot(plan.slot[r]!);

const SLOT_COUNTS = new Int32Array(SLOTS);
const SLOT_PLACED = new Int32Array(SLOTS);
/** Each slot's run being filled (an index into the plan's runs). */
const OPEN_RUN = new Int32Array(SLOTS);

/** Up to this many ops, a written field is looked for among the ops before it; past it, in a table (reused). */
const SCAN_LIMIT = 64;
const fields = new FieldTable();
/** Each slot's part as a bit, and whether the slot is a DEL. */
const PART_BIT = Int32Array.from({ length: SLOTS }, (_, slot) => 1 << STORED_PARTS.indexOf(partOfSlot(slot)));
const IS_DEL = Uint8Array.from({ length: SLOTS }, (_, slot) => (opOfSlot(slot) === "DEL" ? 1 : 0));

/** Refuse ops that do not commute: a part deleted and also written or deleted again, or a (part, field) written twice. */
function checkCommuting(ops: PartOps): void {
  let deleted = 0; // a bit per part
  let written = 0;
  const n = ops.length;
  const scan = n <= SCAN_LIMIT;
  if (!scan) fields.start(n);
  try {
    for (let i = 0; i < n; i++) {
      const slot = ops.slot(i);
      const bit = PART_BIT[slot]!;
      const del = IS_DEL[slot] === 1;
      if ((deleted & bit) !== 0 || (del && (written & bit) !== 0)) {
        throw new Error(`two ops of one apply do not commute: ${ops.op(i)} on part ${ops.part(i)}, which the apply also deletes or writes`);
      }
      if (del) {
        deleted |= bit;
        continue;
      }
      written |= bit;
      if (scan ? writtenBefore(ops, i, bit) : fields.add(ops.fields[i]!, bit)) throw new Error(`two ops of one apply write field ${JSON.stringify(ops.fields[i])} of part ${ops.part(i)}`);
    }
  } finally {
    if (!scan) fields.empty();
  }
}

/** Whether an op before i, not a DEL, wrote op i's field of its part (`bit`). */
function writtenBefore(ops: PartOps, i: number, bit: number): boolean {
  const field = ops.fields[i]!;
  for (let j = 0; j < i; j++) {
    const slot = ops.slot(j);
    if (PART_BIT[slot] === bit && IS_DEL[slot] === 0 && ops.fields[j] === field) return true;
  }
  return false;
}
