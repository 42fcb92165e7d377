/**
 * `replay --workers 2`: the partitions are split in two shares, one read by
 * the replay process and one by a worker process, both writing one
 * generation. It must rebuild exactly what one process does, also for an
 * identity whose records are in two partitions (so written by both); a worker
 * that dies ends the replay with its cause and the shadow is dropped; a signal
 * to the replay stops its worker; a promote with two readers hands over to the
 * fold without losing or doubling anything.
 * Workers run the built CLI (dist/): `npm run build` first.
 */
import { spawn } from "node:child_process";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { runReplay } from "../../consumers/replay/replay.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { connectRedis } from "../../src/adapters/redis/connect.js";
import { RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import type { Settings } from "../../src/config/settings.js";
import { contextOfObservation, reducerIdentity, type Observation } from "../../src/core/index.js";
import { settingsEnv } from "../../consumers/fold/fold-process.js";
import { BIN, comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, spawnWorker, stopWorker, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { until, waitFor } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

const PARTITIONS = 4;

function workload(seed: number, startTime = "2026-11-01T00:00:00Z"): Observation[] {
  return [...simulate({ agents: 8, observationsPerAgent: 30, scopesPerAgent: 2, snapshotEvery: 10, duplicateRate: 0.15, conflictRate: 0.05, seed, startTime })].map((d) => d.observation);
}

const identityOf = (o: Observation) => reducerIdentity(contextOfObservation(o, "memory_utility_reducer_v0"));

/**
 * A workload split in two: one identity's observations (`split`), to be sent alternately to partitions 0 and 1
 * (which two readers split as 0,2 and 1,3), and the rest (`keyed`), sent keyed by scope.
 */
function spreadWorkload(seed: number, startTime?: string): { keyed: Observation[]; split: Observation[] } {
  const all = workload(seed, startTime);
  const straddling = identityOf(all[0]!);
  return { keyed: all.filter((o) => identityOf(o) !== straddling), split: all.filter((o) => identityOf(o) === straddling) };
}

async function produceSpread(settings: Settings, { keyed, split }: { keyed: Observation[]; split: Observation[] }): Promise<void> {
  await produce(settings, [...keyed.map(observationRecord), ...split.map((o, i) => ({ ...observationRecord(o), partition: i % 2 }))]);
}

/** Partitions whose watermark an identity holds in a generation (from its meta hash). */
async function watermarkPartitions(store: RedisIdentityStore, generation: number, identity: string): Promise<string[]> {
  return Object.keys(await store.meta(generation, identity))
    .filter((k) => k.startsWith("w:"))
    .sort();
}

function spawnReplay(settings: Settings, args: string[]) {
  const child = spawn(process.execPath, [BIN, "replay", ...args], {
    env: { ...process.env, ...settingsEnv(settings), MUFOLD_LOG_LEVEL: "info" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  /** The worker processes it spawned (worker 1 is the replay process itself), from its own log lines. */
  const workers = () =>
    err
      .split("\n")
      .filter((l) => l.includes('"replay worker spawned"'))
      .map((l) => JSON.parse(l) as { worker: number; pid: number });
  return { child, exited, stderr: () => err, workers };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * A topic whose partition 0 ends in a transaction left open: a replay's worker reading partition 0 cannot reach
 * its target until it ends, so the replay is held mid-rebuild for as long as the test needs.
 */
async function topicHeldOpen(settings: Settings): Promise<void> {
  await produceSpread(settings, spreadWorkload(71));
  const producer = createKafka({ brokers: settings.brokers, clientId: "mufold-test-tx" }).producer({ transactionalId: `${settings.group}.tx`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const tx = await producer.transaction();
  await tx.send({ topic: settings.topic, messages: workload(73).slice(0, 3).map((o) => ({ ...observationRecord(o), partition: 0 })) as never });
  cleanups.push(async () => {
    await tx.abort();
    await producer.disconnect();
  });
}

/** The generation a running replay builds (its build token in the control hash), once it holds identities. */
async function shadowInProgress(redis: Redis, settings: Settings): Promise<number> {
  return waitFor("the replay to write its shadow generation", async () => {
    const fields = await redis.hkeys(`${settings.prefix}:control`);
    const building = fields.find((f) => f.startsWith("building:"));
    if (building === undefined) return undefined;
    const generation = Number(building.slice("building:".length));
    return (await redis.scard(`${settings.prefix}:g${generation}:index`)) > 0 ? generation : undefined;
  });
}

/**
 * `replay --workers 2` held mid-rebuild on a topic of its own (partition 0 ends in an open transaction): once its
 * shadow generation holds identities and its one worker process is spawned.
 */
async function replayHeldMidRebuild() {
  const settings = testSettings({ partitions: PARTITIONS });
  const redis = new Redis(settings.redisUrl);
  cleanups.push(() => redis.quit(), () => dropPrefix(settings));
  await topicHeldOpen(settings);
  const replay = spawnReplay(settings, ["--workers", "2"]);
  const generation = await shadowInProgress(redis, settings);
  const workers = await waitFor("the worker to be spawned", async () => (replay.workers().length === 1 ? replay.workers() : undefined));
  return { settings, redis, replay, generation, workers };
}

describe("replay --workers 2", () => {
  it("verifies byte-equal with the live fold, an identity in two partitions included, and rebuilds exactly the reducer's packets", async () => {
    const settings = testSettings({ partitions: PARTITIONS });
    const redis = connectRedis(settings.redisUrl);
    const store = new RedisIdentityStore(redis, settings.prefix);
    cleanups.push(() => redis.quit(), () => dropPrefix(settings));
    const { keyed, split } = spreadWorkload(61);
    expect(split.length).toBeGreaterThan(4);
    await produceSpread(settings, { keyed, split });
    const fold = spawnWorker(settings);
    cleanups.push(() => stopWorker(fold));
    await waitCaughtUp(settings);
    const expected = expectedPackets([...keyed, ...split]);

    const summary = await runReplay(settings, { verify: true, promote: false, keepShadow: true, workers: 2 }, quietLog);
    cleanups.push(() => store.dropGeneration(summary.rebuiltGeneration));
    expect({ workers: summary.workers, verified: summary.verified, mismatches: summary.mismatches }).toEqual({ workers: 2, verified: true, mismatches: 0 });
    expect(summary.verify?.compared).toBe(expected.size);
    expect(summary.records).toBe(keyed.length + split.length);

    // The rebuilt generation itself, identity by identity, against the reducer over the log.
    const rebuilt = new Map<string, string>();
    for (const id of await store.listIdentities(summary.rebuiltGeneration)) rebuilt.set(id, (await store.read(summary.rebuiltGeneration, id)) ?? "<missing>");
    expect(comparePackets(rebuilt, expected)).toEqual({ missing: [], extra: [], different: [] });
    // The straddling identity really was written from both partitions (so by this process and the worker).
    expect(await watermarkPartitions(store, summary.rebuiltGeneration, identityOf(split[0]!))).toEqual([`w:${settings.topic}:0`, `w:${settings.topic}:1`]);
  });

  it("a worker killed mid-rebuild ends the replay non-zero with its cause and the shadow is dropped", async () => {
    const { settings, redis, replay, generation, workers } = await replayHeldMidRebuild();
    const [worker] = workers;
    expect(worker!.worker).toBe(2);
    process.kill(worker!.pid, "SIGKILL");

    const code = await replay.exited;
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(replay.stderr()).toMatch(new RegExp(`replay worker 2 of 2 \\(pid ${worker!.pid}\\) was killed by SIGKILL`));
    expect(await redis.keys(`${settings.prefix}:g${generation}:*`)).toEqual([]);
    expect((await redis.hkeys(`${settings.prefix}:control`)).filter((f) => f.endsWith(`:${generation}`) || f.includes(`:${generation}:`))).toEqual([]);
  });

  it("SIGINT to the replay stops its worker, drops the shadow and exits non-zero", async () => {
    const { settings, redis, replay, generation, workers } = await replayHeldMidRebuild();
    replay.child.kill("SIGINT");

    const code = await replay.exited;
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(replay.stderr()).toMatch(/stopped by a signal/);
    for (const w of workers) expect(alive(w.pid)).toBe(false);
    expect(await redis.keys(`${settings.prefix}:g${generation}:*`)).toEqual([]);
  });

  it("a replay killed outright: its worker stops by itself (its channel closes)", async () => {
    const { replay, workers } = await replayHeldMidRebuild();
    replay.child.kill("SIGKILL");
    await replay.exited;
    await until("the worker to exit", () => workers.every((w) => !alive(w.pid)));
  });

  it("--promote with two readers: the fold continues on the rebuilt generation, exactly", async () => {
    const settings = testSettings({ partitions: PARTITIONS });
    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit(), () => dropPrefix(settings));
    const { keyed: first, split } = spreadWorkload(81);
    await produceSpread(settings, { keyed: first, split });
    const fold = spawnWorker(settings);
    cleanups.push(() => stopWorker(fold));
    await waitCaughtUp(settings);

    const summary = await runReplay(settings, { verify: true, promote: true, workers: 2, dropAfterSeconds: 0 }, quietLog);
    expect({ verified: summary.verified, mismatches: summary.mismatches, promoted: summary.promoted }).toEqual({ verified: true, mismatches: 0, promoted: true });
    expect(await redis.hget(`${settings.prefix}:control`, "generation")).toBe(String(summary.rebuiltGeneration));

    // The fold goes on from its committed offsets into the promoted generation: nothing lost, nothing doubled
    // (redeliveries of the straddling identity into both partitions included).
    const more = workload(83, "2026-11-20T00:00:00Z");
    await produceSpread(settings, { keyed: more, split: split.slice(0, 4) });
    await waitCaughtUp(settings);
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...first, ...split, ...more, ...split.slice(0, 4)]))).toEqual({ missing: [], extra: [], different: [] });
  });
});
