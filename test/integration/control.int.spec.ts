/**
 * The control library (mufold_control_v1.lua) on a real Redis: generation
 * numbers never come back after a loss, seals and promotes check what they
 * must, and a pause lease expires by itself.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { GenerationMovedError, PauseLostError, PromoteBehindError, TopicOriginError } from "../../src/fold/control-store.js";
import { PositionContradictedError } from "../../src/fold/identity-store.js";
import { loadFunctions } from "../../src/adapters/redis/functions.js";
import { RedisControlStore } from "../../src/adapters/redis/control-store.js";
import { testSettings } from "../support/pipeline.js";
import { waitFor } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function isolatedStore(db: number): Promise<{ store: RedisControlStore; redis: Redis }> {
  const base = testSettings();
  const redis = new Redis(base.redisUrl.replace(/\/\d*$/, "") + `/${db}`);
  await redis.flushdb();
  cleanups.push(async () => {
    await redis.flushdb();
    await redis.quit();
  });
  await loadFunctions(redis);
  return { store: new RedisControlStore(redis, base.prefix), redis };
}

describe("control functions", () => {
  it("generation numbers are never reused, even after Redis lost everything", async () => {
    const { store, redis } = await isolatedStore(9);
    const first = await store.initGeneration("v0");
    expect(first.reducerVersion).toBe("v0");
    const rebuilt = await store.allocateGeneration("v0", "token-a", 60_000);
    expect(rebuilt).toBeGreaterThan(first.generation);
    await redis.flushdb(); // `last` is gone too
    await loadFunctions(redis);
    const again = await store.initGeneration("v0");
    expect(again.generation).toBeGreaterThan(rebuilt);
    expect(await store.allocateGeneration("v0", "token-b", 60_000)).toBeGreaterThan(again.generation);
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

  it("a promote needs its build token, the same live generation, and a pause that still holds; it is idempotent", async () => {
    const { store } = await isolatedStore(9);
    const live = (await store.initGeneration("v0")).generation;
    const shadow = await store.allocateGeneration("v0", "mine", 60_000);
    await expect(store.promote(shadow, "not-mine", null, live)).rejects.toBeInstanceOf(GenerationMovedError);
    await expect(store.promote(shadow, "mine", null, live + 1)).rejects.toBeInstanceOf(GenerationMovedError); // another promote came first
    const epoch = await store.pause(null, 300);
    expect((await store.state()).paused).toBe(true);
    // The lease runs out by itself (Redis time): the pause no longer holds, the promote refuses, and the
    // lapsed lease cannot be renewed (the folds may have resumed meanwhile).
    await waitFor("the pause lease ran out", async () => ((await store.state()).paused ? undefined : true), 5_000);
    await expect(store.promote(shadow, "mine", epoch, live)).rejects.toBeInstanceOf(PauseLostError);
    await expect(store.pause(epoch, 10_000)).rejects.toBeInstanceOf(PauseLostError);
    expect((await store.state()).generation).toBe(live);
    const next = await store.pause(null, 10_000);
    expect(next).toBe(epoch + 1);
    await store.promote(shadow, "mine", next, live);
    const after = await store.state();
    expect({ generation: after.generation, paused: after.paused }).toEqual({ generation: shadow, paused: false });
    expect(await store.buildingGenerations()).toEqual(new Set());
    await store.promote(shadow, "mine", next, live); // a resent call whose reply was lost: the same answer
    expect((await store.state()).generation).toBe(shadow);
  });

  it("a promote refuses while the live fold sealed a partition past the rebuild, unless the live one folded another log", async () => {
    const { store } = await isolatedStore(9);
    const live = (await store.initGeneration("v0")).generation;
    await store.seal(live, "live", new Map([["t:0", 50n]]));
    const shadow = await store.allocateGeneration("v0", "mine", 60_000);
    await store.seal(shadow, "mine", new Map([["t:0", 40n]]));
    await expect(store.promote(shadow, "mine", null, live)).rejects.toBeInstanceOf(PromoteBehindError);
    await store.seal(shadow, "mine", new Map([["t:0", 50n]]));
    await store.promote(shadow, "mine", null, live);
    expect((await store.state()).generation).toBe(shadow);
    // A recreated topic: the live marks belong to another log and bound nothing.
    await store.seal(shadow, "live", new Map([["t:1", 90n]]));
    const next = await store.allocateGeneration("v0", "again", 60_000);
    await store.promote(next, "again", null, shadow, true);
    expect((await store.state()).generation).toBe(next);
  });

  it("a live seal waits out a pause, and a batch that starts past the mark means Redis rolled back", async () => {
    const { store } = await isolatedStore(9);
    const { generation } = await store.initGeneration("v0");
    await store.seal(generation, "live", new Map([["t:0", 100n]]), new Map([["t:0", 0n]]));
    const epoch = await store.pause(null, 10_000);
    await expect(store.seal(generation, "live", new Map([["t:0", 120n]]), new Map([["t:0", 100n]]))).rejects.toBeInstanceOf(PauseLostError);
    await store.unpause(epoch);
    await store.seal(generation, "live", new Map([["t:0", 120n]]), new Map([["t:0", 100n]])); // resumes where the mark is
    await store.seal(generation, "live", new Map([["t:0", 130n]]), new Map([["t:0", 80n]])); // a redelivery from below
    // Kafka committed 130, but Redis (an older snapshot) says 120: the fetch starts past the mark.
    await store.seal(generation, "live", new Map([["t:1", 10n]]));
    const { redis } = { redis: store.redis };
    await redis.hset(`${store.prefix}:control`, `mark:${generation}:t:0`, "120");
    await expect(store.seal(generation, "live", new Map([["t:0", 140n]]), new Map([["t:0", 130n]]))).rejects.toEqual(new PositionContradictedError("behind", generation, "t:0", 130n));
    // Offsets past 2^53 compare exactly (as decimal strings).
    await store.seal(generation, "live", new Map([["t:2", 9007199254740993n]]));
    await store.seal(generation, "live", new Map([["t:2", 9007199254740992n]]));
    expect((await store.generationFields(generation, "mark")).get("t:2")).toBe("9007199254740993");
  });

  it("a rebuild's generation counts as being built only while its lease is renewed", async () => {
    const { store } = await isolatedStore(9);
    await store.initGeneration("v0");
    const kept = await store.allocateGeneration("v0", "alive", 300);
    const dead = await store.allocateGeneration("v0", "killed", 300);
    expect(await store.buildingGenerations()).toEqual(new Set([kept, dead]));
    await waitFor("the killed build's lease ran out while the live one was renewed", async () => {
      await store.renewBuild(kept, "alive", 300);
      return (await store.buildingGenerations()).has(dead) ? undefined : true;
    }, 5_000);
    expect(await store.buildingGenerations()).toEqual(new Set([kept]));
    await expect(store.renewBuild(kept, "not-the-token", 300)).rejects.toBeInstanceOf(GenerationMovedError);
  });

  it("another epoch cannot take a pause that holds; forgetting a generation removes its fields", async () => {
    const { store } = await isolatedStore(9);
    const { generation } = await store.initGeneration("v0");
    const epoch = await store.pause(null, 10_000);
    await expect(store.pause(null, 10_000)).rejects.toBeInstanceOf(PauseLostError);
    await store.unpause(epoch);
    expect(await store.pause(null, 10_000)).toBe(epoch + 1);
    await store.unpause(epoch + 1);
    await store.seal(generation, "live", new Map([["t:0", 3n]]));
    await store.checkOrigin(generation, "live", "t:0", "x");
    await store.forgetGeneration(generation);
    expect(await store.generationFields(generation, "mark")).toEqual(new Map());
    expect(await store.generationFields(generation, "origin")).toEqual(new Map());
  });
});
