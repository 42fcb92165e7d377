/**
 * Lose nothing when the world under the fold changes: Redis emptied while a
 * batch is in flight or while idle, a brand-new empty Redis, and a topic
 * deleted and recreated under the same name. Each test uses its own
 * Redis database (FLUSHDB touches nothing else) and its own topic and group.
 */
import { until } from "../support/wait.js";
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { awaitTopicLeaders, groupOffsets, LOG_CONFIG } from "../../src/adapters/kafka/topics.js";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { runReplay } from "../../consumers/replay/replay.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import type { Observation } from "../../src/core/index.js";
import type { Settings } from "../../src/config/settings.js";
import { comparePackets, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { PrivateRedis } from "../support/private-redis.js";
import { ensureSetup } from "../../src/adapters/redis/functions.js";

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

/** The worker's readiness check `position`: undefined when ready, else its message. */
/** The packets, or none while Redis has no generation (a reader then refuses). */
async function packetsNow(settings: Settings): Promise<Map<string, string>> {
  return readAllPackets(settings).catch(() => new Map<string, string>());
}

async function positionCheck(worker: FoldWorker): Promise<string | undefined> {
  return worker
    .readinessChecks()
    .position!()
    .then(
      () => undefined,
      (e: unknown) => (e as Error).message,
    );
}

describe("Redis lost entirely: the fold rebuilds from the log start by itself", () => {
  it.each([
    { cache: "a cache of 5", cacheSize: 5, db: 6 },
    { cache: "the default cache", cacheSize: testSettings().cacheSize, db: 12 },
  ])("Redis emptied mid-batch with $cache: rebuilt into a new generation, not ready meanwhile, nothing lost", async ({ cacheSize, db }) => {
    // Small batches, one partition at a time: the fold must still be mid-stream when Redis is emptied
    // (with default batches it can fold all 9,000 between two polls of the committed offsets).
    const { settings, redis } = isolated(db, { cacheSize, partitions: 6, partitionFetchMaxBytes: 16_384, partitionsConcurrency: 1 });
    const observations = workload(61, 30, 300); // 9,000 deliveries over ~90 identities
    await produce(settings, observations.map(observationRecord));
    const worker = await startFold(settings);
    const firstGeneration = Number(await redis.hget(`${settings.prefix}:control`, "generation"));
    // Mid-stream: a third committed, so batches are in flight when Redis loses everything.
    await until("a third of the log committed", async () => (await committedTotal(settings)) >= BigInt(Math.floor(observations.length / 3)));
    await redis.flushdb();
    const atLoss = await committedTotal(settings);
    expect(atLoss).toBeLessThan(BigInt(observations.length)); // the loss happened mid-stream
    // The fold sees it, makes a new generation and refolds every partition from 0; not ready until it has come back.
    const seen: string[] = [];
    await until("the fold to report the rebuild", async () => {
      const message = await positionCheck(worker);
      if (message !== undefined) seen.push(message);
      return worker.state === "rebuilding";
    });
    expect(seen.some((m) => /^rebuilding: .* records to refold on \d+ partitions/.test(m))).toBe(true);
    await until("every partition whole again", () => worker.state === "folding", 120_000);
    await waitCaughtUp(settings);
    expect(await positionCheck(worker)).toBeUndefined();
    expect(comparePackets(await readAllPackets(settings), expectedPackets(observations))).toEqual(exact);
    const live = Number(await redis.hget(`${settings.prefix}:control`, "generation"));
    expect(live).toBeGreaterThan(firstGeneration); // a number from before the loss is never handed out again
    // The lost generation holds no identity state: whatever reached it after the flush was refused by the guard.
    expect(await redis.keys(`${settings.prefix}:g${firstGeneration}:*:m`)).toEqual([]);
    const verify = await runReplay(settings, { verify: true, promote: false }, quietLog);
    expect(verify.verified).toBe(true);
    expect(verify.verify?.compared).toBe(expectedPackets(observations).size);
  });

  it("Redis emptied while the fold is idle (default cache): rebuilt without waiting for a record", async () => {
    const { settings, redis } = isolated(7);
    const first = workload(71, 6, 40);
    await produce(settings, first.map(observationRecord));
    const worker = await startFold(settings);
    await waitCaughtUp(settings);
    await redis.flushdb();
    // No record arrives: the position check sees the loss and the fold refolds the log by itself.
    await until("the projections rebuilt with no new record", async () => comparePackets(await packetsNow(settings), expectedPackets(first)).missing.length === 0, 60_000);
    await until("every partition whole again", () => worker.state === "folding");
    expect(comparePackets(await readAllPackets(settings), expectedPackets(first))).toEqual(exact);
    const more = workload(72, 3, 10, "2026-11-25T00:00:00Z");
    await produce(settings, more.map(observationRecord));
    await waitCaughtUp(settings);
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...first, ...more]))).toEqual(exact);
  });

  it("a brand-new empty Redis: the fold waits for `mufold setup` (not ready), then rebuilds by itself", async () => {
    const server = await PrivateRedis.start();
    cleanups.push(() => server.remove());
    const settings = { ...testSettings({ partitions: 3 }), redisUrl: server.url };
    await ensureSetup(settings);
    const first = workload(91, 4, 30);
    await produce(settings, first.map(observationRecord));
    const worker = await startFold(settings);
    await waitCaughtUp(settings);
    expect(comparePackets(await readAllPackets(settings), expectedPackets(first))).toEqual(exact);
    await server.replaceWithEmpty(); // no keys, no function libraries
    await until("the fold to wait for setup", () => worker.state === "waiting_for_setup", 60_000);
    expect(await positionCheck(worker)).toMatch(/^waiting_for_setup: .*mufold setup/);
    await ensureSetup(settings);
    await until("the projections rebuilt", async () => comparePackets(await packetsNow(settings), expectedPackets(first)).missing.length === 0, 60_000);
    await until("every partition whole again", () => worker.state === "folding");
    expect(comparePackets(await readAllPackets(settings), expectedPackets(first))).toEqual(exact);
  });
});

describe("a topic deleted and recreated under the same name", () => {
  it("the fold refuses it with what to do; verify fails; a promote rebuilds from the new topic", async () => {
    const { settings } = isolated(8, { partitions: 3 });
    const old = workload(81, 5, 30);
    await produce(settings, old.map(observationRecord));
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
          .createTopics({ waitForLeaders: false, topics: [{ topic: settings.topic, numPartitions: 3, replicationFactor: 1, configEntries: LOG_CONFIG }] })
          .then(() => true)
          .catch(() => false),
    );
    await awaitTopicLeaders(admin, [{ topic: settings.topic, partitions: 3 }]);
    const fresh = workload(82, 5, 30, "2026-11-26T00:00:00Z");
    await produce(settings, fresh.map(observationRecord));

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
    await produce(settings, later.map(observationRecord));
    await waitCaughtUp(settings);
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...fresh, ...later]))).toEqual(exact);
  });
});
