/**
 * The control library (mufold_control_v1.lua) on a real Redis: generation
 * numbers never come back after a loss, seals and promotes check what they
 * must, and a pause lease expires by itself.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { GenerationMovedError, PauseLostError, TopicOriginError } from "../../src/adapters/redis/errors.js";
import { loadFunctions } from "../../src/adapters/redis/functions.js";
import { RedisStore } from "../../src/adapters/redis/store.js";
import { testSettings } from "../support/pipeline.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function isolatedStore(db: number): Promise<{ store: RedisStore; redis: Redis }> {
  const base = testSettings();
  const redis = new Redis(base.redisUrl.replace(/\/\d*$/, "") + `/${db}`);
  await redis.flushdb();
  cleanups.push(async () => {
    await redis.flushdb();
    await redis.quit();
  });
  await loadFunctions(redis);
  return { store: new RedisStore(redis, base.prefix), redis };
}

describe("control functions", () => {
  it("generation numbers are never reused, even after Redis lost everything", async () => {
    const { store, redis } = await isolatedStore(9);
    const first = await store.initGeneration("v0");
    expect(first.reducerVersion).toBe("v0");
    const rebuilt = await store.allocateGeneration("v0", "token-a");
    expect(rebuilt).toBeGreaterThan(first.generation);
    await redis.flushdb(); // `last` is gone too
    await loadFunctions(redis);
    const again = await store.initGeneration("v0");
    expect(again.generation).toBeGreaterThan(rebuilt);
    expect(await store.allocateGeneration("v0", "token-b")).toBeGreaterThan(again.generation);
  });

  it("a seal fails once the generation is no longer live; marks only go up", async () => {
    const { store, redis } = await isolatedStore(9);
    const { generation } = await store.initGeneration("v0");
    await store.seal(generation, "live", new Map([["t:0", 10n]]));
    await store.seal(generation, "live", new Map([["t:0", 4n]])); // a late, lower seal never lowers the mark
    expect((await store.generationFields(generation, "mark")).get("t:0")).toBe("10");
    await redis.flushdb();
    await loadFunctions(redis);
    await expect(store.seal(generation, "live", new Map([["t:0", 11n]]))).rejects.toBeInstanceOf(GenerationMovedError);
  });

  it("the first origin of a partition is recorded; a different one is refused", async () => {
    const { store } = await isolatedStore(9);
    const { generation } = await store.initGeneration("v0");
    await store.checkOrigin(generation, "live", "t:0", "aaa");
    await store.checkOrigin(generation, "live", "t:0", "aaa");
    await expect(store.checkOrigin(generation, "live", "t:0", "bbb")).rejects.toBeInstanceOf(TopicOriginError);
    await store.checkOrigin(generation, "live", "t:1", "bbb");
  });

  it("a promote needs its build token and a pause that still holds", async () => {
    const { store } = await isolatedStore(9);
    const live = (await store.initGeneration("v0")).generation;
    const shadow = await store.allocateGeneration("v0", "mine");
    await expect(store.promote(shadow, "not-mine", null)).rejects.toBeInstanceOf(GenerationMovedError);
    const epoch = (await store.control()).epoch + 1;
    await store.pause(epoch, 300);
    expect((await store.control()).paused).toBe(true);
    // The lease runs out by itself (Redis time): the pause no longer holds and the promote refuses.
    const deadline = Date.now() + 5_000;
    while ((await store.control()).paused && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect((await store.control()).paused).toBe(false);
    await expect(store.promote(shadow, "mine", epoch)).rejects.toBeInstanceOf(PauseLostError);
    expect((await store.control()).generation).toBe(live);
    await store.pause(epoch, 10_000);
    await store.promote(shadow, "mine", epoch);
    const after = await store.control();
    expect({ generation: after.generation, paused: after.paused }).toEqual({ generation: shadow, paused: false });
    expect(await store.buildingGenerations()).toEqual(new Set());
  });

  it("another epoch cannot take a pause that holds; forgetting a generation removes its fields", async () => {
    const { store } = await isolatedStore(9);
    const { generation } = await store.initGeneration("v0");
    await store.pause(5, 10_000);
    await expect(store.pause(6, 10_000)).rejects.toBeInstanceOf(PauseLostError);
    await store.unpause(5);
    await store.pause(6, 10_000);
    await store.seal(generation, "live", new Map([["t:0", 3n]]));
    await store.checkOrigin(generation, "live", "t:0", "x");
    await store.forgetGeneration(generation);
    expect(await store.generationFields(generation, "mark")).toEqual(new Map());
    expect(await store.generationFields(generation, "origin")).toEqual(new Map());
  });
});
