/**
 * The replay's build on real Redis: a chunk of many identities leaves the
 * build's connection in few socket writes (it writes through the live fold's
 * kind of store, writerStore: write-coalescing.ts), and the shadow generation
 * it writes holds exactly the packets the pure reducer computes from the same
 * records.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { ensureSetup } from "../../src/adapters/redis/functions.js";
import { RedisControlStore } from "../../src/adapters/redis/control-store.js";
import { RedisIdentityStore, writerStore } from "../../src/adapters/redis/identity-store.js";
import { connectRedis } from "../../src/adapters/redis/connect.js";
import type { SourceRecord } from "../../src/fold/source-record.js";
import { ShadowBuild } from "../../consumers/replay/replay-build.js";
import { connectBuildRedis } from "../../consumers/replay/replay-redis.js";
import { observationRecord } from "../../src/client/producer.js";
import { simulate } from "../../producers/simulation.js";
import { comparePackets, dropPrefix, expectedPackets, testSettings } from "../support/pipeline.js";
import { socketWrites } from "../support/socket-writes.js";

const settings = testSettings();
let redis: Redis;

beforeAll(async () => {
  await ensureSetup(settings);
  redis = connectBuildRedis(settings) as Redis;
  await redis.ping();
});
afterAll(async () => {
  await dropPrefix(settings);
  await redis.quit();
});

describe("the replay's build on real Redis", () => {
  it("writes a chunk of 60 identities in few socket writes, and the shadow holds exactly the reducer's packets", async () => {
    const observations = [...simulate({ agents: 60, observationsPerAgent: 3, snapshotEvery: 1000, duplicateRate: 0, seed: 29 })].map((d) => d.observation);
    const records: SourceRecord[] = observations.map((o, i) => {
      const m = observationRecord(o);
      return { topic: settings.topic, partition: 0, offset: String(i), key: Buffer.from(m.key as string), value: Buffer.from(m.value as string), headers: {} };
    });
    const store = writerStore(redis, settings.prefix);
    const control = new RedisControlStore(redis, settings.prefix);
    const token = "build-test";
    const generation = await control.allocateGeneration(settings.reducerVersion, token, 60_000);
    const build = new ShadowBuild(store, control, settings, generation, token);
    const ctx = { topic: settings.topic, partition: 0, highWatermark: String(records.length), nextOffset: String(records.length), heartbeat: async () => {}, stillOwned: () => true };
    build.add(records, ctx);
    // 60 groups (one key each), each indexed (1 SADD) and then applied (1 FCALL), and the partition guard's origin
    // check: over 120 commands. Written one by one they were 122 socket writes; with only the applies grouped, 66.
    const writes = await socketWrites(redis, () => build.flush());
    expect(build.stats.deliveries).toBe(observations.length);
    expect(writes).toBeGreaterThan(0);
    expect(writes).toBeLessThanOrEqual(120 / 4);

    const reader = connectRedis({ url: settings.redisUrl });
    try {
      const shadow = new RedisIdentityStore(reader, settings.prefix);
      const packets = new Map<string, string>();
      for (const id of await shadow.listIdentities(generation)) packets.set(id, (await shadow.read(generation, id)) ?? "<missing>");
      expect(packets.size).toBe(60);
      expect(comparePackets(packets, expectedPackets(observations))).toEqual({ missing: [], extra: [], different: [] });
    } finally {
      await reader.quit();
    }
  });
});
