/**
 * The IdentityStore contract, Emmett-style: one suite that every store must
 * pass, registered by `identityStoreContract(name, makeStore)` from the
 * memory store's unit spec and the Redis store's integration spec. Expected
 * values are written out by hand or come from the pure reducer, never from
 * the store or the fold engine under test.
 */
import { expectedPackets } from "./oracle.js";
import { describe, expect, it } from "vitest";
import { IdentityApplier, type ApplyStats, type IdentityBatch } from "../../src/fold/identity-applier.js";
import { simulate, Prng, type SimulationOptions } from "../../producers/simulation.js";
import { contextOfObservation, observationFingerprint, reducerIdentity, type Observation } from "../../src/core/index.js";
import type { PartOp } from "../../src/fold/delta.js";
import { packetAsOf } from "../../src/fold/offset-index.js";
import { PositionContradictedError, StaleVersionError, StateLostError, type IdentityStore } from "../../src/fold/identity-store.js";
import type { IdentityPart } from "../../src/fold/stored-names.js";
import { scopeKey } from "../../src/fold/scope-key.js";

export type StoreFactory = () => IdentityStore | Promise<IdentityStore>;

/** How a test makes what the position guard reads (the control hash, for Redis): a live generation and its marks. */
export interface LivePositions {
  /** Make a live generation; returns its number. */
  live(): Promise<number>;
  /** Raise the live generation's mark of `<topic>:<partition>` to `next`, as a seal does. */
  seal(generation: number, partition: string, next: bigint): Promise<void>;
}

const REDUCER_VERSION = "memory_utility_reducer_v0";
/** The Kafka timestamp of the record at offset 0 of any partition; each later offset one ms later. */
const TIMESTAMP0 = 1_790_000_000_000;
const G = 1;

/** The pure reducer over each identity's deliveries (the oracle every pipeline test uses). */
export function reducerPackets(deliveries: readonly Observation[]): Map<string, string> {
  return expectedPackets(deliveries, REDUCER_VERSION);
}

// --- ops, written out -------------------------------------------------------

const hset = (part: IdentityPart, field: string, value: string): PartOp => ({ op: "HSET", part, field, value });
const hdel = (part: IdentityPart, field: string): PartOp => ({ op: "HDEL", part, field, value: "" });
const zadd = (part: IdentityPart, member: string): PartOp => ({ op: "ZADD", part, field: member, value: "" });
const zrem = (part: IdentityPart, member: string): PartOp => ({ op: "ZREM", part, field: member, value: "" });
const del = (part: IdentityPart): PartOp => ({ op: "DEL", part, field: "", value: "" });
const none = new Map<string, bigint>();
/** A skeleton whose five pieces are P0..P4, so a read is `P0[history]P1[rejections]P2[proposals]P3[subjects]P4`. */
const SKELETON = ["P0", "P1", "P2", "P3", "P4"].join("\u0001");
const pad3 = (i: number) => String(i).padStart(3, "0");

// --- workloads ---------------------------------------------------------------

interface Sent {
  observation: Observation;
  partition: number;
  offset: bigint;
}

/**
 * Simulated deliveries as the fold sees them: keyed by scope, so a scope's
 * records land on one of three partitions in order, with per-partition offsets.
 */
function sent(options: Partial<SimulationOptions>): Sent[] {
  const partitions = new Map<string, number>();
  const next = [0n, 0n, 0n];
  return [...simulate(options)].map(({ observation }) => {
    const key = scopeKey(observation.scope);
    if (!partitions.has(key)) partitions.set(key, partitions.size % 3);
    const partition = partitions.get(key)!;
    return { observation, partition, offset: next[partition]!++ };
  });
}

/** Group a slice of deliveries by reducer identity, in delivery order (what the batch router does). */
function route(slice: readonly Sent[]): IdentityBatch[] {
  const by = new Map<string, IdentityBatch>();
  for (const s of slice) {
    const context = contextOfObservation(s.observation, REDUCER_VERSION);
    const identity = reducerIdentity(context);
    let batch = by.get(identity);
    if (batch === undefined) by.set(identity, (batch = { identity, context, deliveries: [] }));
    batch.deliveries.push({
      observation: s.observation,
      fingerprint: observationFingerprint(s.observation),
      topic: "t",
      partition: s.partition,
      offset: s.offset,
      timestamp: String(TIMESTAMP0 + Number(s.offset)),
    });
  }
  return [...by.values()];
}

function addStats(total: ApplyStats, s: ApplyStats): void {
  total.applied += s.applied;
  total.duplicatesSkipped += s.duplicatesSkipped;
  total.conflicting += s.conflicting;
  total.casRetries += s.casRetries;
}

/** Fold deliveries in consecutive batches of random sizes (1..maxBatch); `maxBatch` Infinity is one batch. */
async function fold(applier: IdentityApplier, generation: number, deliveries: readonly Sent[], rng: Prng, maxBatch: number): Promise<ApplyStats> {
  const total: ApplyStats = { applied: 0, duplicatesSkipped: 0, conflicting: 0, casRetries: 0, identities: 0, newIdentities: [], changes: [] };
  for (let i = 0; i < deliveries.length; ) {
    const size = Number.isFinite(maxBatch) ? rng.int(1, maxBatch) : deliveries.length;
    addStats(total, await applier.applyAll(generation, route(deliveries.slice(i, i + size))));
    i += size;
  }
  return total;
}

async function readAll(store: IdentityStore, generation: number): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  for (const id of await store.listIdentities(generation)) out.set(id, await store.read(generation, id));
  return out;
}

/** Everything stored for every identity: meta, records and packet. */
async function snapshot(store: IdentityStore, generation: number): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  for (const id of await store.listIdentities(generation)) {
    const { meta, records } = await store.load(generation, id);
    out.set(id, { meta, records: [...records].sort(), packet: await store.read(generation, id) });
  }
  return out;
}

const observationsOf = (deliveries: readonly Sent[]) => deliveries.map((d) => d.observation);

/** The packets read back are exactly the reducer's, identity for identity. */
async function expectReducerBytes(store: IdentityStore, generation: number, deliveries: readonly Sent[]): Promise<Map<string, string>> {
  const expected = reducerPackets(observationsOf(deliveries));
  const actual = await readAll(store, generation);
  expect([...actual.keys()]).toEqual([...expected.keys()].sort());
  for (const [id, packet] of expected) expect(actual.get(id), id).toBe(packet);
  return expected;
}

export function identityStoreContract(name: string, makeStore: StoreFactory, positionsOf: (store: IdentityStore) => LivePositions): void {
  describe(`IdentityStore contract: ${name}`, () => {
    describe("the position guard: the position lives with the state", () => {
      it("given a live generation folded to 5 on t:0, a batch from 5 or below is applied", async () => {
        const store = await makeStore();
        const positions = positionsOf(store);
        const g = await positions.live();
        await positions.seal(g, "t:0", 5n);
        expect(await store.apply(g, "mur_p", 0, new Map([["w:t:0", 5n]]), [hset("d", "o1", "r1")], { partition: "t:0", from: 5n })).toBe(1);
        expect(await store.apply(g, "mur_p", 1, new Map([["w:t:0", 3n]]), [hset("d", "o2", "r2")], { partition: "t:0", from: 3n })).toBe(2);
        expect((await store.load(g, "mur_p")).records).toEqual(new Map([["o1", "r1"], ["o2", "r2"]]));
      });

      it("given a mark of 5, a batch from 6 is refused as behind and nothing is written", async () => {
        const store = await makeStore();
        const positions = positionsOf(store);
        const g = await positions.live();
        await positions.seal(g, "t:0", 5n);
        const err = await store.apply(g, "mur_p", 0, new Map([["w:t:0", 7n]]), [hset("d", "o1", "r1"), hset("m", "skel", SKELETON)], { partition: "t:0", from: 6n }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PositionContradictedError);
        expect((err as PositionContradictedError).reason).toBe("behind");
        expect((err as PositionContradictedError).from).toBe(6n);
        expect(await store.load(g, "mur_p")).toEqual({ meta: {}, records: new Map(), history: new Map() });
      });

      it("given no mark for a partition, only a batch from offset 0 is applied; marks of other partitions do not count", async () => {
        const store = await makeStore();
        const positions = positionsOf(store);
        const g = await positions.live();
        await positions.seal(g, "t:1", 100n);
        const err = await store.apply(g, "mur_p", 0, none, [hset("d", "o1", "r1")], { partition: "t:0", from: 1n }).catch((e: unknown) => e);
        expect((err as PositionContradictedError).reason).toBe("behind");
        expect(await store.apply(g, "mur_p", 0, none, [hset("d", "o1", "r1")], { partition: "t:0", from: 0n })).toBe(1);
      });

      it("offsets compare as numbers past 2^53 and across digit counts", async () => {
        const store = await makeStore();
        const positions = positionsOf(store);
        const g = await positions.live();
        await positions.seal(g, "t:0", 9_007_199_254_740_993n);
        expect(await store.apply(g, "mur_p", 0, none, [], { partition: "t:0", from: 9_007_199_254_740_993n })).toBe(1);
        const err = await store.apply(g, "mur_p", 1, none, [], { partition: "t:0", from: 9_007_199_254_740_994n }).catch((e: unknown) => e);
        expect((err as PositionContradictedError).reason).toBe("behind");
        await positions.seal(g, "t:2", 10n);
        expect(await store.apply(g, "mur_q", 0, none, [], { partition: "t:2", from: 9n })).toBe(1);
      });

      it("a generation that is not the live one is refused as not live, and nothing is written", async () => {
        const store = await makeStore();
        const positions = positionsOf(store);
        const g = await positions.live();
        await positions.seal(g + 1, "t:0", 5n).catch(() => undefined); // whatever a store does with a seal of a generation that is not live
        const err = await store.apply(g + 1, "mur_p", 0, none, [hset("d", "o1", "r1")], { partition: "t:0", from: 0n }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PositionContradictedError);
        expect((err as PositionContradictedError).reason).toBe("not_live");
        expect((await store.load(g + 1, "mur_p")).records.size).toBe(0);
      });
    });

    describe("versions and watermarks", () => {
      it("an identity never written loads at version 0 with nothing stored, reads as null and is not listed", async () => {
        const store = await makeStore();
        const loaded = await store.load(G, "mur_new");
        expect(loaded.meta).toEqual({});
        expect(loaded.records.size).toBe(0);
        expect(await store.read(G, "mur_new")).toBeNull();
        expect(await store.listIdentities(G)).toEqual([]);
      });

      it("an apply at the expected version returns version + 1, which the next apply expects", async () => {
        const store = await makeStore();
        expect(await store.apply(G, "mur_a", 0, none, [])).toBe(1);
        expect(await store.apply(G, "mur_a", 1, none, [hset("d", "o1", "r1")])).toBe(2);
        expect(await store.apply(G, "mur_a", 2, none, [])).toBe(3);
        expect((await store.load(G, "mur_a")).meta).toEqual({ v: "3" });
      });

      it("a stale expected version is refused with the stored version, and nothing is written", async () => {
        const store = await makeStore();
        await store.apply(G, "mur_a", 0, new Map([["w:t:0", 4n]]), [hset("d", "o1", "r1")]);
        await store.apply(G, "mur_a", 1, none, [hset("m", "skel", SKELETON)]);
        const before = await store.load(G, "mur_a");
        for (const expected of [0, 1, 3]) {
          const err = await store.apply(G, "mur_a", expected, new Map([["w:t:0", 99n]]), [hset("d", "o2", "r2"), hdel("m", "skel")]).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(StaleVersionError);
          expect((err as StaleVersionError).storedVersion).toBe(2);
          expect((err as StaleVersionError).identity).toBe("mur_a");
        }
        expect(await store.load(G, "mur_a")).toEqual(before);
        expect(before.meta).toEqual({ v: "2", "w:t:0": "4", skel: SKELETON });
      });

      it("a version above 0 expected of an identity with nothing stored is lost state, and nothing is written", async () => {
        const store = await makeStore();
        const err = await store.apply(G, "mur_lost", 4, new Map([["w:t:0", 1n]]), [hset("m", "skel", SKELETON)]).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StateLostError);
        expect((err as Error).message).toMatch(/folds the log into the generation again/);
        expect((await store.load(G, "mur_lost")).meta).toEqual({});
        expect(await store.read(G, "mur_lost")).toBeNull();
      });

      it("watermarks are stored in meta as decimal offsets (past 2^53 too); a later apply raises some and keeps the others", async () => {
        const store = await makeStore();
        await store.apply(G, "mur_w", 0, new Map([["w:t:0", 10n], ["w:t:1", 9_007_199_254_740_993n]]), []);
        await store.apply(G, "mur_w", 1, new Map([["w:t:0", 12n], ["w:u:7", 0n]]), []);
        expect((await store.load(G, "mur_w")).meta).toEqual({ v: "2", "w:t:0": "12", "w:t:1": "9007199254740993", "w:u:7": "0" });
      });

      it("generations are separate", async () => {
        const store = await makeStore();
        await store.apply(G, "mur_g", 0, none, [hset("m", "skel", SKELETON), hset("d", "o", "r")]);
        expect(await store.load(G + 1, "mur_g")).toEqual({ meta: {}, records: new Map(), history: new Map() });
        expect(await store.read(G + 1, "mur_g")).toBeNull();
        expect(await store.apply(G + 1, "mur_g", 0, none, [])).toBe(1);
      });

      it("the index lists each identity once, sorted, per generation, and says which it listed first", async () => {
        const store = await makeStore();
        expect(store.indexKeepsListings).toBe(true); // one node (or memory): the index and the identities together
        expect([...(await store.addToIndex(G, ["mur_b", "mur_a"]))].sort()).toEqual(["mur_a", "mur_b"]);
        expect([...(await store.addToIndex(G, ["mur_a", "mur_c"]))]).toEqual(["mur_c"]);
        expect([...(await store.addToIndex(G, []))]).toEqual([]);
        expect([...(await store.addToIndex(G + 1, ["mur_a", "mur_z"]))].sort()).toEqual(["mur_a", "mur_z"]);
        expect(await store.listIdentities(G)).toEqual(["mur_a", "mur_b", "mur_c"]);
        expect(await store.listIdentities(G + 1)).toEqual(["mur_a", "mur_z"]);
        expect(await store.listIdentities(G + 2)).toEqual([]);
      });
    });

    describe("ops and the read", () => {
      it("HSET and HDEL change hash fields, an emptied or DELeted part is gone", async () => {
        const store = await makeStore();
        await store.apply(G, "mur_h", 0, none, [hset("d", "a", "1"), hset("d", "b", "2"), hset("m", "n", "5")]);
        let loaded = await store.load(G, "mur_h");
        expect([...loaded.records]).toEqual(expect.arrayContaining([["a", "1"], ["b", "2"]]));
        expect(loaded.records.size).toBe(2);
        expect(loaded.meta).toEqual({ v: "1", n: "5" });
        await store.apply(G, "mur_h", 1, none, [hdel("d", "a"), hset("d", "b", "3"), hdel("m", "n"), hdel("d", "absent")]);
        loaded = await store.load(G, "mur_h");
        expect([...loaded.records]).toEqual([["b", "3"]]);
        expect(loaded.meta).toEqual({ v: "2" });
        await store.apply(G, "mur_h", 2, none, [del("d"), del("s")]);
        expect((await store.load(G, "mur_h")).records.size).toBe(0);
      });

      it("the read puts history, rejections, proposals and subjects between the skeleton's pieces, each in member order", async () => {
        const store = await makeStore();
        await store.apply(G, "mur_r", 0, none, [
          hset("m", "skel", SKELETON), hset("m", "acc", "2"),
          zadd("hi", "0002\u0000h2"), zadd("hi", "0001\u0000h1"), hset("h", "h1", "H1"), hset("h", "h2", "H2"),
          zadd("ci", "c2"), zadd("ci", "c1"), hset("c", "c1", "C1"), hset("c", "c2", "C2"),
          zadd("si", "b\u0000s2"), zadd("si", "a\u0000s1"), hset("s", "s1", "S1"), hset("s", "s2", "S2"), hset("p", "s2", "Q2"),
        ]);
        expect(await store.read(G, "mur_r")).toBe("P0[H1,H2]P1[C1,C2]P2[Q2]P3[S1,S2]P4");
        // ZADD of a member already there adds nothing; a fragment missing for a member is left out.
        await store.apply(G, "mur_r", 1, none, [zrem("hi", "0001\u0000h1"), zadd("hi", "0002\u0000h2"), hdel("s", "s1"), del("ci")]);
        expect(await store.read(G, "mur_r")).toBe("P0[H2]P1[]P2[Q2]P3[S2]P4");
        await store.apply(G, "mur_r", 2, none, [zadd("si", "c\u0000s3"), hset("s", "s3", "S3"), hset("p", "s3", "Q3"), zrem("si", "b\u0000s2")]);
        expect(await store.read(G, "mur_r")).toBe("P0[H2]P1[]P2[Q3]P3[S3]P4");
      });

      it("members are in UTF-8 byte order (astral characters after U+FFFF), as ZRANGE returns them", async () => {
        const store = await makeStore();
        const members: [string, string][] = [["\u{1F600}", "5"], ["\uFFFF", "4"], ["z", "2"], ["\u00E9", "3"], ["Z", "1"]];
        const ops = members.flatMap(([lead, fragment], i) => [zadd("si", `${lead}\u0000s${i}`), hset("s", `s${i}`, fragment)]);
        await store.apply(G, "mur_o", 0, none, [hset("m", "skel", SKELETON), ...ops]);
        expect(await store.read(G, "mur_o")).toBe("P0[]P1[]P2[]P3[1,2,3,4,5]P4");
      });

      it("values are bytes: a lone surrogate is stored as U+FFFD", async () => {
        const store = await makeStore();
        await store.apply(G, "mur_u", 0, none, [hset("d", "x", "a\uD800b")]);
        expect((await store.load(G, "mur_u")).records.get("x")).toBe("a\uFFFDb");
      });

      it("the rejections are the first 64 conflict ids", async () => {
        const store = await makeStore();
        const ids = Array.from({ length: 70 }, (_, i) => pad3(i));
        await store.apply(G, "mur_c", 0, none, [hset("m", "skel", SKELETON), ...[...ids].reverse().flatMap((id) => [zadd("ci", id), hset("c", id, `C${id}`)])]);
        expect(await store.read(G, "mur_c")).toBe(`P0[]P1[${ids.slice(0, 64).map((id) => `C${id}`).join(",")}]P2[]P3[]P4`);
      });

      it("past 256 accepted, the history keeps every subject's latest entry (listed or not) and then the newest others", async () => {
        const store = await makeStore();
        const member = (i: number) => `${pad3(i)}\u0000h${pad3(i)}`;
        const history = Array.from({ length: 300 }, (_, i) => [zadd("hi", member(i)), hset("h", `h${pad3(i)}`, `H${pad3(i)}`)]).flat();
        // Three latest entries take places: two listed (0, 5) and one no longer in the order.
        const latest = [hset("hl", "s1", member(0)), hset("hl", "s2", member(5)), hset("hl", "s3", "999\u0000gone")];
        await store.apply(G, "mur_256", 0, none, [hset("m", "skel", SKELETON), hset("m", "acc", "300"), ...history, ...latest]);
        const kept = [0, 5, ...Array.from({ length: 253 }, (_, i) => 47 + i)];
        expect(await store.read(G, "mur_256")).toBe(`P0[${kept.map((i) => `H${pad3(i)}`).join(",")}]P1[]P2[]P3[]P4`);
        // The bound is on the accepted count, not on the members.
        await store.apply(G, "mur_256", 1, none, [hset("m", "acc", "256")]);
        expect(await store.read(G, "mur_256")).toBe(`P0[${Array.from({ length: 300 }, (_, i) => `H${pad3(i)}`).join(",")}]P1[]P2[]P3[]P4`);
      });

      it("ops that do not commute (a field written twice, a deleted part written) are refused before anything is written", async () => {
        const store = await makeStore();
        const refused: PartOp[][] = [
          [hset("m", "skel", SKELETON), hset("d", "a", "1"), hset("d", "a", "2")],
          [hset("m", "skel", SKELETON), zadd("si", "x\u0000s1"), zrem("si", "x\u0000s1")],
          [hset("m", "skel", SKELETON), hset("s", "s1", "S1"), del("s")],
          [hset("m", "skel", SKELETON), del("s"), hset("s", "s1", "S1")],
          // Past 64 ops the check keeps a table instead of scanning: the same refusals.
          [hset("m", "skel", SKELETON), ...Array.from({ length: 80 }, (_, i) => hset("d", `f${i}`, "1")), hset("d", "f3", "2")],
          [hset("m", "skel", SKELETON), ...Array.from({ length: 80 }, (_, i) => hset("d", `f${i}`, "1")), del("d")],
        ];
        for (const ops of refused) await expect(store.apply(G, "mur_nc", 0, new Map([["w:t:0", 1n]]), ops)).rejects.toThrow(/do not commute|written twice|write field/);
        expect(await store.load(G, "mur_nc")).toEqual({ meta: {}, records: new Map(), history: new Map() });
        // The same field in two parts, or two fields of one part, commute.
        await store.apply(G, "mur_nc", 0, none, [hset("m", "skel", SKELETON), hset("s", "s1", "S1"), hset("p", "s1", "Q1"), zadd("si", "a\u0000s1"), hset("s", "s2", "S2"), zadd("si", "b\u0000s2")]);
        expect(await store.read(G, "mur_nc")).toBe("P0[]P1[]P2[Q1]P3[S1,S2]P4");
      });

      it("offset index entries (RPUSH) land in their order among other ops; with the index deleted in the same apply, refused", async () => {
        const store = await makeStore();
        const rpush = (entry: string): PartOp => ({ op: "RPUSH", part: "x", field: entry, value: "" });
        await store.apply(G, "mur_x", 0, none, [rpush("e1"), hset("m", "skel", SKELETON), rpush("e2"), hset("d", "a", "1"), rpush("e0"), rpush("e3")]);
        expect((await store.loadHistory(G, "mur_x")).index).toEqual(["e1", "e2", "e0", "e3"]);
        await expect(store.apply(G, "mur_x", 1, none, [rpush("e4"), { op: "DEL", part: "x", field: "", value: "" }])).rejects.toThrow(/do not commute/);
        await expect(store.apply(G, "mur_x", 1, none, [{ op: "DEL", part: "x", field: "", value: "" }, rpush("e4")])).rejects.toThrow(/do not commute/);
        expect((await store.loadHistory(G, "mur_x")).index).toEqual(["e1", "e2", "e0", "e3"]);
      });

      it("thousands of ops of one kind in one apply (more than one command's worth) all land", async () => {
        const store = await makeStore();
        const n = 4_500; // 9,000 HSET operands: past what one Lua `unpack` takes, so the store must split the run
        const ids = Array.from({ length: n }, (_, i) => String(i).padStart(4, "0"));
        await store.apply(G, "mur_big", 0, none, [hset("m", "skel", SKELETON), hset("m", "acc", "100"), ...ids.flatMap((id) => [zadd("hi", `${id}\u0000h${id}`), hset("h", `h${id}`, `H${id}`), hset("d", id, "2")])]);
        expect(await store.read(G, "mur_big")).toBe(`P0[${ids.map((id) => `H${id}`).join(",")}]P1[]P2[]P3[]P4`);
        expect((await store.load(G, "mur_big")).records.size).toBe(n);
        await store.apply(G, "mur_big", 1, none, ids.slice(0, n - 1).flatMap((id) => [zrem("hi", `${id}\u0000h${id}`), hdel("h", `h${id}`), hdel("d", id)]));
        expect(await store.read(G, "mur_big")).toBe(`P0[H${ids[n - 1]}]P1[]P2[]P3[]P4`);
        expect([...(await store.load(G, "mur_big")).records.keys()]).toEqual([ids[n - 1]]);
      });

      it("a stored rejected packet is read instead of the parts; without a skeleton there is no packet", async () => {
        const store = await makeStore();
        await store.apply(G, "mur_rej", 0, new Map([["w:t:0", 3n]]), []);
        expect(await store.read(G, "mur_rej")).toBeNull();
        await store.apply(G, "mur_rej", 1, none, [hset("m", "skel", SKELETON), hset("m", "rej", '{"status":"rejected"}')]);
        expect(await store.read(G, "mur_rej")).toBe('{"status":"rejected"}');
        await store.apply(G, "mur_rej", 2, none, [hdel("m", "rej")]);
        expect(await store.read(G, "mur_rej")).toBe("P0[]P1[]P2[]P3[]P4");
      });
    });

    describe("folding through the applier reads back the reducer's bytes", () => {
      it("random workloads in random batches, with random cache sizes, feed on and off", async () => {
        let conflicting = 0;
        let duplicates = 0;
        for (let seed = 1; seed <= 8; seed++) {
          const rng = new Prng(seed * 7919);
          const store = await makeStore();
          const deliveries = sent({
            agents: rng.int(1, 5), observationsPerAgent: rng.int(10, 60), scopesPerAgent: rng.int(1, 3), snapshotEvery: rng.int(5, 40),
            duplicateRate: rng.next() * 0.3, conflictRate: rng.next() * 0.15, memories: rng.int(3, 40), seed,
          });
          const stats = await fold(new IdentityApplier(store, rng.int(1, 20), { feed: rng.chance(0.5) }), G, deliveries, rng, rng.int(1, 40));
          expect(stats.applied).toBe(deliveries.length);
          conflicting += stats.conflicting;
          duplicates += deliveries.length - new Set(deliveries.map((d) => d.observation.observation_id)).size;
          await expectReducerBytes(store, G, deliveries);
        }
        expect(conflicting).toBeGreaterThan(0); // the workloads did quarantine payload changes
        expect(duplicates).toBeGreaterThan(0);
      });

      it("an identity past 256 history entries", async () => {
        const store = await makeStore();
        const deliveries = sent({ agents: 1, observationsPerAgent: 320, snapshotEvery: 100_000, duplicateRate: 0.05, conflictRate: 0.02, memories: 20, seed: 256 });
        await fold(new IdentityApplier(store, 10, { feed: true }), G, deliveries, new Prng(256), 50);
        const [packet] = (await expectReducerBytes(store, G, deliveries)).values();
        const parsed = JSON.parse(packet!) as { observation_history_truncated: boolean; observation_history: unknown[] };
        expect(parsed.observation_history_truncated).toBe(true);
        expect(parsed.observation_history).toHaveLength(256);
      });

      it("an identity past 128 subjects (rejected, still folded from its parts)", async () => {
        const store = await makeStore();
        const deliveries = sent({ agents: 1, observationsPerAgent: 200, snapshotEvery: 100_000, duplicateRate: 0.05, conflictRate: 0.02, memories: 400, seed: 128 });
        await fold(new IdentityApplier(store, 10, { feed: true }), G, deliveries, new Prng(128), 30);
        const [packet] = (await expectReducerBytes(store, G, deliveries)).values();
        expect(packet).toContain("projection_subject_limit_exceeded");
      });

      it("an identity past 1,024 deliveries is sealed: the reducer's rejected packet, its parts dropped, and it stays sealed", async () => {
        const store = await makeStore();
        // Few memories keep it under the 128-subject bound: the rejection is the delivery bound's.
        const all = sent({ agents: 1, observationsPerAgent: 1_100, snapshotEvery: 100_000, duplicateRate: 0.1, conflictRate: 0.02, memories: 6, seed: 1024 });
        const applier = new IdentityApplier(store, 10, { feed: true });
        await fold(applier, G, all.slice(0, 1_060), new Prng(1024), 60);
        const [packet] = (await expectReducerBytes(store, G, all.slice(0, 1_060))).values();
        expect(JSON.parse(packet!)).toMatchObject({ status: "rejected", rejections: [{ reason_codes: ["observation_malformed"] }] });
        const [identity] = await store.listIdentities(G);
        const sealed = await store.load(G, identity!);
        expect(sealed.records.size).toBe(0);
        expect(Object.keys(sealed.meta).sort()).toEqual(["chg", "ctx", "dig", "n", "rej", "v", "w:t:0"]);
        expect(sealed.meta.n).toBe("1060");
        await fold(new IdentityApplier(store, 10, { feed: true }), G, all.slice(1_060), new Prng(1025), 20);
        await expectReducerBytes(store, G, all);
        expect((await store.load(G, identity!)).meta.n).toBe("1100");
      });

      it("the offset index holds each delivery once, in the order applied, with its position and timestamp; as-of reads from it are the reducer's", async () => {
        const store = await makeStore();
        const deliveries = sent({ agents: 3, observationsPerAgent: 60, scopesPerAgent: 2, snapshotEvery: 1_000, duplicateRate: 0.2, conflictRate: 0.08, seed: 36 });
        const rng = new Prng(36);
        // Redeliveries (a batch sent again, as after a crash) and a cold cache: neither adds an entry.
        await fold(new IdentityApplier(store, 2, { feed: true }), G, deliveries.slice(0, 100), rng, 17);
        await fold(new IdentityApplier(store, 2, { feed: true }), G, deliveries.slice(60), rng, 23);
        const byIdentity = new Map<string, Sent[]>();
        for (const d of deliveries) {
          const id = reducerIdentity(contextOfObservation(d.observation, REDUCER_VERSION));
          byIdentity.set(id, [...(byIdentity.get(id) ?? []), d]);
        }
        for (const [identity, mine] of byIdentity) {
          const stored = await store.loadHistory(G, identity);
          // Written out here: <partition>:<offset>/<timestamp> then the kind; the fold's timestamps are the fixture's.
          expect(stored.index.map((e) => /^\d+:\d+\/\d+/.exec(e)?.[0])).toEqual(mine.map((d) => `${d.partition}:${d.offset}/${TIMESTAMP0 + Number(d.offset)}`));
          const history = { context: contextOfObservation(mine[0]!.observation, REDUCER_VERSION), deliveries: Number(stored.meta.n), records: stored.records, history: stored.history, index: stored.index };
          for (const at of [mine[0]!, rng.pick(mine), mine.at(-1)!]) {
            const upTo = mine.filter((d) => d.partition === at.partition && d.offset <= at.offset).map((d) => d.observation);
            expect(packetAsOf(history, { points: [{ partition: at.partition, offset: at.offset }] })?.packet).toBe(reducerPackets(upTo).get(identity));
          }
        }
      });

      it("batches of random sizes store the same bytes, records, watermarks and digests as one batch", async () => {
        const store = await makeStore();
        const deliveries = sent({ agents: 4, observationsPerAgent: 50, scopesPerAgent: 2, snapshotEvery: 30, duplicateRate: 0.2, conflictRate: 0.1, seed: 77 });
        await fold(new IdentityApplier(store, 100, { feed: true }), G, deliveries, new Prng(77), Infinity);
        await fold(new IdentityApplier(store, 3, { feed: true }), G + 1, deliveries, new Prng(78), 9);
        await expectReducerBytes(store, G, deliveries);
        await expectReducerBytes(store, G + 1, deliveries);
        for (const id of await store.listIdentities(G)) {
          const one = await store.load(G, id);
          const many = await store.load(G + 1, id);
          expect(one.meta.v).toBe("1");
          expect(Number(many.meta.v)).toBeGreaterThanOrEqual(1);
          // `v` counts applies and `chg` describes the last one; everything else is the state.
          const { v: _v1, chg: _c1, ...oneState } = one.meta;
          const { v: _v2, chg: _c2, ...manyState } = many.meta;
          expect(manyState).toEqual(oneState);
          expect([...many.records].sort()).toEqual([...one.records].sort());
        }
      });

      it("a redelivery changes no byte and no version, whether the model is cached or reloaded", async () => {
        const store = await makeStore();
        const deliveries = sent({ agents: 3, observationsPerAgent: 40, scopesPerAgent: 2, snapshotEvery: 25, duplicateRate: 0.2, conflictRate: 0.1, seed: 99 });
        const warm = new IdentityApplier(store, 100, { feed: true });
        await fold(warm, G, deliveries, new Prng(99), 15);
        const before = await snapshot(store, G);
        for (const applier of [warm, new IdentityApplier(store, 1, { feed: true })]) {
          const stats = await fold(applier, G, deliveries, new Prng(100), 15);
          expect(stats.applied).toBe(0);
          expect(stats.duplicatesSkipped).toBe(deliveries.length);
          expect(await snapshot(store, G)).toEqual(before);
        }
        await expectReducerBytes(store, G, deliveries);
      });
    });
  });
}
