/**
 * Lose nothing when the world under the fold changes: Redis emptied while a
 * batch is in flight, the documented recovery with a running fold, and a
 * topic deleted and recreated under the same name. Each test uses its own
 * Redis database (FLUSHDB touches nothing else) and its own topic and group.
 */
import { until } from "../support/wait.js";
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { groupOffsets, LOG_CONFIG } from "../../src/adapters/kafka/topics.js";
import { FoldWorker } from "../../consumers/fold-worker.js";
import { runReplay } from "../../consumers/replay.js";
import { observationMessage } from "../../producers/observation-message.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import type { Observation } from "../../src/core/index.js";
import type { Settings } from "../../src/config/settings.js";
import { comparePackets, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

/** Settings on a Redis database of the test's own, emptied at the end. */
function isolated(db: number, overrides: Partial<Settings> = {}): { settings: Settings; redis: Redis } {
  const base = testSettings(overrides);
  const settings = { ...base, redisUrl: base.redisUrl.replace(/\/\d*$/, "") + `/${db}` };
  const redis = new Redis(settings.redisUrl);
  cleanups.push(async () => {
    await redis.flushdb();
    await redis.quit();
  });
  return { settings, redis };
}


async function committedTotal(settings: Settings): Promise<bigint> {
  const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test-offsets" }).admin();
  await admin.connect();
  try {
    let sum = 0n;
    for (const o of (await groupOffsets(admin, settings.group, settings.topic)).values()) if (o > 0n) sum += o;
    return sum;
  } finally {
    await admin.disconnect();
  }
}

function workload(seed: number, agents: number, perAgent: number, startTime?: string): Observation[] {
  return [...simulate({ agents, observationsPerAgent: perAgent, scopesPerAgent: 3, snapshotEvery: 20, duplicateRate: 0.1, conflictRate: 0.02, seed, ...(startTime ? { startTime } : {}) })].map(
    (d) => d.observation,
  );
}

async function startFold(settings: Settings): Promise<FoldWorker> {
  const worker = await FoldWorker.start(settings, quietLog);
  cleanups.push(() => worker.stop());
  return worker;
}

const exact = { missing: [], extra: [], different: [] };

describe("state loss: detected before any commit, never rebuilt upon, recovered by a promote", () => {
  it("Redis emptied mid-batch with a small cache: nothing is lost, generations are never reused", async () => {
    // Small batches, one partition at a time: the fold must still be mid-stream when Redis is emptied
    // (with default batches it can fold all 9,000 between two polls of the committed offsets).
    const { settings, redis } = isolated(6, { cacheSize: 5, partitions: 6, partitionFetchMaxBytes: 16_384, partitionsConcurrency: 1 });
    const observations = workload(61, 30, 300); // 9,000 deliveries over ~90 identities
    await produce(settings, observations.map(observationMessage));
    const worker = await startFold(settings);
    const firstGeneration = Number(await redis.hget(`${settings.prefix}:control`, "generation"));
    // Mid-stream: a third committed, so batches are in flight when Redis loses everything.
    await until("a third of the log committed", async () => (await committedTotal(settings)) >= BigInt(Math.floor(observations.length / 3)));
    await redis.flushdb();
    const atLoss = await committedTotal(settings);
    expect(atLoss).toBeLessThan(BigInt(observations.length)); // the loss happened mid-stream
    // The fold notices before committing anything more and waits for a restore.
    await until("the fold to wait for a restore", () => worker.waitingForRestore);
    const summary = await runReplay(settings, { verify: true, promote: true, dropAfterSeconds: 0 }, quietLog);
    expect(summary.promoted).toBe(true);
    expect(summary.verified).toBe(false); // nothing to compare with: the live generation was lost
    expect(summary.verify?.failures[0]?.reason).toBe("no_live_generation");
    expect(summary.rebuiltGeneration).toBeGreaterThan(firstGeneration);
    await waitCaughtUp(settings);
    expect(comparePackets(await readAllPackets(settings), expectedPackets(observations))).toEqual(exact);
    // Only the promoted generation is left: the keys written into the lost one after the flush were dropped.
    const indexes = (await redis.keys(`${settings.prefix}:g*:index`)).sort();
    expect(indexes).toEqual([`${settings.prefix}:g${summary.rebuiltGeneration}:index`]);
    // And a later verify compares every identity and finds it equal.
    const verify = await runReplay(settings, { verify: true, promote: false }, quietLog);
    expect(verify.verified).toBe(true);
    expect(verify.verify?.compared).toBe(expectedPackets(observations).size);
  });

  it("after the documented recovery a running fold resumes by itself (default cache)", async () => {
    const { settings, redis } = isolated(7);
    const first = workload(71, 6, 40);
    await produce(settings, first.map(observationMessage));
    const worker = await startFold(settings);
    await waitCaughtUp(settings);
    await redis.flushdb();
    // More records for identities the worker has cached: their applies find the state gone.
    const more = workload(71, 6, 50).slice(first.length);
    expect(more.length).toBeGreaterThan(0);
    await produce(settings, more.map(observationMessage));
    await until("the fold to wait for a restore", () => worker.waitingForRestore);
    const summary = await runReplay(settings, { verify: false, promote: true, dropAfterSeconds: 0 }, quietLog);
    expect(summary.promoted).toBe(true);
    const extra = workload(72, 3, 10, "2026-11-25T00:00:00Z");
    await produce(settings, extra.map(observationMessage));
    await waitCaughtUp(settings);
    expect(worker.waitingForRestore).toBe(false);
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...first, ...more, ...extra]))).toEqual(exact);
  });
});

describe("a batch held through a loss is not mistaken for a truncated log", () => {
  it("a promote that sealed marks past the held batch's high watermark: the fold goes on", async () => {
    const { settings, redis } = isolated(10, { partitions: 1 });
    const first = workload(121, 3, 10);
    await produce(settings, first.map(observationMessage));
    const worker = await startFold(settings);
    await waitCaughtUp(settings);
    await redis.flushdb();
    // The worker fetches these and holds them (no generation); then the log grows past their high watermark.
    const held = workload(122, 3, 4, "2026-11-20T00:00:00Z");
    await produce(settings, held.map(observationMessage));
    await until("the fold to hold its batch", () => worker.waitingForRestore);
    const later = workload(123, 3, 15, "2026-11-21T00:00:00Z");
    await produce(settings, later.map(observationMessage));
    const summary = await runReplay(settings, { verify: false, promote: true, dropAfterSeconds: 0 }, quietLog);
    expect(summary.promoted).toBe(true);
    let crashed: unknown;
    void worker.crashed.then((e) => (crashed = e));
    await waitCaughtUp(settings);
    expect(crashed).toBeUndefined();
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...first, ...held, ...later]))).toEqual(exact);
  });
});

describe("a topic deleted and recreated under the same name", () => {
  it("the fold refuses it with what to do; verify fails; a promote rebuilds from the new topic", async () => {
    const { settings } = isolated(8, { partitions: 3 });
    const old = workload(81, 5, 30);
    await produce(settings, old.map(observationMessage));
    const worker = await startFold(settings);
    await waitCaughtUp(settings);
    await worker.stop();
    cleanups.pop();

    const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test-recreate" }).admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await admin.deleteTopics({ topics: [settings.topic], timeout: 30_000 });
    await until("the topic to be gone", async () => !(await admin.listTopics()).includes(settings.topic));
    await until(
      "the topic to be created again",
      async () =>
        await admin
          .createTopics({ waitForLeaders: true, topics: [{ topic: settings.topic, numPartitions: 3, replicationFactor: 1, configEntries: LOG_CONFIG }] })
          .then(() => true)
          .catch(() => false),
    );
    const fresh = workload(82, 5, 30, "2026-11-26T00:00:00Z");
    await produce(settings, fresh.map(observationMessage));

    const restarted = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => restarted.stop());
    const crash = (await Promise.race([restarted.crashed, new Promise((r) => setTimeout(() => r("no crash in 60s"), 60_000))])) as Error;
    expect(String(crash.message ?? crash)).toMatch(/deleted and recreated, or truncated.*mufold replay --promote/);
    expect(await readAllPackets(settings)).toEqual(expectedPackets(old)); // nothing of the new topic was folded

    const verify = await runReplay(settings, { verify: true, promote: false, stallSeconds: 60 }, quietLog);
    expect(verify.verified).toBe(false);
    expect(verify.verify?.failures.map((f) => f.reason)).toContain("topic_origin_differs");

    await restarted.stop();
    cleanups.pop();
    const promote = await runReplay(settings, { verify: false, promote: true, dropAfterSeconds: 0, stallSeconds: 20, pauseTimeoutSeconds: 20 }, quietLog);
    expect(promote.promoted).toBe(true);
    await startFold(settings);
    const later = workload(83, 2, 10, "2026-11-27T00:00:00Z");
    await produce(settings, later.map(observationMessage));
    await waitCaughtUp(settings);
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...fresh, ...later]))).toEqual(exact);
  });
});
