import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { RedisStore } from "../../src/adapters/redis/store.js";
import { simulate } from "../../producers/simulation.js";
import { identityStoreContract, reducerPackets } from "../support/identity-store-contract.js";
import { dropPrefix, expectedPackets, testSettings } from "../support/pipeline.js";

// pipeline.js loaded the Redis functions on import. Every store gets its own
// prefix under this file's, so the contract's cases never see each other's keys.
const settings = testSettings();
let redis: Redis;
let stores = 0;

beforeAll(() => {
  redis = new Redis(settings.redisUrl);
});
afterAll(async () => {
  await dropPrefix(settings);
  await redis.quit();
});

identityStoreContract("redis", () => new RedisStore(redis, `${settings.prefix}:${++stores}`));

describe("the contract's reducer oracle", () => {
  it("is the integration tier's expectedPackets", () => {
    const observations = [...simulate({ agents: 4, observationsPerAgent: 40, snapshotEvery: 15, duplicateRate: 0.2, conflictRate: 0.1, seed: 5 })].map((d) => d.observation);
    expect(reducerPackets(observations)).toEqual(expectedPackets(observations));
  });
});
