/**
 * The ControlStore contract: one suite, in given/when/then form, that every
 * control store must pass, registered by `controlStoreContract(name, makeWorld)`
 * from the memory store's unit spec and the Redis store's integration spec.
 * The expected outcomes are the generation control protocol's as
 * mufold_control_v1.lua defines it (its header lists the functions and their
 * codes), written out by hand here, never read back from either store.
 *
 * Each case gets a world of its own (a fresh store: its own key prefix on
 * Redis). Time passes only through `elapse`; a lease that must still hold is
 * a long one (LONG), so no case depends on how fast the store answers.
 */
import { describe, expect, it } from "vitest";
import { GenerationMovedError, PauseLostError, PromoteBehindError, TopicOriginError, type ControlStore } from "../../src/fold/control-store.js";
import { PositionContradictedError } from "../../src/fold/identity-store.js";

/** What a case works on: the store, its time, and what can happen to it. */
export interface ControlWorld {
  store: ControlStore;
  /** Let at least `ms` of the store's time pass (memory: move the clock; Redis: wait until its TIME has moved on). */
  elapse(ms: number): Promise<void>;
  /** The store loses everything (a Redis emptied: FLUSHALL, a restart without persistence). */
  lose(): Promise<void>;
  /** A generation's change stream, oldest entry first, each as its field, value strings (Redis: XRANGE - +). */
  changes(generation: number): Promise<string[][]>;
}

export type ControlWorldFactory = () => Promise<ControlWorld>;

const RV = "memory_utility_reducer_v0";
const OTHER_RV = "memory_utility_reducer_v1";
/** A lease no case outlives. */
const LONG = 600_000;
/** A lease a case lets run out (`elapse(SHORT)`). */
const SHORT = 30;
const LIVE = "live";

// --- given ------------------------------------------------------------------

async function aLiveGeneration(w: ControlWorld, reducerVersion = RV): Promise<number> {
  return (await w.store.initGeneration(reducerVersion)).generation;
}

async function aRebuild(w: ControlWorld, token: string, leaseMs = LONG): Promise<number> {
  return w.store.allocateGeneration(RV, token, leaseMs);
}

/** `{ "t:0": 10 }` as the marks (or first offsets) a seal takes. */
function offsets(entries: Record<string, number | bigint>): Map<string, bigint> {
  return new Map(Object.entries(entries).map(([partition, offset]) => [partition, BigInt(offset)]));
}

async function sealed(w: ControlWorld, generation: number, mode: string, marks: Record<string, number | bigint>, first?: Record<string, number | bigint>): Promise<void> {
  await w.store.seal(generation, mode, offsets(marks), first === undefined ? undefined : offsets(first));
}

// --- then -------------------------------------------------------------------

/** The error a call was refused with; fails when it was accepted. */
async function refusal(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (err) {
    return err;
  }
  throw new Error("expected a refusal, but the call was accepted");
}

async function marksOf(w: ControlWorld, generation: number): Promise<Record<string, string>> {
  return Object.fromEntries(await w.store.generationFields(generation, "mark"));
}

async function originsOf(w: ControlWorld, generation: number): Promise<Record<string, string>> {
  return Object.fromEntries(await w.store.generationFields(generation, "origin"));
}

function expectMoved(err: unknown, generation: number, current: number | null): void {
  expect(err).toBeInstanceOf(GenerationMovedError);
  expect(err).toMatchObject({ generation, current });
}

export function controlStoreContract(name: string, makeWorld: ControlWorldFactory): void {
  describe(`ControlStore contract: ${name}`, () => {
    describe("the live generation", () => {
      it("given an empty store, when its state is read, then there is no generation, no pause, epoch 0 and no reducer version", async () => {
        const w = await makeWorld();
        expect(await w.store.state()).toEqual({ generation: null, paused: false, epoch: 0, reducerVersion: null });
        expect(await w.store.liveGeneration()).toBeNull();
      });

      it("given an empty store, when a generation is initialized, then it is live with that reducer version", async () => {
        const w = await makeWorld();
        const made = await w.store.initGeneration(RV);
        expect(made.reducerVersion).toBe(RV);
        expect(await w.store.state()).toEqual({ generation: made.generation, paused: false, epoch: 0, reducerVersion: RV });
        expect(await w.store.liveGeneration()).toBe(made.generation);
      });

      it("given a live generation, when another fold initializes with another reducer version, then it gets the live one and its version unchanged", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w, RV);
        expect(await w.store.initGeneration(OTHER_RV)).toEqual({ generation: live, reducerVersion: RV });
        expect((await w.store.state()).reducerVersion).toBe(RV);
      });

      it("given a live generation without a reducer version, when a fold initializes, then the generation takes that fold's version", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w, RV);
        await w.store.forgetGeneration(live); // what a generation made before versions were recorded looks like
        expect(await w.store.state()).toMatchObject({ generation: live, reducerVersion: null });
        expect(await w.store.initGeneration(OTHER_RV)).toEqual({ generation: live, reducerVersion: OTHER_RV });
        expect((await w.store.state()).reducerVersion).toBe(OTHER_RV);
      });

      it("given a live generation, when rebuilds are allocated, then each number is past every earlier one and the live generation stays", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const first = await aRebuild(w, "a");
        const second = await aRebuild(w, "b");
        expect(first).toBeGreaterThan(live);
        expect(second).toBeGreaterThan(first);
        expect(await w.store.liveGeneration()).toBe(live);
      });

      it("given generations made and the store then lost, when time has moved on and a generation is made again, then its number is past every earlier one", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuilt = await aRebuild(w, "a");
        await w.lose();
        expect(await w.store.state()).toEqual({ generation: null, paused: false, epoch: 0, reducerVersion: null });
        await w.elapse(1);
        const again = await aLiveGeneration(w);
        expect(again).toBeGreaterThan(Math.max(live, rebuilt));
        expect(await aRebuild(w, "b")).toBeGreaterThan(again);
      });

      it("given the store lost the live generation, when the old live fold seals, then it is told the generation moved, to none", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 10 });
        await w.lose();
        expectMoved(await refusal(sealed(w, live, LIVE, { "t:0": 11 })), live, null);
      });
    });

    describe("seal: the marks", () => {
      it("given a live generation, when it seals partitions, then each mark is the next offset sealed", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 10, "t:1": 3 });
        expect(await marksOf(w, live)).toEqual({ "t:0": "10", "t:1": "3" });
      });

      it("given a mark of 10, when a late seal says 4, then the mark stays 10 (marks only go up)", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 10 });
        await sealed(w, live, LIVE, { "t:0": 4 });
        expect(await marksOf(w, live)).toEqual({ "t:0": "10" });
      });

      it("given a batch sealed, when the same batch is sealed twice (a redelivery), then it is accepted and the mark is unchanged", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 20 }, { "t:0": 0 });
        await sealed(w, live, LIVE, { "t:0": 20 }, { "t:0": 0 });
        expect(await marksOf(w, live)).toEqual({ "t:0": "20" });
      });

      it("given marks past 2^53 and of different lengths, when lower offsets are sealed, then they compare as numbers, exactly", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 9_007_199_254_740_993n, "t:1": 10 });
        await sealed(w, live, LIVE, { "t:0": 9_007_199_254_740_992n, "t:1": 9 });
        expect(await marksOf(w, live)).toEqual({ "t:0": "9007199254740993", "t:1": "10" });
        await sealed(w, live, LIVE, { "t:1": 100 });
        expect((await marksOf(w, live))["t:1"]).toBe("100");
      });

      it("given a live generation, when a generation that is not the live one seals as live, then it is refused as moved, naming the live one", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "tok");
        expectMoved(await refusal(sealed(w, rebuild, LIVE, { "t:0": 5 })), rebuild, live);
        expect(await marksOf(w, rebuild)).toEqual({});
      });

      it("given a rebuild, when it seals with a token that is not its own, then it is refused as moved and nothing is sealed", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        expectMoved(await refusal(sealed(w, rebuild, "not-mine", { "t:0": 5 })), rebuild, live);
        expect(await marksOf(w, rebuild)).toEqual({});
        await sealed(w, rebuild, "mine", { "t:0": 5 });
        expect(await marksOf(w, rebuild)).toEqual({ "t:0": "5" });
      });

      it("given a rebuild whose build lease ran out, when it seals with its token, then the seal is accepted (the token, not the lease, is what a seal checks)", async () => {
        const w = await makeWorld();
        await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine", SHORT);
        await w.elapse(SHORT);
        expect(await w.store.buildingGenerations()).toEqual(new Set());
        await sealed(w, rebuild, "mine", { "t:0": 7 });
        expect(await marksOf(w, rebuild)).toEqual({ "t:0": "7" });
      });

      it("given a rebuild forgotten (dropped), when it seals with its token, then it is refused as moved", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await w.store.forgetGeneration(rebuild);
        expectMoved(await refusal(sealed(w, rebuild, "mine", { "t:0": 7 })), rebuild, live);
      });

      it("given a rebuild promoted, when it seals again with its build token, then it is refused as moved (its token is gone), while live seals go on", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await sealed(w, rebuild, "mine", { "t:0": 5 });
        await w.store.promote(rebuild, "mine", null, live);
        expectMoved(await refusal(sealed(w, rebuild, "mine", { "t:0": 6 })), rebuild, rebuild);
        await sealed(w, rebuild, LIVE, { "t:0": 6 });
        expect(await marksOf(w, rebuild)).toEqual({ "t:0": "6" });
      });
    });

    describe("seal: a store that went back in time (rollback)", () => {
      it("given the live mark is 120, when a live batch from 130 seals, then it is refused as behind and the mark stays", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 120 }, { "t:0": 100 });
        const err = await refusal(sealed(w, live, LIVE, { "t:0": 140 }, { "t:0": 130 }));
        expect(err).toBeInstanceOf(PositionContradictedError);
        expect(err).toMatchObject({ reason: "behind", generation: live, partition: "t:0", from: 130n });
        expect(await marksOf(w, live)).toEqual({ "t:0": "120" });
      });

      it("given the live mark is 120, when a live batch from 120 or below seals, then it is accepted (it resumes at, or redelivers below, the mark)", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 120 }, { "t:0": 100 });
        await sealed(w, live, LIVE, { "t:0": 130 }, { "t:0": 120 });
        await sealed(w, live, LIVE, { "t:0": 135 }, { "t:0": 80 });
        expect(await marksOf(w, live)).toEqual({ "t:0": "135" });
      });

      it("given no mark for a partition, when a live batch from far along seals, then it is accepted (there is nothing to contradict)", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:3": 600 }, { "t:3": 500 });
        expect(await marksOf(w, live)).toEqual({ "t:3": "600" });
      });

      it("given a rebuild's mark of 10, when it seals a batch from 50, then it is accepted (only live seals are checked)", async () => {
        const w = await makeWorld();
        await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await sealed(w, rebuild, "mine", { "t:0": 10 });
        await sealed(w, rebuild, "mine", { "t:0": 60 }, { "t:0": 50 });
        expect(await marksOf(w, rebuild)).toEqual({ "t:0": "60" });
      });

      it("given two partitions sealed at once, when the second starts past its mark, then the seal is refused without naming it, and neither mark moves", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 10, "t:1": 10 });
        const err = await refusal(sealed(w, live, LIVE, { "t:0": 20, "t:1": 30 }, { "t:0": 10, "t:1": 25 }));
        expect(err).toBeInstanceOf(PositionContradictedError);
        expect(err).toMatchObject({ reason: "behind", generation: live, partition: "?", from: 0n });
        expect(await marksOf(w, live)).toEqual({ "t:0": "10", "t:1": "10" });
      });
    });

    describe("seal and the fleet pause", () => {
      it("given a pause that holds, when the live fold seals, then the seal is refused as paused and nothing is sealed", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 100 });
        await w.store.pause(null, LONG);
        expect(await refusal(sealed(w, live, LIVE, { "t:0": 120 }, { "t:0": 100 }))).toBeInstanceOf(PauseLostError);
        expect(await marksOf(w, live)).toEqual({ "t:0": "100" });
      });

      it("given a pause released, when the live fold seals the batch again, then it is accepted", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const epoch = await w.store.pause(null, LONG);
        await w.store.unpause(epoch);
        await sealed(w, live, LIVE, { "t:0": 120 });
        expect(await marksOf(w, live)).toEqual({ "t:0": "120" });
      });

      it("given a pause whose lease ran out, when the live fold seals, then it is accepted (the lease frees the fleet by itself)", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await w.store.pause(null, SHORT);
        await w.elapse(SHORT);
        await sealed(w, live, LIVE, { "t:0": 120 });
        expect(await marksOf(w, live)).toEqual({ "t:0": "120" });
      });

      it("given a pause that holds, when a rebuild seals or checks an origin, then it is accepted (the pause holds only the live fold)", async () => {
        const w = await makeWorld();
        await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await w.store.pause(null, LONG);
        await sealed(w, rebuild, "mine", { "t:0": 9 });
        await w.store.checkOrigin(rebuild, "mine", "t:0", "fp");
        expect(await marksOf(w, rebuild)).toEqual({ "t:0": "9" });
      });
    });

    describe("seal: the change entries it appends", () => {
      const entry = (identity: string, version: number) => ["identity", identity, "version", String(version), "status", "ready"];
      const withEntries = (w: ControlWorld, generation: number, mode: string, marks: Record<string, number>, entries: string[][], first?: Record<string, number>) =>
        w.store.seal(generation, mode, offsets(marks), first === undefined ? undefined : offsets(first), { maxLen: 1000, entries });

      it("given a live generation, when a seal carries entries, then they are on its stream in the order given and the marks moved", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await withEntries(w, live, LIVE, { "t:0": 3 }, [entry("mur_a", 1), entry("mur_b", 1)]);
        await withEntries(w, live, LIVE, { "t:0": 5 }, [entry("mur_a", 2)]);
        expect(await w.changes(live)).toEqual([entry("mur_a", 1), entry("mur_b", 1), entry("mur_a", 2)]);
        expect(await marksOf(w, live)).toEqual({ "t:0": "5" });
      });

      it("given a rebuild, when it seals with its token and entries, then they are on the rebuild's stream, not the live one's", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await withEntries(w, rebuild, "mine", { "t:0": 2 }, [entry("mur_a", 1)]);
        expect(await w.changes(rebuild)).toEqual([entry("mur_a", 1)]);
        expect(await w.changes(live)).toEqual([]);
      });

      it("given seals refused (not the live generation, a pause, a batch past its mark), then none of their entries is appended and no mark moves", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await withEntries(w, live, LIVE, { "t:0": 120, "t:1": 50 }, [entry("mur_a", 1)], { "t:0": 100, "t:1": 40 });
        const rebuild = await aRebuild(w, "tok");
        expectMoved(await refusal(withEntries(w, rebuild, LIVE, { "t:0": 5 }, [entry("mur_x", 1)])), rebuild, live);
        // t:0 resumes at its mark; t:1 starts past its own: the whole seal is refused, t:0 included.
        const behind = await refusal(withEntries(w, live, LIVE, { "t:0": 130, "t:1": 70 }, [entry("mur_b", 1)], { "t:0": 120, "t:1": 60 }));
        expect(behind).toBeInstanceOf(PositionContradictedError);
        const epoch = await w.store.pause(null, LONG);
        expect(await refusal(withEntries(w, live, LIVE, { "t:0": 130 }, [entry("mur_c", 1)]))).toBeInstanceOf(PauseLostError);
        await w.store.unpause(epoch);
        expect(await w.changes(live)).toEqual([entry("mur_a", 1)]);
        expect(await w.changes(rebuild)).toEqual([]);
        expect(await marksOf(w, live)).toEqual({ "t:0": "120", "t:1": "50" });
      });
    });

    describe("origin fingerprints", () => {
      it("given a partition's first origin recorded, when the same fingerprint is checked, then it passes; a different one is refused as another log", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await w.store.checkOrigin(live, LIVE, "t:0", "aaa");
        await w.store.checkOrigin(live, LIVE, "t:0", "aaa");
        const err = await refusal(w.store.checkOrigin(live, LIVE, "t:0", "bbb"));
        expect(err).toBeInstanceOf(TopicOriginError);
        expect(err).toMatchObject({ partition: "t:0", generation: live });
        expect(await originsOf(w, live)).toEqual({ "t:0": "aaa" });
      });

      it("given an origin on one partition, when another partition or generation records a different one, then each keeps its own", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await w.store.checkOrigin(live, LIVE, "t:0", "aaa");
        await w.store.checkOrigin(live, LIVE, "t:1", "bbb");
        await w.store.checkOrigin(rebuild, "mine", "t:0", "ccc");
        expect(await originsOf(w, live)).toEqual({ "t:0": "aaa", "t:1": "bbb" });
        expect(await originsOf(w, rebuild)).toEqual({ "t:0": "ccc" });
      });

      it("given a generation not written by the mode, when it checks an origin, then it is refused as moved and nothing is recorded", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        expectMoved(await refusal(w.store.checkOrigin(rebuild, LIVE, "t:0", "x")), rebuild, live);
        expectMoved(await refusal(w.store.checkOrigin(rebuild, "not-mine", "t:0", "x")), rebuild, live);
        expect(await originsOf(w, rebuild)).toEqual({});
      });

      it("given a pause that holds, when the live fold checks an origin, then it is recorded (only seals wait for a pause)", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await w.store.pause(null, LONG);
        await w.store.checkOrigin(live, LIVE, "t:0", "aaa");
        expect(await originsOf(w, live)).toEqual({ "t:0": "aaa" });
      });
    });

    describe("the fleet pause: epochs, leases, acknowledgements", () => {
      it("given no pause, when a promote pauses, then it gets epoch 1 and the state says paused", async () => {
        const w = await makeWorld();
        await aLiveGeneration(w);
        expect(await w.store.pause(null, LONG)).toBe(1);
        expect(await w.store.state()).toMatchObject({ paused: true, epoch: 1 });
      });

      it("given a pause that holds, when another promote takes a new pause, then it is refused and the epoch stays", async () => {
        const w = await makeWorld();
        const epoch = await w.store.pause(null, LONG);
        expect(await refusal(w.store.pause(null, LONG))).toBeInstanceOf(PauseLostError);
        expect(await w.store.state()).toMatchObject({ paused: true, epoch });
      });

      it("given a pause that holds, when its holder renews it, then it keeps its epoch and holds for the new lease from then on (a renewal sets the lease)", async () => {
        const w = await makeWorld();
        const epoch = await w.store.pause(null, LONG);
        expect(await w.store.pause(epoch, SHORT)).toBe(epoch);
        await w.elapse(SHORT);
        expect(await w.store.state()).toMatchObject({ paused: false, epoch });
      });

      it("given a pause whose lease ran out, when its holder renews it, then it is refused (a lapsed lease is never taken back) and the fleet is free", async () => {
        const w = await makeWorld();
        const epoch = await w.store.pause(null, SHORT);
        await w.elapse(SHORT);
        expect(await w.store.state()).toMatchObject({ paused: false, epoch });
        expect(await refusal(w.store.pause(epoch, LONG))).toBeInstanceOf(PauseLostError);
        expect((await w.store.state()).paused).toBe(false);
      });

      it("given a pause whose lease ran out, when another promote pauses, then it gets the next epoch", async () => {
        const w = await makeWorld();
        const epoch = await w.store.pause(null, SHORT);
        await w.elapse(SHORT);
        expect(await w.store.pause(null, LONG)).toBe(epoch + 1);
      });

      it("given a pause of epoch 2, when epoch 1 is renewed or released, then the renewal is refused and the release changes nothing", async () => {
        const w = await makeWorld();
        await w.store.unpause(await w.store.pause(null, LONG));
        const epoch = await w.store.pause(null, LONG);
        expect(epoch).toBe(2);
        expect(await refusal(w.store.pause(1, LONG))).toBeInstanceOf(PauseLostError);
        await w.store.unpause(1);
        expect(await w.store.state()).toMatchObject({ paused: true, epoch: 2 });
        await w.store.unpause(2);
        expect(await w.store.state()).toMatchObject({ paused: false, epoch: 2 });
      });

      it("given fold members, when they acknowledge epochs, then the acks hold each member's latest; cleared, none", async () => {
        const w = await makeWorld();
        expect(await w.store.pauseAcks()).toEqual({});
        await w.store.ackPause("worker-a", 1);
        await w.store.ackPause("worker-b", 1);
        await w.store.ackPause("worker-a", 2);
        expect(await w.store.pauseAcks()).toEqual({ "worker-a": "2", "worker-b": "1" });
        await w.store.clearPauseAcks();
        expect(await w.store.pauseAcks()).toEqual({});
      });
    });

    describe("rebuild leases", () => {
      it("given rebuilds allocated with long leases, when the builds are listed, then both are building and neither is live", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const a = await aRebuild(w, "a");
        const b = await aRebuild(w, "b");
        expect(await w.store.buildingGenerations()).toEqual(new Set([a, b]));
        expect(await w.store.liveGeneration()).toBe(live);
      });

      it("given two rebuilds, when one renews its lease and the other's runs out, then only the renewed one is building", async () => {
        const w = await makeWorld();
        await aLiveGeneration(w);
        const kept = await aRebuild(w, "alive", SHORT);
        await aRebuild(w, "killed", SHORT);
        await w.store.renewBuild(kept, "alive", LONG);
        await w.elapse(SHORT);
        expect(await w.store.buildingGenerations()).toEqual(new Set([kept]));
      });

      it("given a rebuild's lease ran out, when it renews with its token, then it is building again", async () => {
        const w = await makeWorld();
        const rebuild = await aRebuild(w, "mine", SHORT);
        await w.elapse(SHORT);
        await w.store.renewBuild(rebuild, "mine", LONG);
        expect(await w.store.buildingGenerations()).toEqual(new Set([rebuild]));
      });

      it("given a rebuild, when a renewal names another token, then it is refused as moved (to no generation named) and the lease is not renewed", async () => {
        const w = await makeWorld();
        await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine", SHORT);
        expectMoved(await refusal(w.store.renewBuild(rebuild, "not-mine", LONG)), rebuild, null);
        await w.elapse(SHORT);
        expect(await w.store.buildingGenerations()).toEqual(new Set());
      });

      it("given a rebuild promoted, when it renews its lease, then it is refused as moved", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await w.store.promote(rebuild, "mine", null, live);
        expectMoved(await refusal(w.store.renewBuild(rebuild, "mine", LONG)), rebuild, null);
        expect(await w.store.buildingGenerations()).toEqual(new Set());
      });
    });

    describe("promote", () => {
      it("given a rebuild sealed as far as the live fold and a pause that holds, when it is promoted, then it is live, no longer building, and the pause is cleared", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 50 });
        const rebuild = await aRebuild(w, "mine");
        await sealed(w, rebuild, "mine", { "t:0": 50, "t:1": 7 });
        const epoch = await w.store.pause(null, LONG);
        await w.store.promote(rebuild, "mine", epoch, live);
        expect(await w.store.state()).toEqual({ generation: rebuild, paused: false, epoch, reducerVersion: RV });
        expect(await w.store.buildingGenerations()).toEqual(new Set());
        expect(await w.store.liveGeneration()).toBe(rebuild);
      });

      it("given a rebuild promoted, when the promote is resent (its reply was lost), then it is accepted again, whatever it names", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        const epoch = await w.store.pause(null, LONG);
        await w.store.promote(rebuild, "mine", epoch, live);
        await w.store.promote(rebuild, "mine", epoch, live);
        await w.store.promote(rebuild, "someone-else", 99, null, true);
        expect(await w.store.liveGeneration()).toBe(rebuild);
      });

      it("given a rebuild, when a promote names another token, then it is refused as moved and the live generation stays", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        expectMoved(await refusal(w.store.promote(rebuild, "not-mine", null, live)), rebuild, null);
        expect(await w.store.liveGeneration()).toBe(live);
        expect(await w.store.buildingGenerations()).toEqual(new Set([rebuild]));
      });

      it("given a live generation, when a promote names another one as the generation it replaces, then it is refused as moved", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        expectMoved(await refusal(w.store.promote(rebuild, "mine", null, live + 1)), rebuild, null);
        expectMoved(await refusal(w.store.promote(rebuild, "mine", null, null)), rebuild, null);
        expect(await w.store.liveGeneration()).toBe(live);
      });

      it("given two rebuilds of the same live generation, when both promote, then the first wins and the second is refused as moved", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const first = await aRebuild(w, "first");
        const second = await aRebuild(w, "second");
        await w.store.promote(first, "first", null, live);
        expectMoved(await refusal(w.store.promote(second, "second", null, live)), second, null);
        expect(await w.store.liveGeneration()).toBe(first);
        // Naming the generation it now replaces, the second one may follow.
        await w.store.promote(second, "second", null, first);
        expect(await w.store.liveGeneration()).toBe(second);
      });

      it("given no live generation (the store lost it), when a rebuild promotes naming none, then it is live (the restore)", async () => {
        const w = await makeWorld();
        const rebuild = await aRebuild(w, "mine");
        await w.store.promote(rebuild, "mine", null, null);
        expect(await w.store.state()).toMatchObject({ generation: rebuild, reducerVersion: RV });
      });

      it("given a pause whose lease ran out, when the promote names its epoch, then it is refused as paused-lost and nothing flips", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        const epoch = await w.store.pause(null, SHORT);
        await w.elapse(SHORT);
        expect(await refusal(w.store.promote(rebuild, "mine", epoch, live))).toBeInstanceOf(PauseLostError);
        expect(await w.store.liveGeneration()).toBe(live);
      });

      it("given another promote's pause, when a promote names an older epoch, then it is refused as paused-lost", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await w.store.unpause(await w.store.pause(null, LONG));
        await w.store.pause(null, LONG);
        expect(await refusal(w.store.promote(rebuild, "mine", 1, live))).toBeInstanceOf(PauseLostError);
        expect(await w.store.liveGeneration()).toBe(live);
      });

      it("given a pause that holds, when a promote names no epoch, then it flips and the pause still holds", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        const epoch = await w.store.pause(null, LONG);
        await w.store.promote(rebuild, "mine", null, live);
        expect(await w.store.state()).toMatchObject({ generation: rebuild, paused: true, epoch });
      });

      it("given the live fold sealed a partition past the rebuild, when it promotes, then it is refused as behind until it has caught up", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 50 });
        const rebuild = await aRebuild(w, "mine");
        await sealed(w, rebuild, "mine", { "t:0": 40 });
        expect(await refusal(w.store.promote(rebuild, "mine", null, live))).toBeInstanceOf(PromoteBehindError);
        expect(await w.store.liveGeneration()).toBe(live);
        await sealed(w, rebuild, "mine", { "t:0": 50 });
        await w.store.promote(rebuild, "mine", null, live);
        expect(await w.store.liveGeneration()).toBe(rebuild);
      });

      it("given the live fold sealed a partition the rebuild never sealed, when it promotes, then it is refused as behind", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 10, "t:1": 1 });
        const rebuild = await aRebuild(w, "mine");
        await sealed(w, rebuild, "mine", { "t:0": 10, "t:2": 99 });
        expect(await refusal(w.store.promote(rebuild, "mine", null, live))).toBeInstanceOf(PromoteBehindError);
      });

      it("given the live generation folded another log (a recreated topic), when the rebuild promotes saying so, then the live marks bound nothing", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 90 });
        const rebuild = await aRebuild(w, "mine");
        await sealed(w, rebuild, "mine", { "t:0": 3 });
        await w.store.promote(rebuild, "mine", null, live, true);
        expect(await w.store.liveGeneration()).toBe(rebuild);
      });

      it("given a rebuild promoted, when the old live fold seals, then it is refused as moved, naming the new live one", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await w.store.promote(rebuild, "mine", null, live);
        expectMoved(await refusal(sealed(w, live, LIVE, { "t:0": 1 })), live, rebuild);
      });
    });

    describe("rewind", () => {
      it("given the live generation's marks, when it is rewound, then its marks are gone and other generations keep theirs", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await sealed(w, live, LIVE, { "t:0": 10, "t:1": 20 });
        await sealed(w, rebuild, "mine", { "t:0": 5 });
        await w.store.rewind(live);
        expect(await marksOf(w, live)).toEqual({});
        expect(await marksOf(w, rebuild)).toEqual({ "t:0": "5" });
      });

      it("given a rewound live generation, when the fold seals its refold from offset 0, then it is accepted and the mark starts again from there", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 100 });
        await w.store.rewind(live);
        await sealed(w, live, LIVE, { "t:0": 4 }, { "t:0": 0 });
        expect(await marksOf(w, live)).toEqual({ "t:0": "4" });
      });

      it("given a generation that is not the live one, when it is rewound, then it is refused as moved and its marks stay", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await sealed(w, rebuild, "mine", { "t:0": 5 });
        expectMoved(await refusal(w.store.rewind(rebuild)), rebuild, live);
        expect(await marksOf(w, rebuild)).toEqual({ "t:0": "5" });
      });
    });

    describe("forgetting a generation", () => {
      it("given a rebuild with marks, origins and a lease, when it is forgotten, then all of them are gone and other generations keep theirs", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        const rebuild = await aRebuild(w, "mine");
        await sealed(w, live, LIVE, { "t:0": 1 });
        await w.store.checkOrigin(live, LIVE, "t:0", "aaa");
        await sealed(w, rebuild, "mine", { "t:0": 3 });
        await w.store.checkOrigin(rebuild, "mine", "t:0", "bbb");
        await w.store.forgetGeneration(rebuild);
        expect(await marksOf(w, rebuild)).toEqual({});
        expect(await originsOf(w, rebuild)).toEqual({});
        expect(await w.store.buildingGenerations()).toEqual(new Set());
        expectMoved(await refusal(w.store.renewBuild(rebuild, "mine", LONG)), rebuild, null);
        expect(await marksOf(w, live)).toEqual({ "t:0": "1" });
        expect(await originsOf(w, live)).toEqual({ "t:0": "aaa" });
      });

      it("given a live generation N with marks and origins, when generation N / 10 (its number's prefix) is forgotten, then N keeps every field", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 1 });
        await w.store.checkOrigin(live, LIVE, "t:0", "aaa");
        await w.store.forgetGeneration(Math.floor(live / 10));
        expect(await marksOf(w, live)).toEqual({ "t:0": "1" });
        expect(await originsOf(w, live)).toEqual({ "t:0": "aaa" });
        expect((await w.store.state()).reducerVersion).toBe(RV);
      });

      it("given the live generation, when it is forgotten, then it stays live without marks or reducer version", async () => {
        const w = await makeWorld();
        const live = await aLiveGeneration(w);
        await sealed(w, live, LIVE, { "t:0": 1 });
        await w.store.forgetGeneration(live);
        expect(await w.store.state()).toMatchObject({ generation: live, reducerVersion: null });
        expect(await marksOf(w, live)).toEqual({});
      });
    });
  });
}
