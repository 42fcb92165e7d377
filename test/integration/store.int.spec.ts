import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { loadFunctions } from "../../src/adapters/redis/functions.js";
import { RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import { StaleVersionError } from "../../src/fold/identity-store.js";
import { IdentityApplier, type IdentityBatch } from "../../src/fold/identity-applier.js";
import { identityKeys } from "../../src/adapters/redis/keys.js";
import { contextOfObservation, observationFingerprint, reducerIdentity, type Observation } from "../../src/core/index.js";
import { simulate } from "../../producers/simulation.js";
import { comparePackets, dropPrefix, expectedPackets, testSettings } from "../support/pipeline.js";
import { socketWrites } from "../support/socket-writes.js";

const settings = testSettings();
let redis: Redis;
let store: RedisIdentityStore;

beforeAll(async () => {
  redis = new Redis(settings.redisUrl);
  await loadFunctions(redis);
  store = new RedisIdentityStore(redis, settings.prefix);
});
afterAll(async () => {
  await dropPrefix(settings);
  await redis.quit();
});

function batches(observations: Observation[], offsetBase: number, partition = 0): IdentityBatch[] {
  const by = new Map<string, IdentityBatch>();
  observations.forEach((o, i) => {
    const context = contextOfObservation(o, "memory_utility_reducer_v0");
    const identity = reducerIdentity(context);
    let b = by.get(identity);
    if (!b) by.set(identity, (b = { identity, context, deliveries: [] }));
    b.deliveries.push({ observation: o, fingerprint: observationFingerprint(o), topic: "t", partition, offset: BigInt(offsetBase + i) });
  });
  return [...by.values()];
}

async function readAll(generation: number): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const id of await store.listIdentities(generation)) out.set(id, (await store.read(generation, id)) ?? "<missing>");
  return out;
}

describe("identity store on real Redis", () => {
  it("the fold's store (not auto-pipelined, loads and applies in groups of 16) writes a batch in few socket writes, and folds exactly", async () => {
    const writer = new Redis(settings.redisUrl, { enableAutoPipelining: false });
    try {
      await writer.ping();
      const coalescing = new RedisIdentityStore(writer, settings.prefix, { writeGroup: 16 });
      const observations = [...simulate({ agents: 60, observationsPerAgent: 3, snapshotEvery: 1000, duplicateRate: 0, seed: 23 })].map((d) => d.observation);
      const first = batches(observations.slice(0, 120), 0);
      expect(first.length).toBe(60);
      // 60 identities new to the index: 60 SADDs (one pipeline) and 60 applies (FCALL), no loads: 120 commands.
      const fresh = await socketWrites(writer, () => new IdentityApplier(coalescing, 1000).applyAll(104, first));
      expect(fresh).toBeGreaterThan(0);
      expect(fresh).toBeLessThanOrEqual(120 / 4);
      // Another worker (an empty cache), the same identities: 60 SADDs, each loaded (3 HGETALLs) and applied: 300.
      const again = await socketWrites(writer, () => new IdentityApplier(coalescing, 1000).applyAll(104, batches(observations.slice(120), 120)));
      expect(again).toBeGreaterThan(0);
      expect(again).toBeLessThanOrEqual(300 / 4);
      expect(comparePackets(await readAll(104), expectedPackets(observations))).toEqual({ missing: [], extra: [], different: [] });
    } finally {
      await writer.quit();
    }
  });

  it("a cache of one identity reloads from Redis on every batch and still folds exactly", async () => {
    const observations = [...simulate({ agents: 6, observationsPerAgent: 60, snapshotEvery: 20, duplicateRate: 0.2, conflictRate: 0.05, seed: 21 })].map((d) => d.observation);
    const applier = new IdentityApplier(store, 1);
    for (let i = 0; i < observations.length; i += 7) await applier.applyAll(101, batches(observations.slice(i, i + 7), i));
    expect(comparePackets(await readAll(101), expectedPackets(observations))).toEqual({ missing: [], extra: [], different: [] });
  });

  it("two writers of one identity: the stale one reloads, skips what the other applied, and nothing is lost or doubled", async () => {
    const observations = [...simulate({ agents: 1, observationsPerAgent: 80, snapshotEvery: 1000, duplicateRate: 0.1, seed: 22 })].map((d) => d.observation);
    const a = new IdentityApplier(store, 100);
    const b = new IdentityApplier(store, 100);
    const [first, second, third] = [observations.slice(0, 30), observations.slice(30, 60), observations.slice(60)];
    await a.applyAll(102, batches(first, 0));
    await b.applyAll(102, batches(first, 0)); // b loads, sees everything applied: skips all
    await b.applyAll(102, batches(second, 30));
    const stats = await a.applyAll(102, [...batches(second, 30), ...batches(third, 60)].reduce<IdentityBatch[]>((acc, x) => {
      const same = acc.find((y) => y.identity === x.identity);
      if (same) same.deliveries.push(...x.deliveries);
      else acc.push(x);
      return acc;
    }, []));
    expect(stats.casRetries).toBeGreaterThan(0); // a's cached version was stale
    expect(stats.applied).toBe(third.length); // and only the third part was new to Redis
    expect(comparePackets(await readAll(102), expectedPackets(observations))).toEqual({ missing: [], extra: [], different: [] });
  });

  it("the apply function refuses a stale version and reports lost state", async () => {
    const [batch] = batches([...simulate({ agents: 1, observationsPerAgent: 1, seed: 23 })].map((d) => d.observation), 0);
    await expect(store.apply(103, batch!.identity, 5, new Map(), [])).rejects.toThrow(/folds the log into the generation again/);
    await store.apply(103, batch!.identity, 0, new Map([["w:t:0", 0n]]), []);
    await expect(store.apply(103, batch!.identity, 0, new Map(), [])).rejects.toBeInstanceOf(StaleVersionError);
  });

  it("mufold_apply_v2 refuses a malformed program, or operands that do not match it, before writing anything", async () => {
    const keys = identityKeys(settings.prefix, 104, "mur_lua");
    const call = (...args: string[]) => redis.call("FCALL", "mufold_apply_v2", keys.length, ...keys, "0", "1", "w:t:0", "7", ...args);
    const malformed: [string, string[]][] = [
      ["no program", []],
      ["an unknown opcode", ["Q2*1", "f"]],
      ["a key index past the ten keys", ["H11*1", "f", "v"]],
      ["key index 0", ["H0*1", "f", "v"]],
      ["a run of no ops", ["H2*0"]],
      ["a leading zero", ["H2*01", "f", "v"]],
      ["a trailing space", ["H2*1 ", "f", "v"]],
      ["two spaces", ["H2*1  Z4*1", "f", "v", "m"]],
      ["another separator", ["H2*1,Z4*1", "f", "v", "m"]],
      ["DEL of a run of two", ["X3*2"]],
      ["an operand missing", ["H2*1 Z4*1", "f", "v"]],
      ["an operand too many", ["H2*1", "f", "v", "extra"]],
    ];
    for (const [what, args] of malformed) await expect(call(...args), what).rejects.toThrow(/mufold_apply_v2: (malformed arguments|the program takes)/);
    expect(await redis.exists(...keys), "nothing written").toBe(0);
    // A well-formed program of several runs applies, with its watermark and version.
    expect(await call("H2*2 Z4*1 H1*1", "a", "1", "b", "2", "0001\u0000h1", "acc", "1")).toEqual([1, 1]);
    expect(await redis.hgetall(keys[0]!)).toEqual({ "w:t:0": "7", acc: "1", v: "1" });
    expect(await redis.hgetall(keys[1]!)).toEqual({ a: "1", b: "2" });
    expect(await redis.zrange(keys[3]!, 0, -1)).toEqual(["0001\u0000h1"]);
  });

  it("mufold_apply_v1 (the previous release's layout, four arguments an op) still applies for folds not yet upgraded", async () => {
    const keys = identityKeys(settings.prefix, 104, "mur_v1");
    const reply = await redis.call("FCALL", "mufold_apply_v1", keys.length, ...keys, "0", "1", "w:t:0", "3", "HSET", "2", "a", "1", "ZADD", "6", "0001\u0000h1", "", "HDEL", "2", "absent", "");
    expect(reply).toEqual([1, 1]);
    expect(await redis.hgetall(keys[0]!)).toEqual({ "w:t:0": "3", v: "1" });
    expect(await redis.hgetall(keys[1]!)).toEqual({ a: "1" });
    expect(await redis.zrange(keys[5]!, 0, -1)).toEqual(["0001\u0000h1"]);
    expect(await redis.call("FCALL", "mufold_apply_v1", keys.length, ...keys, "0", "0")).toEqual([-1, 1]); // stale: version 1 is stored
  });
});

