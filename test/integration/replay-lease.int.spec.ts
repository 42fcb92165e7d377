/**
 * A replay never strands the fleet and never waits forever: its pause has a
 * lease that runs out when the replaying process dies, SIGINT releases it at
 * once, and a log it cannot read ends it within seconds with the cause.
 * A member of the fold group that never acknowledges the pause (a kafkajs
 * consumer with every partition paused) holds the promote in its pause, so the
 * kill lands inside it every time.
 */
import { until } from "../support/wait.js";
import { pausedMember } from "../support/group-members.js";
import { settingsEnv } from "../../consumers/fold/fold-process.js";
import { spawn, type ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { runReplay } from "../../consumers/replay/replay.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { createKafka } from "../../src/adapters/kafka/client.js";
import type { Settings } from "../../src/config/settings.js";
import type { Observation } from "../../src/core/index.js";
import { produceRawBatch } from "../support/kafka-raw.js";
import { BIN, comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, spawnWorker, stopWorker, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { encodeRecords, lz4StoredFrame, recordBatch } from "../support/record-batch.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

const LEASE_SECONDS = 4;

function workload(seed: number, startTime = "2026-11-01T00:00:00Z"): Observation[] {
  return [...simulate({ agents: 6, observationsPerAgent: 25, scopesPerAgent: 2, snapshotEvery: 10, seed, startTime })].map((d) => d.observation);
}



async function members(settings: Settings): Promise<number> {
  const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test-members" }).admin();
  await admin.connect();
  try {
    return (await admin.describeGroups([settings.group])).groups[0]?.members.length ?? 0;
  } finally {
    await admin.disconnect();
  }
}

function spawnReplay(settings: Settings, args: string[]): { child: ChildProcess; exited: Promise<number | null>; stderr: () => string } {
  const child = spawn(process.execPath, [BIN, "replay", ...args], {
    env: { ...process.env, ...settingsEnv(settings), MUFOLD_PAUSE_LEASE_SECONDS: String(LEASE_SECONDS), MUFOLD_LOG_LEVEL: "error" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  cleanups.push(async () => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  return { child, exited, stderr: () => err };
}

/** A fold, a zombie member, and a replay --promote spawned and caught inside its pause. */
async function promoteHeldInPause(settings: Settings, redis: Redis) {
  const observations = workload(91);
  await produce(settings, observations.map(observationRecord));
  const worker = spawnWorker(settings, { MUFOLD_PAUSE_LEASE_SECONDS: String(LEASE_SECONDS) });
  cleanups.push(() => stopWorker(worker));
  await waitCaughtUp(settings);
  const zombie = await pausedMember(settings, "mufold-test-zombie");
  cleanups.push(() => zombie.disconnect());
  await until("the zombie to join", async () => (await members(settings)) === 2);
  const liveBefore = await redis.hget(`${settings.prefix}:control`, "generation");
  const replay = spawnReplay(settings, ["--promote"]);
  await until("the promote to pause the fleet", async () => (await redis.hget(`${settings.prefix}:control`, "paused")) === "1");
  return { observations, worker, zombie, replay, liveBefore };
}

describe("replay: leases, signals and deadlines", () => {
  it("a replay killed mid-promote: the folds resume when its lease runs out, nothing is lost, verify passes", async () => {
    const settings = testSettings({ partitions: 3 });
    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit(), () => dropPrefix(settings));
    const { observations, zombie, replay, liveBefore } = await promoteHeldInPause(settings, redis);
    replay.child.kill("SIGKILL");
    await replay.exited;
    await zombie.disconnect();
    cleanups.pop();
    // Nothing was promoted, and the pause is still set: only its lease can end it.
    expect(await redis.hget(`${settings.prefix}:control`, "generation")).toBe(liveBefore);
    expect(await redis.hget(`${settings.prefix}:control`, "paused")).toBe("1");
    const more = workload(92, "2026-11-20T00:00:00Z");
    await produce(settings, more.map(observationRecord));
    await waitCaughtUp(settings, 60_000);
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...observations, ...more]))).toEqual({ missing: [], extra: [], different: [] });
    const verify = await runReplay(settings, { verify: true, promote: false }, quietLog);
    expect({ verified: verify.verified, mismatches: verify.mismatches }).toEqual({ verified: true, mismatches: 0 });
  });

  it("SIGINT during a promote releases the pause at once, drops the shadow and exits non-zero with one line", async () => {
    const settings = testSettings({ partitions: 3 });
    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit(), () => dropPrefix(settings));
    const { replay, liveBefore } = await promoteHeldInPause(settings, redis);
    replay.child.kill("SIGINT");
    const code = await replay.exited;
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(replay.stderr()).toMatch(/stopped by a signal/);
    expect(await redis.hget(`${settings.prefix}:control`, "paused")).toBe("0");
    expect(await redis.hget(`${settings.prefix}:control`, "generation")).toBe(liveBefore);
    expect((await redis.keys(`${settings.prefix}:g*:index`)).sort()).toEqual([`${settings.prefix}:g${liveBefore}:index`]);
  });

  it("a log the replay cannot read (an undecodable batch) ends it with the cause, not at the stall deadline", async () => {
    const settings = testSettings({ partitions: 1 });
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(93).slice(0, 20);
    await produce(settings, observations.map(observationRecord));
    const records = observations.slice(0, 2).map((o) => {
      const m = observationRecord(o);
      return { key: String(m.key), value: String(m.value), headers: { schema: "memory_utility_observation_v0" } };
    });
    await produceRawBatch(settings.brokers, settings.topic, 0, recordBatch({ codec: 3, count: 2, payload: lz4StoredFrame(encodeRecords(records), { corruptChecksum: true }) }));
    // With a stall deadline far beyond the test's timeout, only the parked partition can end the wait.
    await expect(runReplay(settings, { verify: false, promote: false, stallSeconds: 3_600 }, quietLog)).rejects.toThrow(/cannot be decoded/);
  });
});
