/**
 * Coverage: how far the live generation's marks (what it has folded) reach
 * against what the fold group committed and the log's end, per partition.
 * One computation for `replay --verify` (what the rebuild must hold, and how
 * far the live side is behind it) and `mufold status` (behind_log, lag and the
 * readiness verdict). Pure: offsets in, numbers and verdicts out.
 *
 * The group's committed offsets are progress only; the marks say what is
 * folded. A mark behind the committed offset means records the group counts
 * as done that Redis does not hold: Redis went back in time (a restore, a
 * lagging replica promoted) or the group's offsets were moved past it.
 */

/** One partition's three positions, as read (consumers/verify/coverage-source.ts). */
export interface PartitionOffsets {
  topic: string;
  partition: number;
  /** The live generation's mark (next offset folded); null when it has none for the partition. */
  mark: bigint | null;
  /** The fold group's committed offset; null when it has none. */
  committed: bigint | null;
  /** The log's end offset (high watermark). */
  end: bigint;
}

const orZero = (v: bigint | null): bigint => v ?? 0n;
const maxOf = (...values: bigint[]): bigint => values.reduce((a, b) => (b > a ? b : a), 0n);
const minOf = (a: bigint, b: bigint): bigint => (a < b ? a : b);
// Offsets are int64 in Kafka but far below 2^53 in any log mufold folds: numbers keep the JSON plain.
const num = (v: bigint): number => Number(v);
const numOrNull = (v: bigint | null): number | null => (v === null ? null : Number(v));

/** Marks of the control hash (`<topic>:<partition>` → next offset, as generationFields returns them) of one topic. */
export function marksOfTopic(fields: ReadonlyMap<string, string>, topic: string): Map<number, bigint> {
  const out = new Map<number, bigint>();
  for (const [field, next] of fields) {
    const at = field.lastIndexOf(":");
    if (field.slice(0, at) === topic) out.set(Number(field.slice(at + 1)), BigInt(next));
  }
  return out;
}

/** Records the group has committed that the live generation has not folded (0 when the mark is at or past it). */
export function behindCommitted(p: PartitionOffsets): bigint {
  return maxOf(0n, orZero(p.committed) - orZero(p.mark));
}

/** Records of the log the live generation has not folded yet. */
export function lagOf(p: PartitionOffsets): bigint {
  return maxOf(0n, p.end - orZero(p.mark));
}

/**
 * What a verify rebuilds of a partition: everything the live generation folded
 * and everything the group committed — with --to-end also the log's end
 * captured when the replay started (`endFloor`) — but no further than the log
 * reaches now (a log shorter than that is reported as truncated, not waited for).
 */
export function verifyTarget(p: PartitionOffsets, endFloor: bigint | null): bigint {
  return minOf(maxOf(orZero(p.mark), orZero(p.committed), endFloor ?? 0n), p.end);
}

/** What a verify held the live generation to: the group's committed offsets, or (--to-end) the log's end. */
export type CoverageReference = "committed" | "end";

export interface PartitionCoverage {
  topic: string;
  partition: number;
  mark: number | null;
  committed: number | null;
  end: number;
  /** The offset the rebuild read to. */
  target: number;
  /** Offsets between the live mark and the target: records the rebuild folded that the live generation has not. */
  behind_log: number;
}

export interface VerifyCoverage {
  reference: CoverageReference;
  partitions: PartitionCoverage[];
  /** The sum over the partitions. */
  behind_log: number;
}

/** Each partition against the target the rebuild read to (`targets`; a partition without one is held to `verifyTarget`). */
export function verifyCoverage(partitions: readonly PartitionOffsets[], targets: ReadonlyMap<number, bigint>, reference: CoverageReference): VerifyCoverage {
  const rows = partitions.map((p) => {
    const target = targets.get(p.partition) ?? verifyTarget(p, null);
    const behind = maxOf(0n, target - orZero(p.mark));
    return { topic: p.topic, partition: p.partition, mark: numOrNull(p.mark), committed: numOrNull(p.committed), end: num(p.end), target: num(target), behind_log: num(behind) };
  });
  return { reference, partitions: rows, behind_log: rows.reduce((a, r) => a + r.behind_log, 0) };
}

const records = (n: number) => `${n} ${n === 1 ? "record" : "records"}`;

/**
 * One sentence per partition the live generation is behind, naming what it is behind:
 * "partition 1 is 300 records behind the group's committed offset 500 (mark 200)".
 */
export function behindDetails(coverage: VerifyCoverage): string[] {
  return coverage.partitions
    .filter((r) => r.behind_log > 0)
    .map((r) => {
      // With --to-end the target is the log's end unless the group had committed that far.
      const against = coverage.reference === "end" && (r.committed ?? -1) < r.target ? "the log's end offset" : "the group's committed offset";
      return `partition ${r.partition} is ${records(r.behind_log)} behind ${against} ${r.target} (mark ${r.mark ?? "none"})`;
    });
}

/** Partitions whose log ends below what was folded or committed: truncated or recreated, so nothing about them compares. */
export function pastEndDetails(partitions: readonly PartitionOffsets[]): string[] {
  const out: string[] = [];
  for (const p of partitions) {
    if (orZero(p.mark) > p.end) out.push(`partition ${p.partition} ends at ${p.end}, below the ${p.mark} the live generation folded (topic truncated or recreated)`);
    else if (orZero(p.committed) > p.end) out.push(`partition ${p.partition} ends at ${p.end}, below the group's committed offset ${p.committed} (topic truncated or recreated)`);
  }
  return out;
}

/** One partition as `mufold status` shows it. */
export interface PartitionStatus {
  topic: string;
  partition: number;
  mark: number | null;
  committed: number | null;
  end: number;
  /** Committed offset − mark when the mark is behind it, else 0. */
  behind_log: number;
  /** Log end − mark. */
  lag: number;
}

export function partitionStatus(p: PartitionOffsets): PartitionStatus {
  return { topic: p.topic, partition: p.partition, mark: numOrNull(p.mark), committed: numOrNull(p.committed), end: num(p.end), behind_log: num(behindCommitted(p)), lag: num(lagOf(p)) };
}

export type ReadinessState = "waiting_for_setup" | "rebuilding" | "behind_log" | "ready";

export interface ReadinessInput {
  /** Why the Redis functions cannot be used (missing, another version's), as the check said it (with its remedy); null when they are loaded. */
  functionsProblem: string | null;
  topic: string;
  topicExists: boolean;
  group: string;
  generation: number | null;
  partitions: readonly PartitionOffsets[];
}

/** The verdict, first cause first: setup missing, then nothing folded to serve, then records committed but not folded. */
export function readiness(input: ReadinessInput): { state: ReadinessState; cause: string } {
  if (input.functionsProblem !== null) return { state: "waiting_for_setup", cause: input.functionsProblem };
  if (!input.topicExists) return { state: "waiting_for_setup", cause: `topic ${input.topic} does not exist: run \`mufold setup\`` };
  const committed = input.partitions.some((p) => orZero(p.committed) > 0n);
  if (input.generation === null) {
    return {
      state: "rebuilding",
      cause: committed
        ? `no live generation while group ${input.group} has committed offsets: Redis lost the projections, which are rebuilt from offset 0`
        : "no live generation yet: nothing has been folded (a fold creates one when it starts)",
    };
  }
  if (committed && input.partitions.every((p) => p.mark === null)) {
    return { state: "rebuilding", cause: `generation ${input.generation} has no marks while group ${input.group} has committed offsets: Redis lost what was folded, which is rebuilt from offset 0` };
  }
  const behind = input.partitions.filter((p) => behindCommitted(p) > 0n);
  if (behind.length > 0) {
    const total = behind.reduce((a, p) => a + behindCommitted(p), 0n);
    const each = behind.map((p) => `partition ${p.partition} is ${records(num(behindCommitted(p)))} behind the group's committed offset ${p.committed} (mark ${p.mark ?? "none"})`);
    return { state: "behind_log", cause: `${records(num(total))} committed but not folded: ${each.join("; ")}` };
  }
  return { state: "ready", cause: `every partition's mark is at or past group ${input.group}'s committed offset` };
}
