import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { partitionOffsets } from "../../src/adapters/kafka/topics.js";
import { loadFunctions } from "../../src/adapters/redis/functions.js";
import { RedisControlStore } from "../../src/adapters/redis/control-store.js";
import { RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import { prefixKeys } from "../../src/adapters/redis/keyspace.js";
import { changesKey } from "../../src/adapters/redis/keys.js";
import { PROPOSAL_SCHEMA, changeFeedSettings } from "../../consumers/feed/change-feed.js";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { IdentityApplier } from "../../src/fold/identity-applier.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { canonicalJson, contextOfObservation, observationFingerprint, parsePyJson, reducerIdentity, type Observation, type PyObject } from "../../src/core/index.js";
import { IdentityModel } from "../../src/fold/identity-model.js";
import { emptyIdentityState, foldDelivery } from "../../src/core/identity-state.js";
import { computeParts } from "../../src/core/packet-parts.js";
import { contentDigest, elementsInRedis, elementsOfParts } from "../support/content-digest.js";
import { ProjectionReader } from "../../src/client/readback.js";
import { resolveSettings, type Settings } from "../../src/config/settings.js";
import { comparePackets, dropPrefix, expectedPackets, quietLog, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { until } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

/** Test settings with the change-feed settings as the environment gives them (resolved by the registry, as for a command). */
function feedSettings(env: (base: Settings) => Record<string, string>): Settings {
  const base = testSettings();
  return { ...base, ...changeFeedOf(resolveSettings({}, env(base))) };
}

const changeFeedOf = (s: Settings) => ({ changeFeed: s.changeFeed, changeFeedMaxLen: s.changeFeedMaxLen, proposalsTopic: s.proposalsTopic });


/** Harmful labels come with the simulation's judgments; a conflict rate adds changed judgments (conflict review). */
function workload(seed: number, agents = 10, perAgent = 40): Observation[] {
  return [...simulate({ agents, observationsPerAgent: perAgent, duplicateRate: 0.1, conflictRate: 0.08, snapshotEvery: 20, memories: 6, seed })].map((d) => d.observation);
}

/** Fold the workload in `rounds` produce-and-catch-up rounds, so identities change several times. */
async function fold(settings: Settings, observations: Observation[], rounds = 1): Promise<FoldWorker> {
  const worker = await FoldWorker.start(settings, quietLog);
  cleanups.push(() => worker.stop());
  const size = Math.ceil(observations.length / rounds);
  for (let i = 0; i < observations.length; i += size) {
    await produce(settings, observations.slice(i, i + size).map(observationRecord));
    await waitCaughtUp(settings);
  }
  return worker;
}

interface Entry {
  id: string;
  fields: Record<string, string>;
}

async function readStream(redis: Redis, settings: Settings, generation: number): Promise<Entry[]> {
  const rows = await redis.xrange(changesKey(settings.prefix, generation), "-", "+");
  return rows.map(([id, flat]) => {
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
    return { id, fields };
  });
}

/** Every message of a topic, in offset order per partition. */
async function readTopic(settings: Settings, topic: string): Promise<{ partition: number; key: string; value: string; headers: Record<string, string> }[]> {
  const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-test-proposals" });
  const admin = kafka.admin();
  await admin.connect();
  const ends = await partitionOffsets(admin, topic);
  await admin.disconnect();
  const total = ends.reduce((a, e) => a + Number(e.high - e.low), 0);
  const out: { partition: number; key: string; value: string; headers: Record<string, string> }[] = [];
  if (total === 0) return out;
  const consumer = kafka.consumer({ groupId: `mufold-test-read.${randomBytes(4).toString("hex")}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let done: () => void = () => undefined;
    const all = new Promise<void>((r) => (done = r));
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = String(v);
        out.push({ partition, key: String(message.key), value: String(message.value), headers });
        if (out.length >= total) done();
      },
    });
    await Promise.race([all, new Promise((_, reject) => setTimeout(() => reject(new Error(`read ${out.length} of ${total} proposal messages`)), 60_000))]);
  } finally {
    await consumer.disconnect();
  }
  return out;
}

describe("change feed on a real broker and a real Redis", () => {
  it("every applied change is on the stream; the last entry per identity is the content digest of its stored parts; proposals mirror the final packets", async () => {
    const settings = feedSettings((s) => ({ MUFOLD_CHANGE_FEED: "on", MUFOLD_CHANGE_FEED_MAXLEN: "100000", MUFOLD_PROPOSALS_TOPIC: `${s.topic}.proposals` }));
    const proposalsTopic = `${settings.topic}.proposals`;
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(31);
    const worker = await fold(settings, observations, 8);
    expect(worker.counters.applied).toBe(observations.length);

    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit());
    const reader = new ProjectionReader(redis, settings.prefix);
    const generation = await reader.generation();
    const identities = await reader.identities();
    expect(comparePackets(new Map(await Promise.all(identities.map(async (id) => [id, (await reader.read(id))!] as const))), expectedPackets(observations))).toEqual({
      missing: [],
      extra: [],
      different: [],
    });

    // The stream: every identity, versions strictly increasing, every delivery counted once.
    const entries = await readStream(redis, settings, generation);
    const byIdentity = new Map<string, Entry[]>();
    for (const e of entries) {
      expect(Object.keys(e.fields).sort()).toEqual(["deliveries", "digest", "identity", "status", "version"]);
      const list = byIdentity.get(e.fields.identity!) ?? [];
      list.push(e);
      byIdentity.set(e.fields.identity!, list);
    }
    expect([...byIdentity.keys()].sort()).toEqual(identities);
    expect(Math.max(...[...byIdentity.values()].map((l) => l.length))).toBeGreaterThanOrEqual(3);
    expect(entries.reduce((a, e) => a + Number(e.fields.deliveries), 0)).toBe(observations.length);
    const finalPackets = new Map<string, string>();
    for (const identity of identities) {
      const list = byIdentity.get(identity)!;
      const versions = list.map((e) => Number(e.fields.version));
      for (let i = 1; i < versions.length; i++) expect(versions[i]!).toBeGreaterThan(versions[i - 1]!);
      const last = list[list.length - 1]!.fields;
      const packet = (await reader.read(identity))!;
      finalPackets.set(identity, packet);
      const meta = await reader.store.meta(generation, identity);
      expect(last.version).toBe(meta.v);
      expect(last.digest).toBe(contentDigest(await elementsInRedis(redis, settings.prefix, generation, identity)));
      expect(last.digest).toBe(meta.dig);
      expect(last.status).toBe((JSON.parse(packet) as { status: string }).status);
    }

    // The proposals topic: the latest message per (identity, subject) is exactly each final packet's proposals.
    const expected = new Map<string, string>();
    const states = new Set<string>();
    for (const [identity, packet] of finalPackets) {
      for (const p of (parsePyJson(packet) as PyObject).review_proposals as PyObject[]) {
        expected.set(`${identity} ${p.subject_id as string}`, canonicalJson(p));
        states.add(p.state as string);
      }
    }
    expect([...states].sort()).toEqual(["attenuation_proposed", "conflict", "unresolved_attribution"]);
    const messages = await readTopic(settings, proposalsTopic);
    const latest = new Map<string, string | null>();
    const entryKeys = new Set(entries.map((e) => `${e.fields.identity} ${e.fields.version} ${e.fields.digest}`));
    const partitionOf = new Map<string, number>();
    for (const m of messages) {
      expect(m.headers).toEqual({ schema: PROPOSAL_SCHEMA, "content-type": "application/json" });
      const value = parsePyJson(m.value) as PyObject;
      expect(canonicalJson(value)).toBe(m.value);
      expect(Object.keys(value).sort()).toEqual(["digest", "generation", "identity", "proposal", "schema_version", "subject_id", "version"]);
      expect(value.identity).toBe(m.key);
      expect(value.generation).toBe(generation);
      expect(entryKeys.has(`${m.key} ${String(value.version)} ${value.digest as string}`)).toBe(true); // announced with a change on the stream
      expect(partitionOf.get(m.key) ?? m.partition).toBe(m.partition); // keyed by identity: one partition, in order
      partitionOf.set(m.key, m.partition);
      const proposal = value.proposal as PyObject | null;
      if (proposal !== null) {
        expect(proposal.subject_id).toBe(value.subject_id);
        expect(["attenuation_proposed", "conflict", "unresolved_attribution"]).toContain(proposal.state);
        expect(proposal.action_authority_granted).toBe(false);
      }
      const subjectKey = `${m.key} ${value.subject_id as string}`;
      const next = proposal === null ? null : canonicalJson(proposal);
      if (latest.has(subjectKey)) expect(next).not.toBe(latest.get(subjectKey)); // only new, changed or withdrawn proposals
      else expect(next).not.toBeNull(); // a withdrawal follows a proposal
      latest.set(subjectKey, next);
    }
    const live = new Map([...latest].filter((kv): kv is [string, string] => kv[1] !== null));
    expect(live).toEqual(expected);
    console.log(`[change feed] ${identities.length} identities, ${entries.length} stream entries, ${messages.length} proposal messages (${latest.size - live.size} withdrawn), ${expected.size} live proposals`);
  });

  it("with the feed off, no stream, no digest and no proposals are written", async () => {
    const settings = feedSettings((s) => ({ MUFOLD_CHANGE_FEED: "off", MUFOLD_PROPOSALS_TOPIC: `${s.topic}.proposals` }));
    const proposalsTopic = `${settings.topic}.proposals`;
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(32, 6, 30);
    await fold(settings, observations);
    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit());
    const store = new RedisIdentityStore(redis, settings.prefix);
    const generation = (await new RedisControlStore(redis, settings.prefix).state()).generation!;
    expect(await redis.exists(changesKey(settings.prefix, generation))).toBe(0);
    expect((await prefixKeys(redis, settings.prefix)).filter((k) => k.endsWith(":changes"))).toEqual([]);
    for (const id of await store.listIdentities(generation)) {
      const meta = await store.meta(generation, id);
      expect(meta.dig).toBeUndefined();
      expect(meta.chg).toBeUndefined();
    }
    const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-test" });
    const admin = kafka.admin();
    await admin.connect();
    const topics = await admin.listTopics();
    await admin.disconnect();
    expect(topics).not.toContain(proposalsTopic);
  });

  it("a change applied but not announced (worker died before the XADD) is announced when its redelivery is skipped", async () => {
    const settings = feedSettings(() => ({ MUFOLD_CHANGE_FEED: "on" }));
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(33, 6, 30);
    const first = await fold(settings, observations);
    await first.stop();
    cleanups.pop();
    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit());
    const reader = new ProjectionReader(redis, settings.prefix);
    const generation = await reader.generation();
    // The applies landed; the announcements did not, and neither did the seal (it comes after them) nor the commit.
    await redis.del(changesKey(settings.prefix, generation));
    const marks = Object.keys(await redis.hgetall(`${settings.prefix}:control`)).filter((f) => f.startsWith(`mark:${generation}:`));
    expect(marks.length).toBeGreaterThan(0);
    await redis.hdel(`${settings.prefix}:control`, ...marks);
    const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-test" });
    const admin = kafka.admin();
    await admin.connect();
    await admin.resetOffsets({ groupId: settings.group, topic: settings.topic, earliest: true });
    await admin.disconnect();

    const second = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => second.stop());
    await waitCaughtUp(settings);
    expect(second.counters.applied).toBe(0);
    const entries = await readStream(redis, settings, generation);
    const identities = await reader.identities();
    expect(entries.map((e) => e.fields.identity).sort()).toEqual(identities);
    for (const e of entries) {
      const meta = await reader.store.meta(generation, e.fields.identity!);
      expect(e.fields.repeated).toBe("1");
      expect(e.fields.version).toBe(meta.v);
      expect(e.fields.digest).toBe(meta.dig);
      expect(e.fields.digest).toBe(contentDigest(await elementsInRedis(redis, settings.prefix, generation, e.fields.identity!)));
      expect(Number(e.fields.deliveries)).toBeGreaterThan(0);
    }
  });

  it("a stream that refuses its entries (the key holds another type) holds the batch unsealed; once it is fixed, every change is announced", async () => {
    const settings = { ...feedSettings(() => ({ MUFOLD_CHANGE_FEED: "on" })), outageToleranceSeconds: 600 };
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(34, 6, 30);
    const half = observations.length / 2;
    await fold(settings, observations.slice(0, half));
    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit());
    const reader = new ProjectionReader(redis, settings.prefix);
    const generation = await reader.generation();
    const stream = changesKey(settings.prefix, generation);
    const control = `${settings.prefix}:control`;
    const marksNow = async () => Object.fromEntries(Object.entries(await redis.hgetall(control)).filter(([f]) => f.startsWith(`mark:${generation}:`)));
    const versionsBefore = new Map(await Promise.all((await reader.identities()).map(async (id) => [id, Number((await reader.store.meta(generation, id)).v)] as const)));
    const marksBefore = await marksNow();
    const wrongType = async () => Number(/errorstat_WRONGTYPE:count=(\d+)/.exec(await redis.info("errorstats"))?.[1] ?? 0);
    const refusedBefore = await wrongType();

    await redis.del(stream);
    await redis.set(stream, "not a stream");
    await produce(settings, observations.slice(half).map(observationRecord));
    await until("the seal to be refused twice", async () => (await wrongType()) >= refusedBefore + 2, 60_000);
    expect(await marksNow()).toEqual(marksBefore); // applied, but not sealed: the batch is held
    expect(await redis.type(stream)).toBe("string");

    await redis.del(stream);
    await waitCaughtUp(settings);
    const identities = await reader.identities();
    const packets = new Map(await Promise.all(identities.map(async (id) => [id, (await reader.read(id))!] as const)));
    expect(comparePackets(packets, expectedPackets(observations))).toEqual({ missing: [], extra: [], different: [] });
    // The held batch was applied again: its applies found done (skipped), its changes announced then (`repeated`).
    const entries = await readStream(redis, settings, generation);
    let announced = 0;
    for (const identity of identities) {
      const meta = await reader.store.meta(generation, identity);
      if (Number(meta.v) === versionsBefore.get(identity)) continue;
      const last = entries.filter((e) => e.fields.identity === identity).at(-1);
      expect(last?.fields.version).toBe(meta.v); // the identity's latest change is on the stream
      expect(last?.fields.digest).toBe(meta.dig);
      announced++;
    }
    expect(announced).toBeGreaterThan(0);
  });

  it("turning the feed off removes the digest an earlier run stored (it would go stale)", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit());
    await loadFunctions(redis);
    const store = new RedisIdentityStore(redis, settings.prefix);
    const observations = workload(34, 1, 40);
    const context = contextOfObservation(observations[0]!, "memory_utility_reducer_v0");
    const identity = reducerIdentity(context);
    const batch = (from: number, to: number) => [
      {
        identity,
        context,
        deliveries: observations
          .slice(from, to)
          .filter((o) => reducerIdentity(contextOfObservation(o, "memory_utility_reducer_v0")) === identity)
          .map((o, i) => ({ observation: o, fingerprint: observationFingerprint(o), topic: "t", partition: 0, offset: BigInt(from + i) })),
      },
    ];
    const on = await new IdentityApplier(store, 10, { feed: true }).applyAll(1, batch(0, 10));
    expect(on.changes).toHaveLength(1);
    expect((await store.meta(1, identity)).dig).toBe(contentDigest(await elementsInRedis(redis, settings.prefix, 1, identity)));
    const off = await new IdentityApplier(store, 10, { feed: false }).applyAll(1, batch(10, 20));
    expect(off.changes).toHaveLength(0);
    const meta = await store.meta(1, identity);
    expect(meta.dig).toBeUndefined();
    expect(meta.chg).toBeUndefined();
    expect(meta.v).toBe("2");
  });

  it("the digest is the documented formula over the parts, at every size, and changes with every change", () => {
    const observations = [...simulate({ agents: 1, observationsPerAgent: 1100, snapshotEvery: 100_000, duplicateRate: 0.1, conflictRate: 0.03, memories: 8, seed: 35 })].map((d) => d.observation);
    const context = contextOfObservation(observations[0]!, "memory_utility_reducer_v0");
    const model = new IdentityModel("mur_test", context);
    const scratch = emptyIdentityState();
    const seen = new Set<string>();
    observations.forEach((o, i) => {
      const fingerprint = observationFingerprint(o);
      const plan = model.plan([{ observation: o, fingerprint, topic: "t", partition: 0, offset: BigInt(i) }], { feed: true });
      foldDelivery(scratch, o, fingerprint);
      if (i >= 1_024) scratch.byId.clear(); // sealed: the fold keeps the count only
      // From scratch, not from the model's bookkeeping: past 256 history entries, conflicts, and sealed past 1,024.
      expect(plan.change!.digest).toBe(contentDigest(elementsOfParts(computeParts(context, scratch))));
      if (i < 1_024) expect(seen.has(plan.change!.digest)).toBe(false); // every delivery changes the packet's counters
      seen.add(plan.change!.digest);
      model.committed(plan, i + 1);
    });
    expect(model.state.deliveries).toBe(1100);
  });

  // Parsing and refusing the variables is the registry's (test/unit/settings-registry.unit.spec.ts); here, what the fold takes from it.
  it("the fold's change-feed settings are the registry's, resolved from the environment", () => {
    expect(changeFeedSettings(resolveSettings({}, {}))).toEqual({ enabled: true, maxLen: 100_000, proposalsTopic: null });
    expect(changeFeedSettings(resolveSettings({}, { MUFOLD_CHANGE_FEED: "off", MUFOLD_CHANGE_FEED_MAXLEN: "500", MUFOLD_PROPOSALS_TOPIC: "review.proposals" }))).toEqual({
      enabled: false,
      maxLen: 500,
      proposalsTopic: "review.proposals",
    });
  });
});
