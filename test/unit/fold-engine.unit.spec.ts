/**
 * The fold engine (decide, plan, diff, watermarks, sealing, re-announce) on
 * the memory store, given/when/then. Records go through the batch router as
 * Kafka would deliver them; packets are checked against the pure reducer.
 */
import { describe, expect, it } from "vitest";
import { inBatchOrder, keyWaves, routeRecords } from "../../src/fold/batch-router.js";
import { IdentityApplier, type ApplyStats, type IdentityBatch } from "../../src/fold/identity-applier.js";
import { CHANGE_FIELD, DIGEST_FIELD, IdentityModel, MODEL_HEAP_BYTES } from "../../src/fold/identity-model.js";
import type { PartOps } from "../../src/fold/delta.js";
import { simulate, type SimulatedDelivery } from "../../producers/simulation.js";
import { MemoryIdentityStore } from "../../src/adapters/memory/identity-store.js";
import { canonicalJson, type Observation } from "../../src/core/index.js";
import { StaleVersionError, StateLostError } from "../../src/fold/identity-store.js";
import { reducerPackets } from "../support/identity-store-contract.js";
import { contentDigest, elementsOfParts } from "../support/content-digest.js";
import { contextOfObservation } from "../../src/core/identity.js";
import { emptyIdentityState, foldDelivery } from "../../src/core/identity-state.js";
import { computeParts } from "../../src/core/packet-parts.js";
import { FRAGMENTS, fragmentText } from "../../src/core/fragment.js";

import { sourceRecord } from "../support/source-record.js";
import type { SourceRecord } from "../../src/fold/source-record.js";

const G = 1;
const DECISION = { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 65_536 };

/** One agent, one scope, one snapshot: every delivery is of one identity. */
function oneIdentity(observations: number, options: { duplicateRate?: number; conflictRate?: number; seed?: number; memories?: number } = {}): SimulatedDelivery[] {
  return [...simulate({ agents: 1, observationsPerAgent: observations, snapshotEvery: 100_000, duplicateRate: 0.1, conflictRate: 0.05, seed: 3, ...options })];
}

const record = sourceRecord;

/** Observations `from..to` (inclusive) of a list, delivered at their index as offset, decided and routed. */
function delivered(all: readonly SimulatedDelivery[], from: number, to: number, partition = 0): IdentityBatch[] {
  const records = all.slice(from, to + 1).map((d, i) => record(d.observation, partition, from + i));
  const routed = routeRecords(records, DECISION);
  expect(routed.rejected).toEqual([]);
  return routed.identities;
}

const observations = (all: readonly SimulatedDelivery[], from: number, to: number) => all.slice(from, to + 1).map((d) => d.observation);
/** The content digest of the reducer's parts over exactly these observations, from scratch (test/support/content-digest.ts). */
function digestOf(expected: readonly Observation[]): string {
  const state = emptyIdentityState();
  for (const o of expected) foldDelivery(state, o);
  return contentDigest(elementsOfParts(computeParts(contextOfObservation(expected[0]!, DECISION.reducerVersion), state)));
}
const worker = (store: MemoryIdentityStore, feed = true) => new IdentityApplier(store, 100, { feed });

async function onlyIdentity(store: MemoryIdentityStore): Promise<string> {
  const ids = await store.listIdentities(G);
  expect(ids).toHaveLength(1);
  return ids[0]!;
}

/** The packet read back is the reducer's over exactly these observations. */
async function expectPacketOf(store: MemoryIdentityStore, expected: readonly Observation[]): Promise<string> {
  const id = await onlyIdentity(store);
  const packet = await store.read(G, id);
  expect(packet).toBe(reducerPackets(expected).get(id));
  return packet!;
}

async function version(store: MemoryIdentityStore): Promise<string | undefined> {
  return (await store.load(G, await onlyIdentity(store))).meta.v;
}

describe("given records of which some are not observations", () => {
  it("when a batch is decided and applied, then the bad ones are left for the DLQ and the rest is folded", async () => {
    const all = oneIdentity(6);
    const good = all.map((d, i) => record(d.observation, 0, i));
    const notJson = { ...record(all[0]!.observation, 0, 6), value: Buffer.from("{not json") };
    const wrongKey = { ...record(all[1]!.observation, 0, 7), key: Buffer.from("agent:x/p/c/s") };
    const routed = routeRecords([...good.slice(0, 3), notJson, ...good.slice(3), wrongKey], DECISION);
    expect(routed.rejected.map((r) => r.reason)).toEqual(["value_not_json", "key_scope_mismatch"]);
    const store = new MemoryIdentityStore();
    const stats = await worker(store).applyAll(G, routed.identities);
    expect(stats.applied).toBe(6);
    await expectPacketOf(store, observations(all, 0, 5));
  });
});

describe("given an identity with deliveries at offsets 0..10 on partition 0", () => {
  const all = oneIdentity(21);
  const given = async (store: MemoryIdentityStore, applier: IdentityApplier) => {
    await applier.applyAll(G, delivered(all, 0, 10));
    expect(await version(store)).toBe("1");
  };

  for (const [how, next] of [
    ["the worker's cached model", (_store: MemoryIdentityStore, applier: IdentityApplier) => applier],
    ["a model reloaded from the store", (store: MemoryIdentityStore) => worker(store)],
  ] as const) {
    it(`when a batch redelivers offsets 5..12 (${how}), then only 11 and 12 are applied and the version moves by 1`, async () => {
      const store = new MemoryIdentityStore();
      const first = worker(store);
      await given(store, first);
      const stats = await next(store, first).applyAll(G, delivered(all, 5, 12));
      expect(stats).toMatchObject({ applied: 2, duplicatesSkipped: 6, casRetries: 0 });
      expect(await version(store)).toBe("2");
      expect((await store.load(G, await onlyIdentity(store))).meta["w:t:0"]).toBe("12");
      await expectPacketOf(store, observations(all, 0, 12));
    });
  }

  it("when offsets 0..2 of partition 1 arrive, then they are applied: each partition has its own watermark", async () => {
    const store = new MemoryIdentityStore();
    const applier = worker(store);
    await given(store, applier);
    const stats = await applier.applyAll(G, delivered(all, 11, 13, 1).map((b) => ({ ...b, deliveries: b.deliveries.map((d, i) => ({ ...d, offset: BigInt(i) })) })));
    expect(stats).toMatchObject({ applied: 3, duplicatesSkipped: 0 });
    const { meta } = await store.load(G, await onlyIdentity(store));
    expect([meta["w:t:0"], meta["w:t:1"], meta.v]).toEqual(["10", "2", "2"]);
    await expectPacketOf(store, observations(all, 0, 13));
  });

  it("when a worker with a stale model (another writer applied 11..15 since) applies 11..20, then it reloads, skips 11..15 and converges", async () => {
    const store = new MemoryIdentityStore();
    const stale = worker(store);
    await given(store, stale);
    await worker(store).applyAll(G, delivered(all, 0, 15)); // the other writer: 0..10 skipped, 11..15 applied
    expect(await version(store)).toBe("2");
    const stats = await stale.applyAll(G, delivered(all, 11, 20));
    expect(stats).toMatchObject({ casRetries: 1, applied: 5, duplicatesSkipped: 5 });
    expect(await version(store)).toBe("3");
    await expectPacketOf(store, observations(all, 0, 20));
  });
});

describe("given an identity that knows an observation id", () => {
  // The simulation's "conflict" deliveries resend a known id with a revised judgment.
  const all = oneIdentity(40, { duplicateRate: 0, conflictRate: 0.3, seed: 11 });
  const changed = all.findIndex((d) => d.kind === "conflict");
  const original = all.findIndex((d) => d.observation.observation_id === all[changed]!.observation.observation_id);

  it("when a delivery changes its payload, then the id is quarantined and the conflict counted", async () => {
    expect(original).toBeLessThan(changed);
    const store = new MemoryIdentityStore();
    const applier = worker(store);
    await applier.applyAll(G, delivered(all, 0, changed - 1));
    const stats = await applier.applyAll(G, delivered(all, changed, changed));
    expect(stats).toMatchObject({ applied: 1, conflicting: 1 });
    const packet = JSON.parse(await expectPacketOf(store, observations(all, 0, changed))) as { rejections: { observation_id: string }[] };
    expect(packet.rejections.map((r) => r.observation_id)).toContain(all[changed]!.observation.observation_id);
  });

  it("when a delivery repeats its payload, then it is counted but nothing is quarantined", async () => {
    const store = new MemoryIdentityStore();
    const applier = worker(store);
    await applier.applyAll(G, delivered(all, 0, changed - 1));
    const again = routeRecords([record(all[original]!.observation, 0, changed)], DECISION).identities;
    const stats = await applier.applyAll(G, again);
    expect(stats).toMatchObject({ applied: 1, conflicting: 0 });
    const packet = JSON.parse(await expectPacketOf(store, [...observations(all, 0, changed - 1), all[original]!.observation])) as { rejections: unknown[] };
    expect(packet.rejections).toEqual([]);
  });
});

describe("given a change applied by a worker that died before announcing it", () => {
  const all = oneIdentity(15);
  const given = async (store: MemoryIdentityStore): Promise<ApplyStats> => worker(store).applyAll(G, delivered(all, 0, 9)); // its stats are lost with it

  it("when a fresh worker gets the redelivery, then it announces the stored change again, once", async () => {
    const store = new MemoryIdentityStore();
    const lost = await given(store);
    const fresh = worker(store);
    const stats = await fresh.applyAll(G, delivered(all, 0, 9));
    expect(stats).toMatchObject({ applied: 0, duplicatesSkipped: 10 });
    const packet = (await store.read(G, await onlyIdentity(store)))!;
    expect(stats.changes).toHaveLength(1);
    expect(stats.changes[0]).toMatchObject({ version: 1, deliveries: 10, digest: digestOf(observations(all, 0, 9)), status: (JSON.parse(packet) as { status: string }).status, repeated: true });
    expect(stats.changes[0]).toEqual({ ...lost.changes[0], repeated: true });
    // Its model is cached now: a further redelivery is nothing new to announce.
    expect((await fresh.applyAll(G, delivered(all, 0, 9))).changes).toEqual([]);
    expect(await version(store)).toBe("1");
  });

  it("when the redelivery also brings new records, then the stored change is announced before the new one", async () => {
    const store = new MemoryIdentityStore();
    await given(store);
    const stats = await worker(store).applyAll(G, delivered(all, 0, 14));
    await expectPacketOf(store, observations(all, 0, 14));
    expect(stats.changes.map((c) => [c.version, c.deliveries, c.repeated])).toEqual([[1, 10, true], [2, 5, false]]);
    expect(stats.changes[1]!.digest).toBe(digestOf(observations(all, 0, 14)));
    expect(stats.changes[0]!.digest).not.toBe(stats.changes[1]!.digest);
  });

  it("when the change feed is off, then nothing is announced", async () => {
    const store = new MemoryIdentityStore();
    await given(store);
    expect((await worker(store, false).applyAll(G, delivered(all, 0, 9))).changes).toEqual([]);
  });
});

describe("given a cached model with the change feed on", () => {
  // Seed 3's first five observations are helpful: no delivery proposes a review. The sixth is harmful: it does.
  const all = [...simulate({ agents: 1, observationsPerAgent: 6, snapshotEvery: 100_000, duplicateRate: 0, conflictRate: 0, seed: 3 })];

  it("when each change's note is the one stored, then only the first plan writes it, and a new proposal writes it again", () => {
    const first = delivered(all, 0, 0)[0]!;
    const model = new IdentityModel(first.identity, first.context);
    const written: string[][] = [];
    for (let i = 0; i < all.length; i++) {
      const plan = model.plan(delivered(all, i, i)[0]!.deliveries, { feed: true });
      written.push(plan.ops.toArray().filter((o) => o.part === "m" && o.field === CHANGE_FIELD).map((o) => fragmentText(o.value)));
      model.committed(plan, i + 1);
    }
    expect(written.slice(0, 5)).toEqual([['{"n":1,"p":[]}'], [], [], [], []]);
    expect(written[5]).toEqual([expect.stringMatching(/^\{"n":1,"p":\["mus_[0-9a-f]{64}"\]\}$/)]);
  });
});

describe("given an identity at 1,024 deliveries", () => {
  // Few memories, so few subjects: below the 128-subject bound the packet is not rejected.
  const all = oneIdentity(1_027, { seed: 5, memories: 6 });
  const given = async (store: MemoryIdentityStore, applier: IdentityApplier) => {
    for (let i = 0; i < 1_024; i += 256) await applier.applyAll(G, delivered(all, i, i + 255));
    const packet = await expectPacketOf(store, observations(all, 0, 1_023));
    expect((JSON.parse(packet) as { status: string }).status).not.toBe("rejected"); // at the bound, still a packet
  };

  it("when one more delivery arrives, then it is sealed: the reducer's rejected packet, its parts dropped; later ones only count", async () => {
    const store = new MemoryIdentityStore();
    const applier = worker(store);
    await given(store, applier);
    await applier.applyAll(G, delivered(all, 1_024, 1_024));
    const packet = await expectPacketOf(store, observations(all, 0, 1_024));
    expect(JSON.parse(packet)).toMatchObject({ status: "rejected", rejections: [{ reason_codes: ["observation_malformed"] }] });
    const sealed = await store.load(G, await onlyIdentity(store));
    expect(sealed.records.size).toBe(0);
    expect(sealed.meta).toMatchObject({ rej: packet, n: "1025", v: "5" });
    expect(sealed.meta.skel).toBeUndefined();
    await worker(store).applyAll(G, delivered(all, 1_025, 1_026)); // a reloaded model stays sealed too
    await expectPacketOf(store, observations(all, 0, 1_026));
    expect((await store.load(G, await onlyIdentity(store))).meta).toMatchObject({ n: "1027", v: "6", "w:t:0": "1026" });
  });
});

describe("given a worker that wrote an identity the store then lost", () => {
  it("when it applies to it again, then it stops with StateLostError and writes nothing", async () => {
    const all = oneIdentity(10);
    const store = new MemoryIdentityStore();
    const applier = worker(store);
    await applier.applyAll(G, delivered(all, 0, 4));
    const id = await onlyIdentity(store);
    store.lose(G, id);
    await expect(applier.applyAll(G, delivered(all, 5, 9))).rejects.toBeInstanceOf(StateLostError);
    expect(await store.load(G, id)).toEqual({ meta: {}, records: new Map(), history: new Map() });
  });
});

describe("given a store whose apply fails", () => {
  it("when a batch is applied, then its identities were indexed first (a crash must not leave one unlisted)", async () => {
    class Failing extends MemoryIdentityStore {
      override async apply(): Promise<number> {
        throw new Error("store down");
      }
    }
    const store = new Failing();
    const batches = delivered(oneIdentity(3), 0, 2);
    await expect(worker(store).applyAll(G, batches)).rejects.toThrow("store down");
    expect(await store.listIdentities(G)).toEqual(batches.map((b) => b.identity));
  });
});

describe("given an identity the worker has written", () => {
  /** The memory store, recording the identities each addToIndex names and each load. */
  class Counting extends MemoryIdentityStore {
    readonly indexed: string[][] = [];
    readonly loads: string[] = [];
    override async addToIndex(generation: number, identities: readonly string[]): Promise<ReadonlySet<string>> {
      this.indexed.push([...identities]);
      return super.addToIndex(generation, identities);
    }
    override async load(generation: number, identity: string) {
      this.loads.push(identity);
      return super.load(generation, identity);
    }
  }

  it("when its next batch is applied, then it is not indexed again, and a new identity still is", async () => {
    const store = new Counting();
    const applier = worker(store);
    const one = oneIdentity(6, { seed: 3 });
    const [first] = delivered(one, 0, 2);
    await applier.applyAll(G, [first!]);
    expect(store.indexed).toEqual([[first!.identity]]);
    const [second] = delivered(one, 3, 5);
    // Two agents: the second agent's scope is another identity.
    const two = [...simulate({ agents: 2, observationsPerAgent: 2, snapshotEvery: 100_000, duplicateRate: 0, conflictRate: 0, seed: 4 })];
    const stranger = delivered(two, 0, 3, 1).find((b) => b.identity !== first!.identity);
    await applier.applyAll(G, [second!, stranger!]);
    expect(store.indexed).toEqual([[first!.identity], [stranger!.identity]]);
    expect((await store.listIdentities(G)).sort()).toEqual([first!.identity, stranger!.identity].sort());
  });

  /** One identity's deliveries 0-1, then 2-3, applied by `applier` (`between` runs in between); returns the identity. */
  async function twoBatches(applier: IdentityApplier, between: () => void = () => undefined): Promise<string> {
    const one = oneIdentity(4, { seed: 3 });
    const [first] = delivered(one, 0, 1);
    await applier.applyAll(G, [first!]);
    between();
    await applier.applyAll(G, delivered(one, 2, 3));
    return first!.identity;
  }

  it("when the cache has forgotten it, then its next batch indexes it again (idempotent)", async () => {
    const store = new Counting();
    const applier = worker(store);
    const id = await twoBatches(applier, () => applier.clear());
    expect(store.indexed).toEqual([[id], [id]]);
  });

  it("when the store's index may lose listings (a Redis Cluster), then a cached identity is listed again", async () => {
    class Parting extends Counting {
      override readonly indexKeepsListings = false;
    }
    const store = new Parting();
    const id = await twoBatches(new IdentityApplier(store, 100));
    expect(store.indexed).toEqual([[id], [id]]);
    expect(store.loads).toEqual([]); // cached: listing again does not load it
  });

  it("when an identity is new to the index, then it is not loaded; one listed before is", async () => {
    const store = new Counting();
    const one = oneIdentity(4, { seed: 3 });
    const [first] = delivered(one, 0, 1);
    await worker(store).applyAll(G, [first!]);
    expect(store.loads).toEqual([]);
    const [second] = delivered(one, 2, 3);
    await worker(store).applyAll(G, [second!]); // another worker: its cache is empty
    expect(store.loads).toEqual([first!.identity]);
    await expectPacketOf(store, observations(one, 0, 3));
  });
});

describe("given two batches of one new identity (two partitions) whose turns come in the other order", () => {
  it("when the one the index called new waits behind the other's turn, then it loads what that one wrote (no stale write)", async () => {
    let releaseIndex!: () => void;
    let releaseApply!: () => void;
    let applyEntered!: () => void;
    const indexGate = new Promise<void>((r) => (releaseIndex = r));
    const applyGate = new Promise<void>((r) => (releaseApply = r));
    const entered = new Promise<void>((r) => (applyEntered = r));
    class Gated extends MemoryIdentityStore {
      private indexCalls = 0;
      private applies = 0;
      override async addToIndex(generation: number, identities: readonly string[]): Promise<ReadonlySet<string>> {
        const added = await super.addToIndex(generation, identities);
        if (this.indexCalls++ === 0) await indexGate; // the first batch's answer ("new") comes back last
        return added;
      }
      override async apply(...args: Parameters<MemoryIdentityStore["apply"]>): Promise<number> {
        if (this.applies++ === 0) {
          applyEntered();
          await applyGate;
        }
        return super.apply(...args);
      }
    }
    const store = new Gated();
    // A bound no model fits: the first turn's model is not cached for the second.
    const applier = new IdentityApplier(store, 100, { cacheMaxBytes: 1 });
    const one = oneIdentity(4, { seed: 3 });
    const first = applier.applyAll(G, delivered(one, 0, 1, 0));
    const second = applier.applyAll(G, delivered(one, 2, 3, 1));
    await entered; // the second batch's turn is writing
    releaseIndex(); // the first batch learns the identity was new, and queues behind that turn
    await new Promise((r) => setImmediate(r));
    releaseApply();
    const [a, b] = await Promise.all([first, second]);
    expect(a.casRetries + b.casRetries).toBe(0);
    await expectPacketOf(store, observations(one, 0, 3));
  });
});

describe("given a store whose index says an identity is new while it has state", () => {
  it("when a batch of it is applied, then the version check catches it, and it is loaded and applied again", async () => {
    class Forgetful extends MemoryIdentityStore {
      override async addToIndex(generation: number, identities: readonly string[]): Promise<ReadonlySet<string>> {
        await super.addToIndex(generation, identities);
        return new Set(identities); // as if none had been listed
      }
    }
    const store = new Forgetful();
    const one = oneIdentity(6, { seed: 3 });
    await worker(store).applyAll(G, delivered(one, 0, 2));
    const stats = await worker(store).applyAll(G, delivered(one, 3, 5));
    expect(stats.casRetries).toBe(1);
    await expectPacketOf(store, observations(one, 0, 5));
  });
});

describe("given other writers that keep moving an identity's version", () => {
  /** The memory store, answering the first `stale` applies with a stale version (another writer got there first). */
  class Contended extends MemoryIdentityStore {
    applies = 0;
    stale = 0;
    override async apply(...args: Parameters<MemoryIdentityStore["apply"]>): Promise<number> {
      this.applies++;
      if (this.applies <= this.stale) throw new StaleVersionError(args[1], this.applies);
      return super.apply(...args);
    }
  }
  const contended = (stale: number) => Object.assign(new Contended(), { stale });
  const all = oneIdentity(3);

  it("when the version moves twice and 3 attempts are allowed, then the third attempt lands and 2 retries are counted", async () => {
    const store = contended(2);
    const stats = await new IdentityApplier(store, 100, { casAttempts: 3 }).applyAll(G, delivered(all, 0, 2));
    expect([store.applies, stats.casRetries, stats.applied]).toEqual([3, 2, 3]);
    await expectPacketOf(store, observations(all, 0, 2));
  });

  it("when it moves on every attempt, then the applier gives up after its casAttempts with the stale version (the batch is retried)", async () => {
    const store = contended(Infinity);
    await expect(new IdentityApplier(store, 100, { casAttempts: 3 }).applyAll(G, delivered(all, 0, 2))).rejects.toBeInstanceOf(StaleVersionError);
    expect(store.applies).toBe(3);
  });

  it("when no budget is given, then it makes 20 attempts (the casMaxAttempts setting's default)", async () => {
    const store = contended(Infinity);
    await expect(worker(store).applyAll(G, delivered(all, 0, 2))).rejects.toBeInstanceOf(StaleVersionError);
    expect(store.applies).toBe(20);
  });
});

describe("given a batch of many identities and a store that answers slowly", () => {
  /** The memory store, with every apply held until released: counts how many are in flight at once. */
  class SlowStore extends MemoryIdentityStore {
    inFlight = 0;
    most = 0;
    failOn: string | undefined;
    override async apply(...args: Parameters<MemoryIdentityStore["apply"]>): Promise<number> {
      this.inFlight++;
      this.most = Math.max(this.most, this.inFlight);
      await new Promise((r) => setImmediate(r));
      this.inFlight--;
      if (args[1] === this.failOn) throw new Error("store failure");
      return super.apply(...args);
    }
  }
  const many = [...simulate({ agents: 60, observationsPerAgent: 3, snapshotEvery: 100_000, duplicateRate: 0, conflictRate: 0, seed: 9 })];
  const batches = () => routeRecords(many.map((d, i) => record(d.observation, 0, i)), DECISION).identities;

  it("when it is applied with 8 writes in flight, then never more than 8 are, and every identity is folded", async () => {
    const store = new SlowStore();
    const stats = await new IdentityApplier(store, 100, { feed: true, inFlight: 8 }).applyAll(G, batches());
    expect(stats.identities).toBe(60);
    expect(store.most).toBe(8);
    const expected = reducerPackets(many.map((d) => d.observation));
    for (const id of await store.listIdentities(G)) expect(await store.read(G, id)).toBe(expected.get(id));
  });

  it("when 3,000 identities queue for 8 slots, then never more than 8 are in flight, and every identity is folded once", async () => {
    // Thousands waiting: the applier's wait queue drops its woken callers in place past 1,024 (the slot's own path).
    const crowd = [...simulate({ agents: 3_000, observationsPerAgent: 1, snapshotEvery: 100_000, duplicateRate: 0, conflictRate: 0, seed: 10 })];
    const store = new SlowStore();
    const stats = await new IdentityApplier(store, 10, { feed: false, inFlight: 8 }).applyAll(G, routeRecords(crowd.map((d, i) => record(d.observation, 0, i)), DECISION).identities);
    expect(stats.identities).toBe(3_000);
    expect(stats.applied).toBe(3_000);
    expect(store.most).toBe(8);
    expect(store.inFlight).toBe(0);
    expect((await store.listIdentities(G)).length).toBe(3_000);
  });

  it("when one identity's write fails, then the call fails once the started writes settle, and starts no more", async () => {
    const store = new SlowStore();
    const all = batches();
    store.failOn = all[3]!.identity;
    const applier = new IdentityApplier(store, 100, { feed: true, inFlight: 4 });
    await expect(applier.applyAll(G, all)).rejects.toThrow("store failure");
    expect(store.inFlight).toBe(0);
    const written = await Promise.all(all.map(async (b) => (await store.load(G, b.identity)).meta.v !== undefined));
    expect(written.filter(Boolean).length).toBeLessThan(8); // the first wave, not the whole batch
  });

  /** The records of `many`, grouped as a replay's chunk groups them: by Kafka key, in offset order. */
  const byKey = () => {
    const groups = new Map<string, SourceRecord[]>();
    many.forEach((d, i) => {
      const r = record(d.observation, 0, i);
      const key = r.key!.toString("latin1");
      groups.set(key, [...(groups.get(key) ?? []), r]);
    });
    return [...groups.values()];
  };

  it("when groups of records are decided at their turn with 4 writes in flight, then never more than 4 are decided and unwritten, and every identity is folded", async () => {
    const store = new SlowStore();
    const groups = byKey();
    let decided = 0;
    let most = 0;
    const base = store.apply.bind(store);
    store.apply = async (...args) => {
      const version = await base(...args);
      decided--; // this group's observations are written: nothing of it is held any more
      return version;
    };
    const stats = await new IdentityApplier(store, 100, { feed: true, inFlight: 4 }).applyDeciding(G, groups, (records) => {
      decided++;
      most = Math.max(most, decided);
      return routeRecords(records, DECISION).identities;
    });
    expect(groups.length).toBe(60);
    expect(stats.identities).toBe(60);
    expect(stats.applied).toBe(many.length);
    expect(most).toBe(4);
    const expected = reducerPackets(many.map((d) => d.observation));
    expect((await store.listIdentities(G)).sort()).toEqual([...expected.keys()].sort());
    for (const id of await store.listIdentities(G)) expect(await store.read(G, id)).toBe(expected.get(id));
  });

  it("when a group's write fails, then the call fails once the started writes settle, and no later group is decided", async () => {
    const store = new SlowStore();
    const groups = byKey();
    store.failOn = routeRecords(groups[3]!, DECISION).identities[0]!.identity;
    let decisions = 0;
    const applier = new IdentityApplier(store, 100, { feed: true, inFlight: 4 });
    await expect(
      applier.applyDeciding(G, groups, (records) => {
        decisions++;
        return routeRecords(records, DECISION).identities;
      }),
    ).rejects.toThrow("store failure");
    expect(store.inFlight).toBe(0);
    expect(decisions).toBeLessThan(8); // the first waves, not all 60 groups
  });

  it("when one key's group holds several identities (snapshots changed) over two partitions, then each identity gets all its records, in order", async () => {
    // One agent, a new retrieval snapshot every 7 steps: one scope key, several reducer identities; a foreign
    // partitioner put the key's records on two partitions (offsets counted per partition).
    const log = [...simulate({ agents: 1, observationsPerAgent: 40, snapshotEvery: 7, duplicateRate: 0.15, conflictRate: 0.1, seed: 21 })];
    const offsets = [0, 0];
    const records = log.map((d, i) => record(d.observation, i % 2, offsets[i % 2]!++));
    // One key: the chunk holds them as one group, in arrival order.
    expect(new Set(records.map((r) => r.key!.toString("latin1"))).size).toBe(1);
    const store = new MemoryIdentityStore();
    const stats = await new IdentityApplier(store, 100, { inFlight: 4 }).applyDeciding(G, [records], (rs) => routeRecords(rs, DECISION).identities);
    const expected = reducerPackets(log.map((d) => d.observation));
    expect(expected.size).toBeGreaterThan(3);
    expect(stats.identities).toBe(expected.size);
    expect(stats.applied).toBe(log.length);
    expect((await store.listIdentities(G)).sort()).toEqual([...expected.keys()].sort());
    for (const [id, packet] of expected) expect(await store.read(G, id)).toBe(packet);
  });

  it("when a group holds no accepted record, then nothing of it is indexed or written", async () => {
    const store = new MemoryIdentityStore();
    const bad: SourceRecord = { topic: "t", partition: 0, offset: "0", key: null, value: Buffer.from("garbage") };
    let rejected = 0;
    const stats = await new IdentityApplier(store, 100).applyDeciding(G, [[bad]], (records) => {
      const routed = routeRecords(records, DECISION);
      rejected += routed.rejected.length;
      return routed.identities;
    });
    expect(rejected).toBe(1);
    expect(stats).toMatchObject({ identities: 0, applied: 0 });
    expect(await store.listIdentities(G)).toEqual([]);
  });
});

describe("given a live batch of 60 identities' records, interleaved, and some that are not observations", () => {
  // Three observations of each of 60 agents (one identity each), dealt round-robin so every key's records are
  // spread over the whole batch; two records that the DLQ gets, one of them under another agent's key.
  const log = [...simulate({ agents: 60, observationsPerAgent: 3, snapshotEvery: 100_000, duplicateRate: 0, conflictRate: 0, seed: 12 })];
  const byAgent = new Map<string, SimulatedDelivery[]>();
  for (const d of log) byAgent.set(d.observation.scope.agent_id, [...(byAgent.get(d.observation.scope.agent_id) ?? []), d]);
  const dealt = [0, 1, 2].flatMap((round) => [...byAgent.values()].map((ds) => ds[round]!));
  const records: SourceRecord[] = dealt.map((d, i) => record(d.observation, 0, i));
  records.splice(7, 0, { ...record(dealt[59]!.observation, 0, 0), value: Buffer.from("{not json") }); // under the last agent's key
  records.splice(50, 0, { ...record(dealt[1]!.observation, 0, 0), key: Buffer.from(records[3]!.key!) }); // agent 1 under agent 3's key
  records.forEach((r, i) => (r.offset = String(i)));
  const keyOf = (r: SourceRecord) => r.key!.toString("latin1");

  it("when it is cut into waves of 16, then each wave holds whole keys, in their order, and closes at 16 or more", () => {
    const waves = keyWaves(records, 16);
    const offsetsOfKey = (rs: readonly SourceRecord[]) => {
      const out = new Map<string, string[]>();
      for (const r of rs) out.set(keyOf(r), [...(out.get(keyOf(r)) ?? []), r.offset]);
      return out;
    };
    const expected = offsetsOfKey(records);
    const seen = new Map<string, string[]>();
    for (const wave of waves) for (const [key, offsets] of offsetsOfKey(wave)) {
      expect(seen.has(key)).toBe(false); // a key is in one wave only
      seen.set(key, offsets);
    }
    expect(seen).toEqual(expected); // every record once, each key's in the batch's order
    for (const wave of waves.slice(0, -1)) expect(wave.length).toBeGreaterThanOrEqual(16);
    // A wave closes at its first group past the bound: without its last group it was under 16.
    for (const wave of waves.slice(0, -1)) expect(wave.length - expected.get(keyOf(wave[wave.length - 1]!))!.length).toBeLessThan(16);
    expect(waves.length).toBeGreaterThan(5);
  });

  it("when the waves are decided and applied one after another, then one wave at a time is decided and unwritten, and every identity is folded as the reducer folds it", async () => {
    const store = new MemoryIdentityStore();
    let writes = 0;
    const base = store.apply.bind(store);
    store.apply = async (...args) => {
      const version = await base(...args);
      writes++;
      return version;
    };
    let decided = 0;
    let identitiesDecided = 0;
    const writtenWhenDecided: [number, number][] = [];
    const rejected: string[] = [];
    const waves = keyWaves(records, 16);
    const stats = await new IdentityApplier(store, 100, { feed: true }).applyInWaves(G, waves, (wave) => {
      decided++;
      writtenWhenDecided.push([writes, identitiesDecided]); // every identity of the waves before is written
      const routed = routeRecords(wave, DECISION);
      for (const r of routed.rejected) rejected.push(r.reason);
      identitiesDecided += routed.identities.length;
      return routed.identities;
    });
    for (const [w, before] of writtenWhenDecided) expect(w).toBe(before);
    expect(decided).toBe(waves.length);
    expect(rejected.sort()).toEqual(["key_scope_mismatch", "value_not_json"]);
    expect(stats.applied).toBe(log.length);
    expect(stats.identities).toBe(60);
    expect(stats.newIdentities).toHaveLength(60);
    expect(stats.changes).toHaveLength(60);
    const expected = reducerPackets(log.map((d) => d.observation));
    expect((await store.listIdentities(G)).sort()).toEqual([...expected.keys()].sort());
    for (const [id, packet] of expected) expect(await store.read(G, id)).toBe(packet);
  });

  it("when the waves' rejections are put back in order, then they come as the batch held them", () => {
    const rejected = keyWaves(records, 16).flatMap((wave) => routeRecords(wave, DECISION).rejected);
    expect(rejected.map((r) => r.record.offset)).not.toEqual(["7", "50"]); // the waves went key by key
    expect(inBatchOrder(rejected, records).map((r) => [r.record.offset, r.reason])).toEqual([["7", "value_not_json"], ["50", "key_scope_mismatch"]]);
  });

  it("when a wave's write fails, then the call fails and no later wave is decided", async () => {
    const waves = keyWaves(records, 16);
    const store = new MemoryIdentityStore();
    const failOn = routeRecords(waves[2]!, DECISION).identities[0]!.identity;
    const base = store.apply.bind(store);
    store.apply = async (...args) => {
      if (args[1] === failOn) throw new Error("store failure");
      return base(...args);
    };
    let decisions = 0;
    await expect(
      new IdentityApplier(store, 100).applyInWaves(G, waves, (wave) => {
        decisions++;
        return routeRecords(wave, DECISION).identities;
      }),
    ).rejects.toThrow("store failure");
    expect(decisions).toBe(3);
  });
});

describe("given a batch in which one key holds 40 records and two others 3 each", () => {
  // Three agents' streams as the simulation interleaves them: all 40 of agent:0's, the first 3 of the other two's.
  const seen = new Map<string, number>();
  const log = [...simulate({ agents: 3, observationsPerAgent: 40, snapshotEvery: 100_000, duplicateRate: 0.1, conflictRate: 0.05, seed: 31 })].filter((d) => {
    const agent = d.observation.scope.agent_id;
    seen.set(agent, (seen.get(agent) ?? 0) + 1);
    return agent === "agent:0" || seen.get(agent)! <= 3;
  });
  const records = log.map((d, i) => record(d.observation, 0, i));
  const hotKey = records.find((r, i) => log[i]!.observation.scope.agent_id === "agent:0")!.key!.toString("latin1");

  it("when it is cut into waves of 16, then the hot key is cut into consecutive pieces of 16, in order, and no wave holds 32", () => {
    const waves = keyWaves(records, 16);
    for (const wave of waves) expect(wave.length).toBeLessThan(32);
    const hotOffsets = waves.map((wave) => wave.filter((r) => r.key!.toString("latin1") === hotKey).map((r) => Number(r.offset)));
    const holding = hotOffsets.map((o, i) => (o.length > 0 ? i : -1)).filter((i) => i >= 0);
    expect(holding.length).toBeGreaterThan(2);
    expect(holding).toEqual(Array.from({ length: holding.length }, (_, k) => holding[0]! + k)); // consecutive waves
    const expectedHot = records.filter((r) => r.key!.toString("latin1") === hotKey).map((r) => Number(r.offset));
    expect(hotOffsets.flat()).toEqual(expectedHot); // every record once, in the batch's order
    for (const o of hotOffsets) expect(o.length).toBeLessThanOrEqual(16);
  });

  it("when the waves are applied one after another, then the hot identity is folded as the reducer folds all its records", async () => {
    const store = new MemoryIdentityStore();
    const stats = await new IdentityApplier(store, 100).applyInWaves(G, keyWaves(records, 16), (wave) => routeRecords(wave, DECISION).identities);
    expect(stats.applied).toBe(log.length);
    const expected = reducerPackets(log.map((d) => d.observation));
    expect(expected.size).toBe(3);
    for (const [id, packet] of expected) expect(await store.read(G, id)).toBe(packet);
  });
});

describe("given a cache bounded in bytes", () => {
  /** The memory store, counting loads: a load is a cache miss. */
  class CountingStore extends MemoryIdentityStore {
    loads = 0;
    override async load(...args: Parameters<MemoryIdentityStore["load"]>) {
      this.loads++;
      return super.load(...args);
    }
  }
  const one = MODEL_HEAP_BYTES.base + MODEL_HEAP_BYTES.perObservation; // a model holding one observation
  // Ten identities of two observations each: the first of each in one batch, the second in the next.
  const agents = [...simulate({ agents: 10, observationsPerAgent: 2, snapshotEvery: 100_000, duplicateRate: 0, conflictRate: 0, seed: 12 })];
  const routed = routeRecords(agents.map((d, i) => record(d.observation, 0, i)), DECISION).identities;
  const nth = (k: number): IdentityBatch[] => routed.map((b) => ({ ...b, deliveries: [b.deliveries[k]!] }));

  it("when ten one-observation identities are folded under a bound of three models, then the three most recent stay cached and the rest load on their next batch", async () => {
    expect(routed.map((b) => b.deliveries.length)).toEqual(Array(10).fill(2));
    const store = new CountingStore();
    // One write at a time: the identities are applied, and so used, in their order.
    const applier = new IdentityApplier(store, 100, { cacheMaxBytes: 3 * one, feed: false, inFlight: 1 });
    await applier.applyAll(G, nth(0));
    expect(applier.cached).toBe(3);
    expect(applier.cachedBytes).toBe(3 * one);
    const second = nth(1);
    let loads = store.loads;
    await applier.applyAll(G, [second[9]!]); // among the three most recent: cached, no load
    expect(store.loads - loads).toBe(0);
    loads = store.loads;
    await applier.applyAll(G, [second[0]!]); // the least recent: evicted, loaded
    expect(store.loads - loads).toBe(1);
    // By hand: 7, 8, 9 (one observation each) fill the bound; 9 grows to two and 7 goes; 0 comes back with two
    // and 8 goes: 9 and 0 are left, two observations each.
    const two = MODEL_HEAP_BYTES.base + 2 * MODEL_HEAP_BYTES.perObservation;
    expect(applier.cached).toBe(2);
    expect(applier.cachedBytes).toBe(2 * two);
    await applier.applyAll(G, second.slice(1, 9));
    const expected = reducerPackets(agents.map((d) => d.observation));
    expect((await store.listIdentities(G)).length).toBe(10);
    for (const id of await store.listIdentities(G)) expect(await store.read(G, id)).toBe(expected.get(id));
  });

  it("when one identity alone holds more than the bound, then it is not kept, and every batch of it is folded from the store", async () => {
    const all = oneIdentity(40, { seed: 13 });
    const store = new CountingStore();
    const applier = new IdentityApplier(store, 100, { cacheMaxBytes: MODEL_HEAP_BYTES.base + 5 * MODEL_HEAP_BYTES.perObservation, feed: true });
    for (let i = 0; i < all.length; i += 10) await applier.applyAll(G, delivered(all, i, i + 9));
    expect(applier.cached).toBe(0);
    expect(applier.cachedBytes).toBe(0);
    expect(store.loads).toBe(3); // every batch after the first is a miss (the first is new to the index: not loaded)
    await expectPacketOf(store, observations(all, 0, all.length - 1));
  });

  it("when a model larger than the bound is applied, then the models cached before it stay cached", async () => {
    const store = new CountingStore();
    const applier = new IdentityApplier(store, 100, { cacheMaxBytes: 4 * one, feed: false, inFlight: 1 });
    const small = nth(0).slice(1, 4);
    await applier.applyAll(G, small);
    expect(applier.cached).toBe(3);
    const large = delivered(oneIdentity(40, { seed: 15 }), 0, 39);
    expect(small.map((b) => b.identity)).not.toContain(large[0]!.identity);
    await applier.applyAll(G, large);
    expect(applier.cached).toBe(3);
    expect(applier.cachedBytes).toBe(3 * one);
  });

  it("when an identity holds conflicting versions, then its estimate counts every version it keeps", () => {
    const all = oneIdentity(80, { conflictRate: 0.2, seed: 14 });
    const [batch] = delivered(all, 0, all.length - 1);
    const model = new IdentityModel(batch!.identity, batch!.context);
    model.plan(batch!.deliveries);
    const state = emptyIdentityState();
    for (const d of all) foldDelivery(state, d.observation);
    let versions = 0;
    for (const v of state.byId.values()) versions += v.length;
    expect(versions).toBeGreaterThan(state.byId.size); // some ids have two payloads
    expect(model.heapEstimate()).toBe(MODEL_HEAP_BYTES.base + MODEL_HEAP_BYTES.perObservation * versions);
  });
});

describe("given an identity whose subjects propose reviews", () => {
  it("when its changes are announced, then each proposal is the packet's own review proposal, byte for byte", async () => {
    const all = oneIdentity(120, { conflictRate: 0.15, seed: 21, memories: 6 });
    const store = new MemoryIdentityStore();
    const applier = worker(store);
    const announced = new Map<string, string | null>();
    for (let i = 0; i < all.length; i += 30) {
      for (const c of (await applier.applyAll(G, delivered(all, i, Math.min(i + 29, all.length - 1)))).changes) {
        for (const p of c.proposals) announced.set(p.subjectId, p.proposal);
      }
    }
    const packet = JSON.parse(await expectPacketOf(store, observations(all, 0, all.length - 1))) as { review_proposals: { subject_id: string }[] };
    expect(packet.review_proposals.length).toBeGreaterThan(0);
    for (const proposal of packet.review_proposals) expect(announced.get(proposal.subject_id)).toBe(canonicalJson(proposal as never));
  });
});

describe("given a cached identity whose last apply has landed", () => {
  // Many observations on few memories: subjects of several observations each.
  const all = oneIdentity(60, { duplicateRate: 0, conflictRate: 0, memories: 3, seed: 5 });

  it("when one more delivery joins a subject, then only that subject and the new history entry are rewritten, and the model kept no fragment of them", async () => {
    const store = new MemoryIdentityStore();
    const [first] = delivered(all, 0, 58);
    const model = new IdentityModel(first!.identity, first!.context);
    const plan = model.plan(first!.deliveries, { feed: true });
    await store.apply(G, first!.identity, 0, plan.watermarks, plan.ops);
    model.committed(plan, 1);
    const subjectsBefore = new Map([...model.parts.subjects].map(([id, s]) => [id, s.items.length]));
    expect([...model.parts.subjects.values(), ...model.parts.history.values()].every((p) => p.fragment === "")).toBe(true);

    const [next] = delivered(all, 59, 59);
    const last = next!.deliveries[0]!.observation;
    const again = model.plan(next!.deliveries, { feed: true });
    const hset = (part: string) => again.ops.toArray().filter((o) => o.op === "HSET" && o.part === part).map((o) => o.field);
    // The subject it joined is the one whose item count grew (computed here from the items, not from the ops).
    const grown = [...model.parts.subjects].filter(([id, s]) => s.items.length !== subjectsBefore.get(id)).map(([id]) => id);
    expect(grown).toHaveLength(1);
    expect(subjectsBefore.has(grown[0]!)).toBe(true); // an existing subject, not a new one
    expect(hset("s")).toEqual(grown);
    expect(hset("h")).toEqual([last.observation_id]);
    await store.apply(G, next!.identity, 1, again.watermarks, again.ops);
    model.committed(again, 2);
    expect(await store.read(G, next!.identity)).toBe(reducerPackets(observations(all, 0, 59)).get(next!.identity));
  });
});

describe("given two models of one identity, one that lets go of its fragments at every commit and one that never commits", () => {
  /** A plan's ops but the meta fields only a commit (or a first version) decides: the digest, the change note, the context. */
  const partOps = (ops: PartOps) => ops.toArray().filter((o) => !(o.part === "m" && [DIGEST_FIELD, CHANGE_FIELD, "ctx"].includes(o.field)));

  for (const seed of [3, 17, 29, 41]) {
    it(`when the same batches (retries, changed payloads, earlier duplicates; seed ${seed}) reach both, and one reloads from the store midway, then every plan writes the same parts`, async () => {
      const all = oneIdentity(160, { duplicateRate: 0.35, conflictRate: 0.15, memories: 3, seed });
      const store = new MemoryIdentityStore();
      // Batch cuts from the seed, so each run cuts differently (sizes 1..24).
      const cuts: [number, number][] = [];
      for (let from = 0, k = seed; from < all.length; k = (k * 7 + 5) % 24) {
        const to = Math.min(all.length - 1, from + k);
        cuts.push([from, to]);
        from = to + 1;
      }
      const [first] = delivered(all, 0, 0);
      let released = new IdentityModel(first!.identity, first!.context);
      const kept = new IdentityModel(first!.identity, first!.context);
      const written = new Map<string, string>();
      for (const [i, [from, to]] of cuts.entries()) {
        if (i === Math.floor(cuts.length / 2)) {
          const stored = await store.load(G, first!.identity); // a fresh worker: its model rebuilt from what the store holds
          released = IdentityModel.fromStored(first!.identity, first!.context, stored.meta, stored.records, stored.history);
        }
        const [batch] = delivered(all, from, to);
        const a = released.plan(batch!.deliveries, { feed: true });
        const b = kept.plan(batch!.deliveries, { feed: true });
        expect(partOps(a.ops)).toEqual(partOps(b.ops));
        expect(a.change).toEqual(b.change);
        // Only what changed: no write puts back the bytes its field already holds.
        for (const op of partOps(a.ops)) {
          const key = `${op.part}/${op.field}`;
          if (op.op === "HDEL") written.delete(key);
          if (op.op === "DEL") for (const k of [...written.keys()]) if (k.startsWith(`${op.part}/`)) written.delete(k);
          if (op.op !== "HSET") continue;
          expect(written.get(key), key).not.toBe(fragmentText(op.value));
          written.set(key, fragmentText(op.value));
        }
        const version = released.version;
        await store.apply(G, first!.identity, version, a.watermarks, a.ops);
        released.committed(a, version + 1);
      }
      expect(await store.read(G, first!.identity)).toBe(reducerPackets(observations(all, 0, all.length - 1)).get(first!.identity));
    });
  }
});

describe("given a worker whose applies land", () => {
  it("when it folds batches (new, repeated, conflicting, earlier deliveries, a reloaded model), then every fragment it made goes back to be written again", async () => {
    const all = oneIdentity(240, { duplicateRate: 0.2, conflictRate: 0.1, seed: 5 });
    const store = new MemoryIdentityStore();
    const before = FRAGMENTS.out;
    const applier = worker(store);
    for (let from = 0; from < 200; from += 20) await applier.applyAll(G, delivered(all, from, from + 19));
    await applier.applyAll(G, delivered(all, 150, 179)); // all redelivered: nothing applied
    expect(FRAGMENTS.out).toBe(before);
    await worker(store).applyAll(G, delivered(all, 200, 239)); // a model loaded from the store
    expect(FRAGMENTS.out).toBe(before);
    await expectPacketOf(store, observations(all, 0, 239));
  });
});
