import { afterAll, beforeAll } from "vitest";
import { Redis } from "ioredis";
import { RedisControlStore } from "../../src/adapters/redis/control-store.js";
import { RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import { identityStoreContract } from "../support/identity-store-contract.js";
import { dropPrefix, testSettings } from "../support/pipeline.js";

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

identityStoreContract(
  "redis",
  () => new RedisIdentityStore(redis, `${settings.prefix}:${++stores}`),
  (store) => {
    // The position guard reads the control hash of the store's prefix.
    const control = new RedisControlStore(redis, (store as RedisIdentityStore).prefix);
    return {
      live: async () => (await control.initGeneration(settings.reducerVersion)).generation,
      seal: (generation, partition, next) => control.seal(generation, "live", new Map([[partition, next]])),
    };
  },
);
