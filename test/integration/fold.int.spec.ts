import { createServer, type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { FoldWorker } from "../../consumers/fold-worker.js";
import { observationMessage } from "../../producers/observation-message.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, sleep, spawnWorker, stopWorker, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { observationFingerprint, type Observation } from "../../src/core/index.js";
import type { Settings } from "../../src/config.js";

const cleanups: (() => Promise<unknown>)[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

function workload(seed: number, agents = 12, perAgent = 40): Observation[] {
  return [...simulate({ agents, observationsPerAgent: perAgent, duplicateRate: 0.15, conflictRate: 0.03, snapshotEvery: 15, seed })].map((d) => d.observation);
}

async function startFold(settings: Settings): Promise<FoldWorker> {
  const worker = await FoldWorker.start(settings, quietLog);
  cleanups.push(() => worker.stop());
  return worker;
}

async function expectExact(settings: Settings, observations: Observation[]): Promise<void> {
  const diff = comparePackets(await readAllPackets(settings), expectedPackets(observations));
  expect(diff).toEqual({ missing: [], extra: [], different: [] });
}

describe("fold on a real broker and a real Redis", () => {
  it("every Redis packet byte-equals the embedded reducer's packet for its identity", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(11);
    await produce(settings, observations.map(observationMessage));
    await startFold(settings);
    await waitCaughtUp(settings);
    const packets = await readAllPackets(settings);
    expect(packets.size).toBeGreaterThan(20);
    await expectExact(settings, observations);
  });

  it("redelivered records change nothing: not a byte, not a version", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(12, 8, 30);
    await produce(settings, observations.map(observationMessage));
    const first = await startFold(settings);
    await waitCaughtUp(settings);
    await first.stop();
    cleanups.pop();
    const before = await readAllPackets(settings);
    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit());
    const versionsBefore = await redis.keys(`${settings.prefix}:*:m`).then((ks) => Promise.all(ks.sort().map((k) => redis.hget(k, "v"))));

    // Crash before commit, seen from Kafka: the group's offsets go back to 0.
    const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-test" });
    const admin = kafka.admin();
    await admin.connect();
    await admin.resetOffsets({ groupId: settings.group, topic: settings.topic, earliest: true });
    await admin.disconnect();

    const second = await startFold(settings);
    await waitCaughtUp(settings);
    expect(second.counters.consumed).toBe(observations.length);
    expect(second.counters.applied).toBe(0);
    expect(second.counters.duplicatesSkipped).toBe(observations.length);
    expect(await readAllPackets(settings)).toEqual(before);
    const versionsAfter = await redis.keys(`${settings.prefix}:*:m`).then((ks) => Promise.all(ks.sort().map((k) => redis.hget(k, "v"))));
    expect(versionsAfter).toEqual(versionsBefore);
  });

  it("a worker killed with SIGKILL mid-stream and restarted ends with the same packets", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(13, 30, 60);
    await produce(settings, observations.map(observationMessage));
    for (let round = 0; round < 3; round++) {
      const child = spawnWorker(settings);
      await sleep(1500 + round * 700);
      await stopWorker(child, "SIGKILL");
    }
    const last = spawnWorker(settings);
    cleanups.push(() => stopWorker(last));
    await waitCaughtUp(settings, 180_000);
    await expectExact(settings, observations);
  });

  it("two workers with a rebalance in the middle reach the same packets", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(14, 20, 60);
    const half = Math.floor(observations.length / 2);
    await produce(settings, observations.slice(0, half).map(observationMessage));
    const a = spawnWorker(settings);
    cleanups.push(() => stopWorker(a));
    await sleep(1500);
    const b = spawnWorker(settings); // joins: the group rebalances while a is folding
    cleanups.push(() => stopWorker(b));
    await produce(settings, observations.slice(half).map(observationMessage));
    await sleep(1000);
    await stopWorker(a); // leaves: another rebalance
    await waitCaughtUp(settings, 180_000);
    await expectExact(settings, observations);
  });

  it("records of one identity spread over every partition (a foreign partitioner) fold exactly", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(15, 4, 50);
    const messages = observations.map((o, i) => ({ ...observationMessage(o), partition: i % settings.partitions }));
    await produce(settings, messages);
    await startFold(settings);
    await startFold(settings);
    await waitCaughtUp(settings);
    await expectExact(settings, observations);
  });

  it("refuses a topic with finite retention unless told otherwise", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-test" });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: settings.topic, numPartitions: 2, configEntries: [{ name: "retention.ms", value: "86400000" }] }] });
    await admin.disconnect();
    await expect(FoldWorker.start(settings, quietLog)).rejects.toThrow(/finite retention.*allow-finite-retention/);
    const worker = await startFold({ ...settings, allowFiniteRetention: true });
    expect(worker.workerId).toBeTruthy();
  });

  it("SIGTERM finishes cleanly: the process exits 0 and leaves the group", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    await produce(settings, workload(17, 4, 20).map(observationMessage));
    const child = spawnWorker(settings);
    await waitCaughtUp(settings);
    expect(await stopWorker(child, "SIGTERM")).toBe(0);
    const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-test" });
    const admin = kafka.admin();
    await admin.connect();
    const { groups } = await admin.describeGroups([settings.group]);
    await admin.disconnect();
    expect(groups[0]!.members).toHaveLength(0);
  });

  it("a fold process with --http-port exposes its metrics, health and the readback API", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(18, 10, 40);
    await produce(settings, [...observations.map(observationMessage), { key: null, value: "not json" }]);
    const port = await freePort();
    const child = spawnWorker(settings, { MUFOLD_HTTP_PORT: String(port) });
    cleanups.push(() => stopWorker(child));
    await waitCaughtUp(settings);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`^mufold_records_consumed_total ${observations.length + 1}$`, "m"));
    expect(metrics).toMatch(/^mufold_dead_letters_total\{reason="value_not_json"\} 1$/m);
    const applied = Number(/^mufold_deliveries_applied_total (\d+)$/m.exec(metrics)![1]);
    expect(applied).toBe(observations.length);
    const prints = new Map<string, Set<string>>();
    for (const o of observations) {
      if (!prints.has(o.observation_id)) prints.set(o.observation_id, new Set());
      prints.get(o.observation_id)!.add(observationFingerprint(o));
    }
    const conflicting = [...prints.values()].reduce((a, fps) => a + fps.size - 1, 0);
    expect(conflicting).toBeGreaterThan(0);
    expect(metrics).toMatch(new RegExp(`^mufold_conflicting_deliveries_total ${conflicting}$`, "m"));
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready", checks: { redis: "ok", kafka: "ok", group: "ok" } });
    const [identity, packet] = [...expectedPackets(observations)][0]!;
    const res = await fetch(`http://127.0.0.1:${port}/v1/projections/${identity}`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(packet);
  });

  it("refuses to start when Redis lost the generation but the group has committed offsets", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    await produce(settings, workload(16, 2, 5).map(observationMessage));
    const worker = await startFold(settings);
    await waitCaughtUp(settings);
    await worker.stop();
    cleanups.pop();
    await dropPrefix(settings);
    await expect(FoldWorker.start(settings, quietLog)).rejects.toThrow(/replay --promote/);
  });
});
