/**
 * The coverage computation shared by `replay --verify` and `mufold status`
 * (consumers/verify/coverage.ts): marks against committed offsets against the log's
 * end, per partition; the verify target and how far the live side is behind
 * it, with the sentence that names it; the readiness verdict; and the status
 * table a person reads (src/cli/status.ts).
 */
import { describe, expect, it } from "vitest";
import {
  behindCommitted,
  behindDetails,
  lagOf,
  marksOfTopic,
  partitionStatus,
  pastEndDetails,
  readiness,
  verifyCoverage,
  verifyTarget,
  type PartitionOffsets,
  type ReadinessInput,
} from "../../consumers/verify/coverage.js";
import { statusTable, type StatusReport } from "../../src/cli/status.js";

const p = (partition: number, mark: bigint | null, committed: bigint | null, end: bigint): PartitionOffsets => ({ topic: "obs", partition, mark, committed, end });

describe("marks of one topic", () => {
  it("keeps the topic's partitions only, a topic name with colons included", () => {
    const fields = new Map([
      ["obs:0", "10"],
      ["obs:1", "7"],
      ["obs.dlq:0", "99"],
      ["a:b:3", "5"],
      ["obs:extra:2", "1"],
    ]);
    expect(marksOfTopic(fields, "obs")).toEqual(new Map([[0, 10n], [1, 7n]]));
    expect(marksOfTopic(fields, "a:b")).toEqual(new Map([[3, 5n]]));
    expect(marksOfTopic(fields, "none")).toEqual(new Map());
  });
});

describe("one partition: behind the committed offset, lag, the verify target", () => {
  it("behind_log is committed − mark only when the mark is behind; lag is end − mark", () => {
    expect([behindCommitted(p(0, 200n, 500n, 600n)), lagOf(p(0, 200n, 500n, 600n))]).toEqual([300n, 400n]);
    expect([behindCommitted(p(0, 500n, 500n, 600n)), lagOf(p(0, 500n, 500n, 600n))]).toEqual([0n, 100n]);
    // A fold raises its mark before it commits: a mark ahead of the commit is not behind.
    expect(behindCommitted(p(0, 510n, 500n, 600n))).toBe(0n);
    // No mark: everything committed is missing; no commit: nothing is.
    expect(behindCommitted(p(0, null, 40n, 50n))).toBe(40n);
    expect(behindCommitted(p(0, 10n, null, 50n))).toBe(0n);
    expect(lagOf(p(0, null, null, 50n))).toBe(50n);
  });

  it("the verify target: the further of mark and commit (--to-end: the log's end as the replay started), never past the end now", () => {
    expect(verifyTarget(p(0, 200n, 500n, 600n), null)).toBe(500n);
    expect(verifyTarget(p(0, 520n, 500n, 600n), null)).toBe(520n);
    expect(verifyTarget(p(0, 200n, 500n, 600n), 580n)).toBe(580n);
    expect(verifyTarget(p(0, null, null, 600n), null)).toBe(0n);
    // A log shorter than what was committed or folded: read what there is (pastEndDetails reports it).
    expect(verifyTarget(p(0, 700n, 650n, 600n), null)).toBe(600n);
    expect(verifyTarget(p(0, 200n, 500n, 450n), 600n)).toBe(450n);
  });

  it("a log that ends below a mark or a commit is named", () => {
    expect(pastEndDetails([p(0, 700n, 650n, 600n), p(1, 10n, 650n, 600n), p(2, 10n, 20n, 600n)])).toEqual([
      "partition 0 ends at 600, below the 700 the live generation folded (topic truncated or recreated)",
      "partition 1 ends at 600, below the group's committed offset 650 (topic truncated or recreated)",
    ]);
  });
});

describe("verify coverage", () => {
  it("each partition against the target the rebuild read to; the sentence names the records, the offset and the mark", () => {
    const partitions = [p(0, 120n, 120n, 120n), p(1, 200n, 500n, 500n), p(2, null, 1n, 3n)];
    const targets = new Map([[0, 120n], [1, 500n], [2, 1n]]);
    const coverage = verifyCoverage(partitions, targets, "committed");
    expect(coverage).toEqual({
      reference: "committed",
      behind_log: 301,
      partitions: [
        { topic: "obs", partition: 0, mark: 120, committed: 120, end: 120, target: 120, behind_log: 0 },
        { topic: "obs", partition: 1, mark: 200, committed: 500, end: 500, target: 500, behind_log: 300 },
        { topic: "obs", partition: 2, mark: null, committed: 1, end: 3, target: 1, behind_log: 1 },
      ],
    });
    expect(behindDetails(coverage)).toEqual([
      "partition 1 is 300 records behind the group's committed offset 500 (mark 200)",
      "partition 2 is 1 record behind the group's committed offset 1 (mark none)",
    ]);
  });

  it("--to-end: behind the log's end, unless the group had committed as far as the target", () => {
    const coverage = verifyCoverage([p(0, 100n, 100n, 130n), p(1, 100n, 130n, 130n), p(2, 130n, 130n, 130n)], new Map([[0, 130n], [1, 130n], [2, 130n]]), "end");
    expect(coverage.behind_log).toBe(60);
    expect(behindDetails(coverage)).toEqual(["partition 0 is 30 records behind the log's end offset 130 (mark 100)", "partition 1 is 30 records behind the group's committed offset 130 (mark 100)"]);
  });

  it("a partition without a given target is held to what was folded or committed", () => {
    expect(verifyCoverage([p(0, 5n, 9n, 12n)], new Map(), "committed").partitions[0]).toMatchObject({ target: 9, behind_log: 4 });
  });
});

describe("readiness", () => {
  const base: ReadinessInput = { functionsProblem: null, topic: "obs", topicExists: true, group: "g", generation: 7, partitions: [p(0, 10n, 10n, 12n), p(1, 5n, 5n, 5n)] };

  it("ready: every mark at or past the committed offset, whatever the lag", () => {
    expect(readiness(base).state).toBe("ready");
  });

  it("behind_log: a mark behind the committed offset, with the records and each partition in the cause", () => {
    const r = readiness({ ...base, partitions: [p(0, 10n, 10n, 12n), p(1, 2n, 5n, 5n), p(2, null, 4n, 4n)] });
    expect(r).toEqual({
      state: "behind_log",
      cause:
        "7 records committed but not folded: partition 1 is 3 records behind the group's committed offset 5 (mark 2); " +
        "partition 2 is 4 records behind the group's committed offset 4 (mark none)",
    });
  });

  it("rebuilding: no live generation (nothing folded yet, or lost), or a live one without marks while the group committed", () => {
    expect(readiness({ ...base, generation: null, partitions: [p(0, null, null, 3n)] })).toEqual({ state: "rebuilding", cause: "no live generation yet: nothing has been folded (a fold creates one when it starts)" });
    expect(readiness({ ...base, generation: null, partitions: [p(0, null, 3n, 3n)] }).cause).toBe(
      "no live generation while group g has committed offsets: Redis lost the projections, which are rebuilt from offset 0",
    );
    expect(readiness({ ...base, partitions: [p(0, null, 3n, 3n), p(1, null, null, 2n)] })).toEqual({
      state: "rebuilding",
      cause: "generation 7 has no marks while group g has committed offsets: Redis lost what was folded, which is rebuilt from offset 0",
    });
    // A live generation without marks and without commits has folded nothing yet: nothing is missing.
    expect(readiness({ ...base, partitions: [p(0, null, null, 3n)] }).state).toBe("ready");
  });

  it("waiting_for_setup comes first: missing functions, then a missing topic", () => {
    const problem = "Redis at h:1 has no function library mufold_v1: run `mufold setup` (as a Redis admin) to load mufold's function libraries";
    expect(readiness({ ...base, generation: null, functionsProblem: problem })).toEqual({ state: "waiting_for_setup", cause: problem });
    expect(readiness({ ...base, topicExists: false, partitions: [] })).toEqual({ state: "waiting_for_setup", cause: "topic obs does not exist: run `mufold setup`" });
  });

  it("one partition as status shows it", () => {
    expect(partitionStatus(p(3, 200n, 500n, 650n))).toEqual({ topic: "obs", partition: 3, mark: 200, committed: 500, end: 650, behind_log: 300, lag: 450 });
    expect(partitionStatus(p(0, null, null, 0n))).toEqual({ topic: "obs", partition: 0, mark: null, committed: null, end: 0, behind_log: 0, lag: 0 });
  });
});

describe("the status table", () => {
  const report: StatusReport = {
    topic: "obs",
    group: "g",
    prefix: "mufold",
    state: "behind_log",
    cause: "300 records committed but not folded: …",
    functions_loaded: true,
    generation: 12,
    reducer_version: "memory_utility_reducer_v0",
    paused: false,
    partitions: [partitionStatus(p(0, 1200n, 1200n, 1250n)), partitionStatus(p(1, 200n, 500n, 500n)), partitionStatus(p(2, null, null, 0n))],
    behind_log: 300,
    lag: 350,
    building: [15],
  };

  it("the verdict first, what it rests on, then a row per partition with numbers aligned and a total", () => {
    const lines = statusTable(report).split("\n");
    expect(lines[0]).toBe("mufold status: behind_log");
    expect(lines).toContain("  generation  12");
    expect(lines).toContain("  reducer     memory_utility_reducer_v0");
    expect(lines).toContain("  building    15");
    const table = lines.slice(lines.indexOf("") + 1, -1);
    expect(table).toEqual([
      "  partition   mark  committed    end  behind_log  lag",
      "  obs:0      1,200      1,200  1,250           0   50",
      "  obs:1        200        500    500         300  300",
      "  obs:2          -          -      0           0    0",
      "  total                                      300  350",
    ]);
  });

  it("what only the functions tell is shown as unknown without them", () => {
    const text = statusTable({ ...report, state: "waiting_for_setup", functions_loaded: false, reducer_version: null, paused: null, building: null });
    expect(text).toContain("  functions   missing\n");
    expect(text).toContain("  reducer     unknown (no functions)\n");
    expect(text).toContain("  building    unknown (no functions)\n");
    expect(statusTable({ ...report, partitions: [] })).toContain("  (no partitions)\n");
  });
});
