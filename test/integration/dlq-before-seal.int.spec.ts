/**
 * A batch's dead letters are sent before its mark is sealed: once the mark in
 * Redis is past a batch, no restart reads the batch again, so a worker killed
 * between the seal and the send would lose them (the chaos tier's hostile run
 * once found 34 of 4,000 missing). Here the send is held open: the mark must
 * not move past the batch until it completes.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { RedisControlStore } from "../../src/adapters/redis/control-store.js";
import { connectRedis } from "../../src/adapters/redis/connect.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { dropPrefix, quietLog, testSettings, waitCaughtUp } from "../support/pipeline.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Send = (...args: unknown[]) => Promise<string[]>;

describe("dead letters and the mark", () => {
  it("the mark stays before a batch while its dead letters are being sent, and moves past it once they are", async () => {
    const settings = { ...testSettings(), partitions: 1 };
    cleanups.push(() => dropPrefix(settings));
    const worker = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => worker.stop());
    // Hold the dead-letter send open, and say when it was called.
    const sender = (worker as unknown as { deadLetters: { send: Send } }).deadLetters;
    const original = sender.send.bind(sender);
    let called!: () => void;
    const sendCalled = new Promise<void>((resolve) => (called = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    cleanups.push(async () => release()); // before the stop (cleanups run last first): a failed check must not leave the batch held
    sender.send = async (...args) => {
      called();
      await released;
      return original(...args);
    };

    const valid = [...simulate({ agents: 1, observationsPerAgent: 2, snapshotEvery: 100, duplicateRate: 0, conflictRate: 0, seed: 3 })].map((d) => observationRecord(d.observation));
    await produce(settings, [valid[0]!, { key: valid[0]!.key, value: "not json", headers: valid[0]!.headers }, valid[1]!]);
    await sendCalled;

    const redis = connectRedis(settings.redisUrl);
    cleanups.push(() => redis.quit());
    const control = new RedisControlStore(redis, settings.prefix);
    const { generation } = await control.state();
    const markOf = async () => (await control.generationFields(generation!, "mark")).get(`${settings.topic}:0`);
    // The batch's identities are applied, its dead letter is in flight: the mark has not moved past it.
    expect(await markOf()).toBeUndefined();

    release();
    await waitCaughtUp(settings);
    expect(await markOf()).toBe("3");
    expect(worker.counters.deadLettered).toBe(1);
  });
});
