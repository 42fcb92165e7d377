/**
 * `replay --verify` proves coverage (issue 34): it rebuilds at least what the
 * fold group committed, and a live generation whose marks are behind that
 * never verifies. With the fold stopped (nothing heals the live side):
 * - complete: verified, every partition's mark at its target;
 * - a running fold (the pause-and-catch-up path): verified, nothing behind;
 * - Redis gone back in time (a snapshot of the prefix restored over a later
 *   state): not verified, behind_log per partition exactly the records folded
 *   after the snapshot, the identities they touched counted as missing;
 * - the group's offsets reset to the end past unfolded records: the same;
 * - --to-end: records nobody folded or committed fail it, and only it.
 * The numbers come from the offsets the test reads from Kafka and the
 * identities from the reducer over what it produced, never from verify.
 * One run goes through bin/mufold.js (dist/: `npm run build` first).
 */
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import type { Admin } from "kafkajs";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { settingsEnv } from "../../consumers/fold/fold-process.js";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { runReplay } from "../../consumers/replay/replay.js";
import type { ReplaySummary } from "../../consumers/replay/replay-summary.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import type { Observation } from "../../src/core/index.js";
import type { Settings } from "../../src/config/settings.js";
import { BIN, comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { restorePrefix, snapshotPrefix } from "../support/redis-snapshot.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

const exact = { missing: [], extra: [], different: [] };

function workload(seed: number, agents: number, perAgent: number, startTime?: string): Observation[] {
  return [...simulate({ agents, observationsPerAgent: perAgent, scopesPerAgent: 2, snapshotEvery: 10, duplicateRate: 0.1, conflictRate: 0.02, seed, ...(startTime ? { startTime } : {}) })].map((d) => d.observation);
}

async function setup(): Promise<{ settings: Settings; admin: Admin; redis: Redis }> {
  const settings = testSettings({ partitions: 3 });
  const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test-coverage" }).admin();
  await admin.connect();
  const redis = new Redis(settings.redisUrl);
  cleanups.push(
    () => admin.disconnect(),
    () => redis.quit(),
    () => dropPrefix(settings),
  );
  return { settings, admin, redis };
}

async function ends(admin: Admin, topic: string): Promise<Map<number, bigint>> {
  return new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, BigInt(o.high)]));
}

/** Fold everything produced so far, then leave the group: nothing folds while the test looks. */
async function foldAll(settings: Settings): Promise<void> {
  const worker = await FoldWorker.start(settings, quietLog);
  try {
    await waitCaughtUp(settings);
  } finally {
    await worker.stop();
  }
}

function replayCli(settings: Settings, args: string[]): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(process.execPath, [BIN, "replay", ...args], { env: { ...process.env, ...settingsEnv(settings), MUFOLD_LOG_LEVEL: "error" }, stdio: ["ignore", "pipe", "inherit"] });
  let stdout = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  const killer = setTimeout(() => child.kill("SIGKILL"), 120_000);
  return new Promise((resolve) =>
    child.on("close", (code) => {
      clearTimeout(killer);
      resolve({ code, stdout });
    }),
  );
}

const verify = (settings: Settings, toEnd = false) => runReplay(settings, { verify: true, promote: false, toEnd, stallSeconds: 60, pauseTimeoutSeconds: 30 }, quietLog);

/** What the live side lacks after `later` was added to `earlier` on the rebuilt side only, by the reducer's identities. */
function lacking(earlier: Observation[], later: Observation[]): { absent: number; behind: number; untouched: number } {
  const before = new Set(expectedPackets(earlier).keys());
  const touched = new Set(expectedPackets(later).keys());
  const absent = [...touched].filter((id) => !before.has(id)).length;
  return { absent, behind: touched.size - absent, untouched: [...before].filter((id) => !touched.has(id)).length };
}

/** The behind_log sentences verify must print, from offsets the test read: the live marks at `marks`, the target at `to`. */
function behindSentences(marks: Map<number, bigint>, to: Map<number, bigint>, against: string): string[] {
  return [...to]
    .sort(([a], [b]) => a - b)
    .filter(([p, t]) => t > marks.get(p)!)
    .map(([p, t]) => `partition ${p} is ${t - marks.get(p)!} records behind ${against} ${t} (mark ${marks.get(p)})`);
}

function expectBehind(summary: ReplaySummary, marks: Map<number, bigint>, to: Map<number, bigint>, against: string, records: number): void {
  expect(summary.verified).toBe(false);
  const sentences = behindSentences(marks, to, against);
  expect(sentences.length).toBeGreaterThan(0);
  expect(summary.verify!.failures.filter((f) => f.reason === "behind_log").map((f) => f.detail)).toEqual(sentences);
  // The behind_log failures come first: they say why identities differ.
  expect(summary.verify!.failures.slice(0, sentences.length).every((f) => f.reason === "behind_log")).toBe(true);
  expect(summary.coverage!.behind_log).toBe(records);
  expect(summary.coverage!.partitions.map((p) => [p.partition, p.mark, p.target, p.behind_log])).toEqual(
    [...to].sort(([a], [b]) => a - b).map(([p, t]) => [p, Number(marks.get(p)!), Number(t), Number(t - marks.get(p)!)]),
  );
}

describe("replay --verify proves coverage", () => {
  it("complete: verified; records produced but not folded or committed fail only --to-end, named against the log's end", async () => {
    const { settings, admin } = await setup();
    const first = workload(341, 4, 30);
    await produce(settings, first.map(observationRecord));
    await foldAll(settings);
    const folded = await ends(admin, settings.topic);
    expect(comparePackets(await readAllPackets(settings), expectedPackets(first))).toEqual(exact);

    const complete = await verify(settings);
    expect({ verified: complete.verified, mismatches: complete.mismatches, failures: complete.verify?.failures }).toEqual({ verified: true, mismatches: 0, failures: [] });
    expect(complete.verify!.compared).toBe(expectedPackets(first).size);
    expect(complete.coverage).toEqual({
      reference: "committed",
      behind_log: 0,
      partitions: [...folded].sort(([a], [b]) => a - b).map(([partition, end]) => ({ topic: settings.topic, partition, mark: Number(end), committed: Number(end), end: Number(end), target: Number(end), behind_log: 0 })),
    });

    // More records, not folded: the group has not committed them, so the live generation covers what it claims...
    const later = [...workload(341, 4, 40).slice(first.length), ...workload(342, 2, 10, "2026-11-20T00:00:00Z")];
    await produce(settings, later.map(observationRecord));
    const logEnd = await ends(admin, settings.topic);
    const unfolded = [...logEnd].reduce((a, [p, e]) => a + Number(e - folded.get(p)!), 0);
    expect(unfolded).toBe(later.length);
    const committedOnly = await verify(settings);
    expect({ verified: committedOnly.verified, behind: committedOnly.coverage?.behind_log }).toEqual({ verified: true, behind: 0 });
    expect(committedOnly.coverage!.partitions.map((p) => p.target)).toEqual([...folded].sort(([a], [b]) => a - b).map(([, e]) => Number(e)));

    // ...but not the log's end.
    const toEnd = await verify(settings, true);
    expect(toEnd.coverage!.reference).toBe("end");
    expectBehind(toEnd, folded, logEnd, "the log's end offset", later.length);
    const missing = lacking(first, later);
    expect(missing.absent).toBeGreaterThan(0);
    expect(missing.behind).toBeGreaterThan(0);
    expect(toEnd.verify).toMatchObject({ onlyInRebuilt: missing.absent, behindInLive: missing.behind, missingInLive: missing.absent + missing.behind, onlyInLive: 0, mismatches: 0, compared: missing.untouched });

    // The command as an operator runs it (dist/: npm run build first): exit 1, the same verdict in its JSON.
    const cli = await replayCli(settings, ["--verify", "--to-end"]);
    expect(cli.code).toBe(1);
    const printed = JSON.parse(cli.stdout) as ReplaySummary;
    expect({ verified: printed.verified, reference: printed.coverage?.reference, behind: printed.coverage?.behind_log }).toEqual({ verified: false, reference: "end", behind: later.length });
    expect(printed.verify!.failures.filter((f) => f.reason === "behind_log").map((f) => f.detail)).toEqual(behindSentences(folded, logEnd, "the log's end offset"));
  });

  it("a running fold: the fleet is paused, the rebuild catches up to the final marks, and nothing is behind", async () => {
    const { settings, admin } = await setup();
    const first = workload(371, 4, 30);
    await produce(settings, first.map(observationRecord));
    const worker = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => worker.stop());
    await waitCaughtUp(settings);
    // Records keep coming while the verify runs: whatever the fold seals before the pause, the rebuild reads too.
    const during = workload(372, 2, 20, "2026-11-24T00:00:00Z");
    const [summary] = await Promise.all([verify(settings), produce(settings, during.map(observationRecord))]);
    expect({ verified: summary.verified, failures: summary.verify?.failures, behind: summary.coverage?.behind_log }).toEqual({ verified: true, failures: [], behind: 0 });
    for (const p of summary.coverage!.partitions) expect(p.target).toBe(p.mark);
    await waitCaughtUp(settings);
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...first, ...during]))).toEqual(exact);
    const end = await ends(admin, settings.topic);
    expect(summary.coverage!.partitions.every((p) => BigInt(p.target) <= end.get(p.partition)!)).toBe(true);
  });

  it("Redis gone back in time (a snapshot restored): not verified, behind the group's committed offsets by exactly the records folded since", async () => {
    const { settings, admin, redis } = await setup();
    const first = workload(351, 4, 30);
    await produce(settings, first.map(observationRecord));
    await foldAll(settings);
    const atSnapshot = await ends(admin, settings.topic);
    const snapshot = await snapshotPrefix(redis, settings.prefix);

    const later = [...workload(351, 4, 45).slice(first.length), ...workload(352, 2, 10, "2026-11-21T00:00:00Z")];
    await produce(settings, later.map(observationRecord));
    await foldAll(settings);
    const committed = await ends(admin, settings.topic); // the group caught up: committed = end
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...first, ...later]))).toEqual(exact);

    await restorePrefix(redis, snapshot);
    // Redis holds the older state again, marks included; Kafka still holds the later commits.
    expect(comparePackets(await readAllPackets(settings), expectedPackets(first))).toEqual(exact);

    const summary = await verify(settings);
    expectBehind(summary, atSnapshot, committed, "the group's committed offset", later.length);
    expect(summary.coverage!.partitions.map((p) => p.committed)).toEqual([...committed].sort(([a], [b]) => a - b).map(([, c]) => Number(c)));
    const missing = lacking(first, later);
    expect(summary.verify).toMatchObject({ onlyInRebuilt: missing.absent, behindInLive: missing.behind, missingInLive: missing.absent + missing.behind, onlyInLive: 0, mismatches: 0, compared: missing.untouched });
  });

  it("group offsets reset to the end past records the fold never saw: not verified", async () => {
    const { settings, admin } = await setup();
    const first = workload(361, 3, 30);
    await produce(settings, first.map(observationRecord));
    await foldAll(settings);
    const marks = await ends(admin, settings.topic);

    const skipped = [...workload(361, 3, 40).slice(first.length), ...workload(362, 2, 8, "2026-11-22T00:00:00Z")];
    await produce(settings, skipped.map(observationRecord));
    // The operator moves the stopped group to the end (kafka-consumer-groups --reset-offsets --to-latest resolves the
    // end offsets, as here; kafkajs's resetOffsets would store the symbolic -1): committed offsets move, the marks do not.
    const committed = await ends(admin, settings.topic);
    await admin.setOffsets({ groupId: settings.group, topic: settings.topic, partitions: [...committed].map(([partition, offset]) => ({ partition, offset: String(offset) })) });
    const after = new Map((await admin.fetchOffsets({ groupId: settings.group, topics: [settings.topic] }))[0]!.partitions.map((p) => [p.partition, BigInt(p.offset)]));
    expect(after).toEqual(committed);
    expect(comparePackets(await readAllPackets(settings), expectedPackets(first))).toEqual(exact);

    const summary = await verify(settings);
    expectBehind(summary, marks, committed, "the group's committed offset", skipped.length);
    const missing = lacking(first, skipped);
    expect(summary.verify).toMatchObject({ missingInLive: missing.absent + missing.behind, compared: missing.untouched, mismatches: 0 });
  });
});
