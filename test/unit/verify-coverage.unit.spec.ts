/**
 * Verify proves coverage (consumers/verify/verify.ts): an identity whose live
 * watermarks are only lower than the rebuilt ones is `behind_in_live` and
 * counted as missing in live, with those absent from live; a live generation
 * behind the rebuild's target fails with one `behind_log` failure per
 * partition, first; and the report page shows each partition's coverage.
 */
import { describe, expect, it } from "vitest";
import { verifyCoverage, type PartitionOffsets } from "../../consumers/verify/coverage.js";
import type { ReplaySummary } from "../../consumers/replay/replay-summary.js";
import { coverageFailures, liveBehind, VerifyDetails, verifyGenerations, withFailures, type VerifyStores } from "../../consumers/verify/verify.js";
import { verifyReportHtml } from "../../consumers/verify/verify-report.js";
import { byClass, findAll, parseXml, textOf } from "../support/xml.js";

const LIVE = 3;
const REBUILT = 4;
const id = (n: number) => `mur_${String(n).padStart(64, "0")}`;
const w = (entries: Record<string, string>) => new Map(Object.entries(entries));

function storeDouble(generations: Record<number, Map<string, { meta: Record<string, string>; packet: string }>>): VerifyStores {
  const store = {
    generationFields: async () => new Map<string, string>(),
    listIdentities: async (g: number) => [...generations[g]!.keys()].sort(),
    meta: async (g: number, identity: string) => generations[g]!.get(identity)?.meta ?? {},
    read: async (g: number, identity: string) => generations[g]!.get(identity)?.packet ?? null,
  };
  return { identities: store, control: store };
}

describe("live watermarks behind the rebuilt ones", () => {
  it("only lower (or a partition the live side has not reached) is behind; higher, unparsable or equal is not", () => {
    expect(liveBehind(w({ "w:t:0": "3" }), w({ "w:t:0": "5" }))).toBe(true);
    expect(liveBehind(w({ "w:t:0": "5" }), w({ "w:t:0": "5", "w:t:1": "2" }))).toBe(true);
    expect(liveBehind(w({}), w({ "w:t:0": "1" }))).toBe(true);
    expect(liveBehind(w({ "w:t:0": "5" }), w({ "w:t:0": "5" }))).toBe(false);
    expect(liveBehind(w({ "w:t:0": "9" }), w({ "w:t:0": "5" }))).toBe(false);
    expect(liveBehind(w({ "w:t:0": "3", "w:t:1": "9" }), w({ "w:t:0": "5", "w:t:1": "5" }))).toBe(false);
    expect(liveBehind(w({ "w:t:2": "1" }), w({ "w:t:0": "5" }))).toBe(false); // a partition the rebuild never folded
    expect(liveBehind(w({ "w:t:0": "x" }), w({ "w:t:0": "5" }))).toBe(false);
  });
});

describe("verifyGenerations counts what the live side lacks", () => {
  it("absent from live (only_in_rebuilt) and behind in live are both missing in live; ahead stays watermarks_differ", async () => {
    const store = storeDouble({
      [LIVE]: new Map([
        [id(1), { meta: { "w:t:0": "5" }, packet: "{}" }],
        [id(2), { meta: { "w:t:0": "2" }, packet: '{"n":1}' }],
        [id(4), { meta: { "w:t:0": "9" }, packet: "{}" }],
      ]),
      [REBUILT]: new Map([
        [id(1), { meta: { "w:t:0": "5" }, packet: "{}" }],
        [id(2), { meta: { "w:t:0": "6" }, packet: '{"n":2}' }],
        [id(3), { meta: { "w:t:0": "4" }, packet: "{}" }],
        [id(4), { meta: { "w:t:0": "5" }, packet: "{}" }],
      ]),
    });
    const details = new VerifyDetails();
    const report = await verifyGenerations(store, LIVE, REBUILT, details);
    expect(report).toMatchObject({ ok: false, identities: 4, compared: 1, mismatches: 0, notComparable: 3, onlyInLive: 0, onlyInRebuilt: 1, behindInLive: 1, missingInLive: 2 });
    expect(details.notEqual.map((r) => [r.identity, r.status, r.detail])).toEqual([
      [id(2), "behind_in_live", "live w:t:0=2; rebuilt w:t:0=6"],
      [id(3), "only_in_rebuilt", undefined],
      [id(4), "watermarks_differ", "live w:t:0=9; rebuilt w:t:0=5"],
    ]);
  });
});

const p = (partition: number, mark: bigint | null, committed: bigint | null, end: bigint): PartitionOffsets => ({ topic: "obs", partition, mark, committed, end });

describe("behind_log fails the verify", () => {
  it("one failure per partition behind, before the identities' failures; none when no partition is behind", async () => {
    const equal = storeDouble({ [LIVE]: new Map([[id(1), { meta: { "w:t:0": "5" }, packet: "{}" }]]), [REBUILT]: new Map([[id(1), { meta: { "w:t:0": "5" }, packet: "{}" }]]) });
    const report = await verifyGenerations(equal, LIVE, REBUILT);
    expect(report.ok).toBe(true);

    const covered = verifyCoverage([p(0, 5n, 5n, 5n)], new Map([[0, 5n]]), "committed");
    expect(coverageFailures(covered)).toEqual([]);
    expect(withFailures(report, coverageFailures(covered))).toBe(report);

    // Every identity equal, yet records the group committed (dead letters, say) are not folded: not verified.
    const behind = verifyCoverage([p(0, 5n, 5n, 5n), p(1, 200n, 500n, 500n)], new Map([[0, 5n], [1, 500n]]), "committed");
    const failed = withFailures({ ...report, failures: [{ reason: "only_in_rebuilt", identity: id(9) }] }, coverageFailures(behind));
    expect(failed.ok).toBe(false);
    expect(failed.failures).toEqual([
      { reason: "behind_log", detail: "partition 1 is 300 records behind the group's committed offset 500 (mark 200)" },
      { reason: "only_in_rebuilt", identity: id(9) },
    ]);
  });
});

describe("the report page shows coverage", () => {
  it("a row per partition with its numbers, the behind one marked; the summary counts behind identities and records", async () => {
    const store = storeDouble({
      [LIVE]: new Map([[id(2), { meta: { "w:t:1": "200" }, packet: "{}" }]]),
      [REBUILT]: new Map([
        [id(2), { meta: { "w:t:1": "500" }, packet: "{}" }],
        [id(3), { meta: { "w:t:1": "300" }, packet: "{}" }],
      ]),
    });
    const details = new VerifyDetails();
    const coverage = verifyCoverage([p(0, 5n, 5n, 5n), p(1, 200n, 500n, 500n)], new Map([[0, 5n], [1, 500n]]), "committed");
    const verify = withFailures(await verifyGenerations(store, LIVE, REBUILT, details), coverageFailures(coverage));
    const summary: ReplaySummary = {
      liveGeneration: LIVE,
      rebuiltGeneration: REBUILT,
      records: 505,
      deliveries: 505,
      duplicatesSkipped: 0,
      dlq: 0,
      dlqByReason: {},
      identities: 2,
      seconds: 1,
      recordsPerSecond: 505,
      workers: 1,
      rebuildSeconds: 1,
      verify,
      coverage,
      verified: verify.ok,
      mismatches: verify.mismatches + verify.notComparable,
      promoted: false,
    };
    const page = parseXml(verifyReportHtml({ summary, details, topic: "obs", prefix: "mufold", startedAt: new Date(0), finishedAt: new Date(1000) }));
    const rows = new Map(
      findAll(byClass(page, "summary")[0]!, (e) => e.name === "tr").map((tr) => {
        const cell = (name: string) => textOf(tr.children.find((c): c is typeof tr => typeof c !== "string" && c.name === name)!);
        return [cell("th"), cell("td")];
      }),
    );
    expect(rows.get("verdict")).toBe("not verified");
    expect(rows.get("reason")).toContain("behind_log: partition 1 is 300 records behind the group's committed offset 500 (mark 200)");
    expect(rows.get("reason")).toContain("behind_in_live: 1 identity");
    expect([rows.get("behind in live"), rows.get("only in rebuilt"), rows.get("watermarks differ"), rows.get("records the live generation is behind")]).toEqual(["1", "1", "0", "300"]);
    const partitions = findAll(page, (e) => e.attrs["data-partition"] !== undefined).map((e) => [e.attrs["data-partition"], e.attrs["data-behind"], e.attrs.class]);
    expect(partitions).toEqual([
      ["0", "0", "partition"],
      ["1", "300", "partition behind"],
    ]);
    const cells = findAll(findAll(page, (e) => e.attrs["data-partition"] === "1")[0]!, (e) => e.name === "td").map(textOf);
    expect(cells).toEqual(["obs:1", "200", "500", "500", "500", "300"]);
  });
});
