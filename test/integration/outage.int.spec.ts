/**
 * Outages are ridden out, not crashed on: Redis stopped for 40 s while the
 * fold works holds its batch (uncommitted, not ready) and resumes without a
 * restart; past the configured tolerance the fold exits with one clear line.
 * Redis here is a private server (its own port and AOF), so stopping it
 * touches no other test.
 */
import { until } from "../support/wait.js";
import { afterEach, describe, expect, it } from "vitest";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { ensureSetup } from "../../src/adapters/redis/functions.js";
import type { Observation } from "../../src/core/index.js";
import { PrivateRedis } from "../support/private-redis.js";
import { comparePackets, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

function workload(seed: number, startTime = "2026-11-01T00:00:00Z"): Observation[] {
  return [...simulate({ agents: 5, observationsPerAgent: 20, snapshotEvery: 10, seed, startTime })].map((d) => d.observation);
}


describe("outages", () => {
  it("Redis stopped for 40 s: the fold holds its batch, reports not ready, and resumes without a restart", async () => {
    const redis = await PrivateRedis.start();
    cleanups.push(() => redis.remove());
    const settings = testSettings({ partitions: 2, redisUrl: redis.url });
    await ensureSetup(settings);
    const first = workload(111);
    await produce(settings, first.map(observationRecord));
    const worker = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => worker.stop());
    let crashed: unknown;
    void worker.crashed.then((e) => (crashed = e));
    await waitCaughtUp(settings);

    await redis.down();
    const more = workload(112, "2026-11-20T00:00:00Z");
    await produce(settings, more.map(observationRecord));
    await until("the fold to report the Redis outage", () => "redis" in worker.outages.ongoing());
    const downAt = Date.now();
    await until("40 s of outage", () => Date.now() - downAt >= 40_000, 50_000);
    expect(crashed).toBeUndefined();
    expect(Object.keys(worker.outages.ongoing())).toContain("redis");
    await expect(worker.readinessChecks().outage!()).rejects.toThrow(/redis unreachable for \d+s/);
    await redis.up();
    await waitCaughtUp(settings, 60_000);
    expect(crashed).toBeUndefined();
    expect(worker.outages.ongoing()).toEqual({});
    await expect(worker.readinessChecks().outage!()).resolves.toBeUndefined();
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...first, ...more]))).toEqual({ missing: [], extra: [], different: [] });
  });

  it("past the outage tolerance the fold gives up with one clear error", async () => {
    const redis = await PrivateRedis.start();
    cleanups.push(() => redis.remove());
    const settings = testSettings({ partitions: 1, redisUrl: redis.url, outageToleranceSeconds: 3 });
    await ensureSetup(settings);
    const worker = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => worker.stop());
    await redis.down();
    await produce(settings, workload(113).map(observationRecord));
    const error = (await Promise.race([worker.crashed, new Promise((r) => setTimeout(() => r(new Error("still running after 60s")), 60_000))])) as Error;
    expect(error.message).toMatch(/redis unreachable for more than 3s/);
  });
});
