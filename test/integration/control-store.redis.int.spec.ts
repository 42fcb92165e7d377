/**
 * The control contract (test/support/control-store-contract.ts) against Redis: the
 * functions of mufold_control_v1.lua, as the memory store runs it in the unit tier.
 * Every case gets its own key prefix under this file's; time passes as Redis's TIME does.
 */
import { afterAll, beforeAll } from "vitest";
import { Redis } from "ioredis";
import { RedisControlStore } from "../../src/adapters/redis/control-store.js";
import { acksKey, changesKey, controlKey } from "../../src/adapters/redis/keys.js";
import { controlStoreContract } from "../support/control-store-contract.js";
import { dropPrefix, testSettings } from "../support/pipeline.js";
import { until } from "../support/wait.js";

// pipeline.js loaded the Redis functions on import.
const settings = testSettings();
let redis: Redis;
let worlds = 0;

beforeAll(() => {
  redis = new Redis(settings.redisUrl);
});
afterAll(async () => {
  await dropPrefix(settings);
  await redis.quit();
});

/** Redis's clock, in microseconds (what the control functions read with TIME). */
async function redisMicros(): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1_000_000 + Number(micros);
}

controlStoreContract("redis", async () => {
  const prefix = `${settings.prefix}:${++worlds}`;
  return {
    store: new RedisControlStore(redis, prefix),
    elapse: async (ms) => {
      const from = await redisMicros();
      await until(`${ms} ms of Redis time`, async () => (await redisMicros()) >= from + ms * 1000, 10_000, 5);
    },
    // What a Redis that lost everything holds of this prefix: nothing (only this prefix's keys, on a shared Redis).
    lose: async () => {
      await redis.del(controlKey(prefix), acksKey(prefix));
    },
    changes: async (generation) => (await redis.xrange(changesKey(prefix, generation), "-", "+")).map(([, fields]) => fields),
  };
});
