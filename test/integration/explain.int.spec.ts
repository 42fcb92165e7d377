/**
 * Answers about the past beyond offsets (issue 36): as-of reads by time, explain and diff, through the library
 * and the CLI, against a real fold. Records carry producer timestamps out of offset order (CreateTime). The
 * expected side is the test's own: the records read back from the topic, filtered here, reduced by the
 * embedded reducer (test/support/oracle.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { observationRecord } from "../../src/client/producer.js";
import { ProjectionReader } from "../../src/client/readback.js";
import { AsOfNotAvailableError } from "../../src/client/past.js";
import { contextOfObservation, parsePyJson, reducerIdentity, validateObservation, type Observation } from "../../src/core/index.js";
import type { Settings } from "../../src/config/settings.js";
import { Prng, simulate } from "../../producers/simulation.js";
import { produce } from "../../producers/produce.js";
import { runMufold, dropPrefix, expectedPackets, quietLog, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { topicRecords } from "../support/topic-records.js";
import { createTopics, deleteTopics } from "../support/foreign/foreign.js";
import { until } from "../support/wait.js";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { offsetIndexKey } from "../../src/adapters/redis/keys.js";

async function topicExists(s: Settings): Promise<boolean> {
  const admin = createKafka({ brokers: s.brokers, clientId: "mufold-test-explain" }).admin();
  await admin.connect();
  try {
    return (await admin.listTopics()).includes(s.topic);
  } finally {
    await admin.disconnect();
  }
}

interface Placed {
  observation: Observation;
  partition: number;
  offset: bigint;
  timestamp: number;
}


let settings: Settings;
let worker: FoldWorker;
let redis: Redis;
let reader: ProjectionReader;
let env: Record<string, string>;
const byIdentity = new Map<string, Placed[]>();
/** A time no clock has reached: past what the fold can have folded. */
const FUTURE = new Date("2999-01-01T00:00:00Z");

beforeAll(async () => {
  settings = testSettings({ partitions: 3 });
  const rng = new Prng(136);
  const sent = [...simulate({ agents: 6, observationsPerAgent: 50, duplicateRate: 0.2, conflictRate: 0.06, snapshotEvery: 1_000, seed: 136 })].map((d) => d.observation);
  // One fixed past day, in no particular order: the producers' clocks, as CreateTime keeps them (the topic keeps
  // records of any age: its retention is infinite).
  const base = Date.parse("2026-01-01T00:00:00Z");
  await produce(
    settings,
    sent.map((o) => ({ ...observationRecord(o), timestamp: String(base + rng.int(0, 86_400_000)) })),
  );
  worker = await FoldWorker.start(settings, quietLog);
  await waitCaughtUp(settings);
  for (const r of await topicRecords(settings)) {
    const observation = validateObservation(parsePyJson(r.value.toString("utf8")));
    const identity = reducerIdentity(contextOfObservation(observation, settings.reducerVersion));
    let list = byIdentity.get(identity);
    if (list === undefined) byIdentity.set(identity, (list = []));
    list.push({ observation, partition: r.partition, offset: r.offset, timestamp: r.timestamp });
  }
  redis = new Redis(settings.redisUrl);
  reader = new ProjectionReader(redis, settings.prefix, settings.reducerVersion, settings.topic);
  env = { REDIS_URL: settings.redisUrl, MUFOLD_PREFIX: settings.prefix, MUFOLD_TOPIC: settings.topic };
}, 180_000);

afterAll(async () => {
  await worker?.stop().catch(() => undefined);
  await redis?.quit().catch(() => undefined);
  if (settings !== undefined) await dropPrefix(settings);
});

const oracle = (chosen: readonly Placed[], identity: string) => expectedPackets(chosen.map((p) => p.observation), settings.reducerVersion).get(identity);

describe("as of a time", () => {
  it("is the reducer over the identity's records whose timestamp is at or before it, out of offset order included", async () => {
    const rng = new Prng(137);
    let compared = 0;
    let outOfOrder = 0;
    for (const [identity, placed] of byIdentity) {
      if (placed.some((p, i) => i > 0 && p.timestamp < placed[i - 1]!.timestamp)) outOfOrder++;
      for (let i = 0; i < 5; i++) {
        const time = rng.pick(placed).timestamp;
        const chosen = placed.filter((p) => p.timestamp <= time);
        const got = await reader.get(identity, { asOf: { time: new Date(time).toISOString() } });
        expect(got?.text).toBe(oracle(chosen, identity));
        expect(got?.asOf?.deliveries).toBe(chosen.length);
        expect(got?.asOf?.used).toEqual([{ partition: placed[0]!.partition, offset: chosen.map((p) => p.offset).reduce((a, b) => (a > b ? a : b)) }]);
        compared++;
      }
      // After every record: the live packet.
      const latest = Math.max(...placed.map((p) => p.timestamp));
      expect((await reader.get(identity, { asOf: { time: new Date(latest) } }))?.text).toBe(await reader.read(identity));
    }
    expect(compared).toBeGreaterThan(20);
    expect(outOfOrder, "identities whose timestamps go back").toBeGreaterThan(0);

    const [identity, placed] = [...byIdentity][0]!;
    const time = placed[5]!.timestamp;
    const ok = await runMufold(["read", "--identity", identity, "--as-of-time", new Date(time).toISOString()], env);
    expect(ok.stderr).toBe("");
    expect(ok.stdout).toBe(`${oracle(placed.filter((p) => p.timestamp <= time), identity)}\n`);
    const future = await runMufold(["read", "--identity", identity, "--as-of-time", FUTURE.toISOString()], env);
    expect(future.code).toBe(4);
    expect(future.stderr).toMatch(/as_of_not_available: .* is later than now/);
    await expect(reader.get(identity, { asOf: { time: FUTURE } })).rejects.toBeInstanceOf(AsOfNotAvailableError);

  });
});

describe("explain", () => {
  it("lists every delivery of the identity once, and its counts are the packet's counters (library and CLI)", async () => {
    for (const [identity, placed] of byIdentity) {
      const explanation = (await reader.explain(identity))!;
      expect(explanation.deliveries.map((d) => `${d.partition}:${d.offset}`)).toEqual(placed.map((p) => `${p.partition}:${p.offset}`));
      expect(explanation.deliveries.map((d) => d.observation_id)).toEqual(placed.map((p) => p.observation.observation_id));
      expect(explanation.deliveries.map((d) => d.timestamp)).toEqual(placed.map((p) => p.timestamp));
      const packet = JSON.parse(oracle(placed, identity)!) as Record<string, number>;
      expect(explanation.text).toBe(oracle(placed, identity));
      const decided = (decision: string) => explanation.deliveries.filter((d) => d.decision === decision).length;
      expect(decided("accepted")).toBe(packet.accepted_observation_count);
      expect(explanation.deliveries.filter((d) => d.repeat).length).toBe(packet.duplicate_observation_count);
      expect(decided("conflicting")).toBe(packet.rejected_observation_count);
      expect(decided("accepted") + decided("duplicate") + decided("conflicting")).toBe(placed.length);
    }

    const [identity, placed] = [...byIdentity].find(([, p]) => p.length > 10)!;
    const json = await runMufold(["explain", "--identity", identity, "--json"], env);
    expect(json.stderr).toBe("");
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { deliveries: { partition: number; offset: number; observation_id: string; decision: string }[]; counts: Record<string, number> };
    expect(parsed.deliveries.map((d) => `${d.partition}:${d.offset}:${d.observation_id}`)).toEqual(placed.map((p) => `${p.partition}:${p.offset}:${p.observation.observation_id}`));
    expect(parsed.deliveries.every((d) => ["accepted", "duplicate", "conflicting"].includes(d.decision))).toBe(true);
    const table = await runMufold(["explain", "--identity", identity], env);
    expect(table.code).toBe(0);
    const lines = table.stdout.split("\n");
    expect(lines[0]).toContain(identity);
    expect(lines.filter((l) => /^\d+\s+\d+\s+\d{4}-/.test(l))).toHaveLength(placed.length);
    const point = placed[4]!;
    const asOf = await runMufold(["explain", "--identity", identity, "--as-of-offset", `${point.partition}:${point.offset}`, "--json"], env);
    expect((JSON.parse(asOf.stdout) as { deliveries: unknown[] }).deliveries).toHaveLength(5);

    expect((await runMufold(["explain", "--identity", `mur_${"0".repeat(64)}`], env)).code).toBe(3);
    expect((await runMufold(["explain", "--identity", identity, "--as-of-offset", `${point.partition}:99999999`], env)).code).toBe(4);
    const malformed = await runMufold(["explain", "--identity", identity, "--as-of-time", "noon"], env);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain("ISO 8601");
  });
});

describe("diff", () => {
  it("names what changed between two points and the deliveries between them", async () => {
    const [identity, placed] = [...byIdentity].find(([, p]) => p.length > 20)!;
    const from = placed[3]!;
    const to = placed[15]!;
    const diff = (await reader.diff(identity, { partition: from.partition, offset: from.offset }, { partition: to.partition, offset: to.offset }))!;
    expect(diff.deliveries.added.map((d) => d.offset)).toEqual(placed.slice(4, 16).map((p) => p.offset));
    const a = JSON.parse(oracle(placed.slice(0, 4), identity)!) as { accepted_observation_count: number; subjects: { subject_id: string }[] };
    const b = JSON.parse(oracle(placed.slice(0, 16), identity)!) as { accepted_observation_count: number; subjects: { subject_id: string }[] };
    expect(diff.counters.accepted_observation_count).toEqual(
      a.accepted_observation_count === b.accepted_observation_count ? undefined : { from: a.accepted_observation_count, to: b.accepted_observation_count },
    );
    const before = new Set(a.subjects.map((s) => s.subject_id));
    expect(diff.subjects.added).toEqual(b.subjects.map((s) => s.subject_id).filter((id) => !before.has(id)).sort());

    const json = await runMufold(["diff", "--identity", identity, "--from", `${from.partition}:${from.offset}`, "--to", `${to.partition}:${to.offset}`, "--json"], env);
    expect(json.stderr).toBe("");
    const parsed = JSON.parse(json.stdout) as { deliveries: { added: { offset: number }[] }; subjects: { added: string[] } };
    expect(parsed.deliveries.added.map((d) => BigInt(d.offset))).toEqual(placed.slice(4, 16).map((p) => p.offset));
    expect(parsed.subjects.added).toEqual(diff.subjects.added);
    // Whole history against the live packet: no --to is every delivery.
    const whole = (await reader.diff(identity, undefined, undefined))!;
    expect(whole.to.text).toBe(await reader.read(identity));
    expect(whole.deliveries.added).toHaveLength(placed.length);
    const text = await runMufold(["diff", "--identity", identity], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`deliveries that changed it (${placed.length}):`);
  });
});

describe("an index written before it kept timestamps", () => {
  it("cannot answer a time (exit 4, naming the replay that rebuilds it); an offset it still can", async () => {
    // As 0.2.0's first folds wrote it: the entries are rewritten here without their "/<ms>".
    const [old, oldPlaced] = [...byIdentity][1]!;
    const key = offsetIndexKey(settings.prefix, await reader.generation(), old);
    const entries = await redis.lrange(key, 0, -1);
    await redis.del(key);
    await redis.rpush(key, ...entries.map((e) => e.replace(/\/\d+/, "")));
    const byTime = await runMufold(["read", "--identity", old, "--as-of-time", new Date(oldPlaced[0]!.timestamp).toISOString()], env);
    expect(byTime.code).toBe(4);
    expect(byTime.stderr).toMatch(/as_of_not_available: .*indexed without a timestamp .*a replay rebuilds it/);
    await expect(reader.explain(old, { asOf: { time: new Date(oldPlaced[0]!.timestamp) } })).rejects.toBeInstanceOf(AsOfNotAvailableError);
    const last = oldPlaced.at(-1)!;
    expect((await reader.get(old, { asOf: { partition: last.partition, offset: last.offset } }))?.text).toBe(await reader.read(old));
  });
});

describe("a topic deleted and recreated", () => {
  it("is not the log the live generation folded: read as of a point, explain and diff exit 4 naming it, as verify refuses to compare", async () => {
    const own = testSettings({ partitions: 1 });
    const sent = [...simulate({ agents: 1, observationsPerAgent: 12, duplicateRate: 0, conflictRate: 0, snapshotEvery: 1_000, seed: 139 })].map((d) => d.observation);
    await produce(own, sent.map(observationRecord));
    const fold = await FoldWorker.start(own, quietLog);
    try {
      await waitCaughtUp(own);
    } finally {
      await fold.stop();
    }
    const identity = reducerIdentity(contextOfObservation(sent[0]!, own.reducerVersion));
    const ownEnv = { REDIS_URL: own.redisUrl, MUFOLD_PREFIX: own.prefix, MUFOLD_TOPIC: own.topic, KAFKA_BROKERS: own.brokers.join(",") };
    try {
      expect((await runMufold(["explain", "--identity", identity, "--json"], ownEnv)).code).toBe(0);
      await deleteTopics(own.brokers, [own.topic]);
      await until("the topic to be gone", async () => !(await topicExists(own)), 30_000);
      const gone = await runMufold(["explain", "--identity", identity], ownEnv);
      expect(gone.code).toBe(4);
      expect(gone.stderr).toContain(`${own.topic} does not exist`);
      await createTopics(own.brokers, [{ topic: own.topic, partitions: 1 }]);
      await produce(own, sent.slice(0, 3).map(observationRecord));
      for (const args of [
        ["explain", "--identity", identity],
        ["read", "--identity", identity, "--as-of-offset", "0:1"],
        ["diff", "--identity", identity, "--from", "0:0"],
      ]) {
        const refused = await runMufold(args, ownEnv);
        expect(refused.code, args.join(" ")).toBe(4);
        expect(refused.stderr).toMatch(/as_of_not_available: topic_origin_differs: .*partition 0 ends at 3, below the 12 generation \d+ folded/);
      }
      // The live packet is still served as it was folded: only answers naming positions are refused.
      expect((await runMufold(["read", "--identity", identity], ownEnv)).code).toBe(0);
    } finally {
      await deleteTopics(own.brokers, [own.topic, `${own.topic}.dlq`]).catch(() => undefined);
      await dropPrefix(own);
    }
  });
});
