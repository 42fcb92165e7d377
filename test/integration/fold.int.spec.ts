import { until, waitFor } from "../support/wait.js";
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import kafkajs from "kafkajs";
import type { Admin } from "kafkajs";
import type { OutMessage } from "../../src/adapters/kafka/producer.js";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { awaitTopicLeaders } from "../../src/adapters/kafka/topics.js";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { observationRecord } from "../../src/client/producer.js";
import { openSender, produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, sleep, spawnWorker, stopWorker, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { contextOfObservation, observationFingerprint, reducerIdentity, type Observation } from "../../src/core/index.js";
import { MODEL_HEAP_BYTES } from "../../src/fold/identity-model.js";
import type { Settings } from "../../src/config/settings.js";
import { freePort } from "../support/free-port.js";

const { AssignerProtocol } = kafkajs;
const cleanups: (() => Promise<unknown>)[] = [];

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

async function groupAdmin(settings: Settings): Promise<Admin> {
  const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test-watch" }).admin();
  await admin.connect();
  cleanups.push(() => admin.disconnect());
  return admin;
}

/** The group as its coordinator sees it: state, and each member's assigned partitions of the topic. */
async function groupView(admin: Admin, settings: Settings): Promise<{ state: string; members: Map<string, number[]> }> {
  const { groups } = await admin.describeGroups([settings.group]);
  const group = groups[0]!;
  const members = new Map<string, number[]>();
  for (const m of group.members) {
    const assignment = m.memberAssignment.length > 0 ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null;
    members.set(m.memberId, assignment?.assignment[settings.topic] ?? []);
  }
  return { state: group.state, members };
}

async function committedByPartition(admin: Admin, settings: Settings): Promise<Map<number, number>> {
  const [topic] = await admin.fetchOffsets({ groupId: settings.group, topics: [settings.topic] });
  return new Map((topic?.partitions ?? []).map((p) => [p.partition, Math.max(0, Number(p.offset))]));
}
const sum = (m: Map<number, number>) => [...m.values()].reduce((a, b) => a + b, 0);
const committedTotal = async (admin: Admin, settings: Settings) => sum(await committedByPartition(admin, settings));
const logEnd = async (admin: Admin, settings: Settings) => (await admin.fetchTopicOffsets(settings.topic)).reduce((a, p) => a + Number(p.high), 0);


/**
 * Produce `messages` in order, topping the group's backlog (produced - committed) up to
 * 3,000 records whenever it falls under 1,500, until stopped: the workers always have records
 * left to fold (producing outpaces folding several times over, docs/benchmarks.md), so a kill
 * or a rebalance lands mid-stream — which the tests assert rather than assume.
 * `stop()` returns how many were produced.
 */
/**
 * Small batches (16 KiB of a partition per fetch) for the workers of the mid-stream tests: they commit as
 * they go, so a kill or a rebalance finds them with the backlog unfolded (with the default 512 KiB a worker
 * can fold the whole backlog in one round of batches).
 */
const SMALL_BATCHES = { MUFOLD_PARTITION_FETCH_MAX_BYTES: "16384" };

/** Resolves once the sender is open, so the topic exists: reading its offsets before that races the creation (lost on a busy machine). */
async function keepBacklog(settings: Settings, admin: Admin, messages: OutMessage[]): Promise<{ stop(): Promise<number> }> {
  let stopped = false;
  let produced = 0;
  const sender = await openSender(settings);
  const running = (async () => {
    try {
      while (!stopped && produced < messages.length) {
        const backlog = produced - (await committedTotal(admin, settings));
        if (backlog >= 1_500) {
          await sleep(25);
          continue;
        }
        const n = Math.min(3_000 - backlog, messages.length - produced);
        await sender.send(messages.slice(produced, produced + n));
        produced += n;
      }
    } finally {
      await sender.close();
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await running;
      return produced;
    },
  };
}

describe("fold on a real broker and a real Redis", () => {
  it("every Redis packet byte-equals the embedded reducer's packet for its identity", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(11);
    await produce(settings, observations.map(observationRecord));
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
    await produce(settings, observations.map(observationRecord));
    const first = await startFold(settings);
    await waitCaughtUp(settings);
    await first.stop();
    cleanups.pop();
    const before = await readAllPackets(settings);
    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit());
    const versionsBefore = await redis.keys(`${settings.prefix}:*:m`).then((ks) => Promise.all(ks.sort().map((k) => redis.hget(k, "v"))));

    // The group's offsets moved back by an operator: the marks say what is folded, so nothing is fetched again.
    const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-test" });
    const admin = kafka.admin();
    await admin.connect();
    await admin.resetOffsets({ groupId: settings.group, topic: settings.topic, earliest: true });
    const reset = await startFold(settings);
    await waitCaughtUp(settings); // the marks are committed as progress
    expect(reset.counters.consumed).toBe(0);
    await reset.stop();
    cleanups.pop();

    // A crash after the applies and before the seal: Redis has the records but not the marks. Everything is fetched
    // again from the log start and skipped by the identities' watermarks.
    const marks = Object.keys(await redis.hgetall(`${settings.prefix}:control`)).filter((f) => f.startsWith("mark:"));
    expect(marks.length).toBeGreaterThan(0);
    await redis.hdel(`${settings.prefix}:control`, ...marks);
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
    const settings = testSettings({ partitions: 6 });
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(13, 100, 300); // more than the rounds below fold: the backlog never runs dry
    const admin = await groupAdmin(settings);
    const feed = await keepBacklog(settings, admin, observations.map(observationRecord));
    cleanups.push(() => feed.stop());
    let gone = new Set<string>(); // member ids of killed workers (the group keeps them until their session expires)
    for (let round = 0; round < 3; round++) {
      const before = await committedTotal(admin, settings);
      const child = spawnWorker(settings, SMALL_BATCHES);
      cleanups.push(async () => child.exitCode === null && child.signalCode === null && stopWorker(child, "SIGKILL"));
      const joined = await waitFor(`round ${round}: the new worker alone in the group, holding partitions`, async () => {
        const g = await groupView(admin, settings);
        const ids = [...g.members.keys()];
        return g.state === "Stable" && ids.length === 1 && !gone.has(ids[0]!) && g.members.get(ids[0]!)!.length > 0 ? g : undefined;
      });
      gone = new Set(joined.members.keys());
      await waitFor(`round ${round}: the worker committed a batch`, async () => ((await committedTotal(admin, settings)) > before ? true : undefined));
      await stopWorker(child, "SIGKILL");
      // Dead now, so these are final for this worker: it folded some records and left some unfolded.
      const after = await committedTotal(admin, settings);
      const end = await logEnd(admin, settings);
      expect(after, `round ${round}: folded by the killed worker`).toBeGreaterThan(before);
      expect(after, `round ${round}: left unfolded at the kill`).toBeLessThan(end);
    }
    const produced = await feed.stop();
    expect(produced).toBeLessThan(observations.length);
    const last = spawnWorker(settings);
    cleanups.push(() => stopWorker(last));
    await waitCaughtUp(settings, 180_000);
    await expectExact(settings, observations.slice(0, produced));
  });

  it("two workers with a rebalance in the middle reach the same packets", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(14, 100, 400);
    const admin = await groupAdmin(settings);
    const feed = await keepBacklog(settings, admin, observations.map(observationRecord));
    cleanups.push(() => feed.stop());
    const a = spawnWorker(settings, SMALL_BATCHES);
    cleanups.push(() => stopWorker(a));
    const alone = await waitFor("a joined", async () => {
      const g = await groupView(admin, settings);
      return g.state === "Stable" && g.members.size === 1 ? g : undefined;
    });
    const aId = [...alone.members.keys()][0]!;
    await waitFor("a committed a batch", async () => ((await committedTotal(admin, settings)) > 0 ? true : undefined));

    const b = spawnWorker(settings, SMALL_BATCHES); // joins: the group rebalances while a is folding
    cleanups.push(() => stopWorker(b));
    const both = await waitFor("b joined and both hold partitions", async () => {
      const g = await groupView(admin, settings);
      return g.state === "Stable" && g.members.size === 2 && g.members.has(aId) && [...g.members.values()].every((p) => p.length > 0) ? g : undefined;
    });
    const bId = [...both.members.keys()].find((id) => id !== aId)!;
    const atJoin = await committedByPartition(admin, settings);
    expect(sum(atJoin), "records left unfolded when b joined").toBeLessThan(await logEnd(admin, settings));
    const bPartitions = both.members.get(bId)!;
    await waitFor("b folds its partitions", async () => {
      const now = await committedByPartition(admin, settings);
      return bPartitions.some((p) => (now.get(p) ?? 0) > (atJoin.get(p) ?? 0)) ? true : undefined;
    });

    const atLeave = await committedTotal(admin, settings);
    expect(atLeave, "records left unfolded when a left").toBeLessThan(await logEnd(admin, settings));
    await stopWorker(a); // leaves: another rebalance
    await waitFor("b alone holds every partition", async () => {
      const g = await groupView(admin, settings);
      return g.state === "Stable" && g.members.size === 1 && (g.members.get(bId)?.length ?? 0) === settings.partitions ? true : undefined;
    });
    const produced = await feed.stop();
    expect(produced).toBeLessThan(observations.length);
    await waitCaughtUp(settings, 180_000);
    await expectExact(settings, observations.slice(0, produced));
  });

  it("records of one identity spread over every partition (a foreign partitioner) fold exactly", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(15, 4, 50);
    const messages = observations.map((o, i) => ({ ...observationRecord(o), partition: i % settings.partitions }));
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
    await admin.createTopics({ waitForLeaders: false, topics: [{ topic: settings.topic, numPartitions: 2, configEntries: [{ name: "retention.ms", value: "86400000" }] }] });
    await awaitTopicLeaders(admin, [{ topic: settings.topic, partitions: 2 }]);
    await admin.disconnect();
    await expect(FoldWorker.start(settings, quietLog)).rejects.toThrow(/finite retention.*allow-finite-retention/);
    const worker = await startFold({ ...settings, allowFiniteRetention: true });
    expect(worker.workerId).toBeTruthy();
  });

  it("SIGTERM finishes cleanly: the process exits 0 and leaves the group", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    await produce(settings, workload(17, 4, 20).map(observationRecord));
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
    await produce(settings, [...observations.map(observationRecord), { key: null, value: "not json" }]);
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
    // Every identity is cached (far below both bounds): the cache's bytes are its estimate of each, from the payloads kept.
    const kept = new Map<string, Set<string>>();
    for (const o of observations) {
      const identity = reducerIdentity(contextOfObservation(o, settings.reducerVersion));
      if (!kept.has(identity)) kept.set(identity, new Set());
      kept.get(identity)!.add(`${o.observation_id}\u0000${observationFingerprint(o)}`);
    }
    const estimate = [...kept.values()].reduce((sum, payloads) => sum + MODEL_HEAP_BYTES.base + MODEL_HEAP_BYTES.perObservation * payloads.size, 0);
    expect(metrics).toMatch(new RegExp(`^mufold_identities_cached ${kept.size}$`, "m"));
    expect(metrics).toMatch(new RegExp(`^mufold_identity_cache_bytes ${estimate}$`, "m"));
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready", checks: { redis: "ok", kafka: "ok", group: "ok", outage: "ok", position: "ok", parked: "ok" } });
    expect(metrics).toMatch(/^mufold_fold_state\{state="folding"\} 1$/m);
    expect(metrics).toMatch(/^mufold_fold_state\{state="behind_log"\} 0$/m);
    const [identity, packet] = [...expectedPackets(observations)][0]!;
    const res = await fetch(`http://127.0.0.1:${port}/v1/projections/${identity}`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(packet);
  });

  it("Redis lost the generation while the fold was stopped: the next fold rebuilds it from the log start by itself", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(16, 2, 5);
    await produce(settings, observations.map(observationRecord));
    const worker = await startFold(settings);
    await waitCaughtUp(settings);
    await worker.stop();
    cleanups.pop();
    await dropPrefix(settings);
    const again = await startFold(settings);
    await until("the projections rebuilt", async () => comparePackets(await readAllPackets(settings), expectedPackets(observations)).missing.length === 0);
    await until("every partition whole again", () => again.state === "folding");
    await expectExact(settings, observations);
    expect(again.counters.applied).toBe(observations.length);
  });
});
