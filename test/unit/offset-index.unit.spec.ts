/**
 * The offset index and the as-of read rebuilt from it (src/fold/offset-index.ts): deliveries folded through the
 * model into the memory store, then for every point the packet rebuilt from the stored parts and index is
 * compared with the oracle (the reducer over that prefix of the deliveries, test/support/oracle.ts).
 */
import { describe, expect, it } from "vitest";
import { MemoryIdentityStore } from "../../src/adapters/memory/identity-store.js";
import { contextOfObservation, reducerIdentity, type ReducerContext } from "../../src/core/identity.js";
import { observationFingerprint, type Observation } from "../../src/core/observation.js";
import { IdentityModel } from "../../src/fold/identity-model.js";
import { MAX_INDEX_ENTRIES, packetAsOf, type LogPosition } from "../../src/fold/offset-index.js";
import { META_FIELDS } from "../../src/fold/stored-names.js";
import { Prng, simulate } from "../../producers/simulation.js";
import { expectedPackets } from "../support/oracle.js";

interface Placed {
  observation: Observation;
  partition: number;
  offset: bigint;
}

const G = 1;

/** Fold placed deliveries of one identity through the model, in batches of random sizes, into a memory store. */
async function fold(placed: readonly Placed[], rng: Prng): Promise<{ store: MemoryIdentityStore; identity: string; context: ReducerContext }> {
  const context = contextOfObservation(placed[0]!.observation, "memory_utility_reducer_v0");
  const identity = reducerIdentity(context);
  const store = new MemoryIdentityStore();
  let model = new IdentityModel(identity, context);
  for (let at = 0; at < placed.length; ) {
    const n = rng.int(1, 40);
    const batch = placed.slice(at, at + n).map((p) => ({ observation: p.observation, fingerprint: observationFingerprint(p.observation), topic: "t", partition: p.partition, offset: p.offset }));
    at += n;
    const plan = model.plan(batch);
    model.committed(plan, await store.apply(G, identity, model.version, plan.watermarks, plan.ops));
    if (rng.chance(0.3)) {
      // A cache miss: the next batch plans on a model loaded from the store.
      const loaded = await store.load(G, identity);
      model = IdentityModel.fromStored(identity, context, loaded.meta, loaded.records, loaded.history);
    }
  }
  return { store, identity, context };
}

/** The oracle over the deliveries at or before the points (filtered here, not by the code under test). */
function expected(placed: readonly Placed[], points: readonly LogPosition[], identity: string): string {
  const chosen = placed.filter((p) => points.some((q) => q.partition === p.partition && p.offset <= q.offset)).map((p) => p.observation);
  if (chosen.length === 0) return "";
  return expectedPackets(chosen).get(identity)!;
}

/** One identity's deliveries from the simulation, with retries that carry an earlier created_at mixed in, spread over two partitions. */
function workload(seed: number, observations: number): Placed[] {
  const rng = new Prng(seed);
  const all = [...simulate({ agents: 1, observationsPerAgent: observations, snapshotEvery: 1_000_000, duplicateRate: 0.25, conflictRate: 0.08, seed })].map((d) => d.observation);
  const out: Observation[] = [];
  for (const obs of all) {
    out.push(obs);
    if (out.length > 1 && rng.chance(0.08)) {
      const prior = rng.pick(out);
      // A retry stamped earlier than any delivery so far: it becomes its payload's earliest.
      out.push({ ...prior, created_at: `2026-10-${String(rng.int(10, 30)).padStart(2, "0")}T0${rng.int(0, 9)}:00:00Z` });
    }
  }
  const next = [0n, 0n];
  return out.map((observation) => {
    const partition = rng.chance(0.7) ? 0 : 1;
    next[partition] = next[partition]! + BigInt(rng.int(1, 5)); // other identities' records between
    return { observation, partition, offset: next[partition]! };
  });
}

async function history(store: MemoryIdentityStore, identity: string, context: ReducerContext) {
  const h = await store.loadHistory(G, identity);
  return { context, deliveries: Number(h.meta[META_FIELDS.deliveries] ?? "0"), records: h.records, history: h.history, index: h.index };
}

describe("as-of reads from the offset index", () => {
  it("give the reducer's bytes over every prefix, on one partition and on both", async () => {
    for (const seed of [1, 2, 3]) {
      const rng = new Prng(seed * 7);
      const placed = workload(seed, 120);
      const { store, identity, context } = await fold(placed, rng);
      const stored = await history(store, identity, context);
      expect(stored.index).toHaveLength(placed.length);
      expect(stored.index.some((e) => e.includes("<")), "a retry became its payload's earliest").toBe(true);
      const ends = [0, 1].map((p) => placed.filter((d) => d.partition === p).at(-1)!.offset);
      for (const d of placed) {
        const both = [
          { partition: d.partition, offset: d.offset },
          { partition: 1 - d.partition, offset: BigInt(rng.int(0, Number(ends[1 - d.partition]!))) },
        ];
        for (const points of [[both[0]!], both]) {
          const want = expected(placed, points, identity);
          const got = packetAsOf(stored, points);
          expect(got?.packet).toBe(want);
          expect(got?.used).toBe(placed.filter((p) => points.some((q) => q.partition === p.partition && p.offset <= q.offset)).length);
        }
      }
      // At the latest offsets of both partitions: the live packet.
      const latest = [0, 1].map((p) => ({ partition: p, offset: ends[p]! }));
      expect(packetAsOf(stored, latest)?.packet).toBe(await store.read(G, identity));
    }
  });

  it("resolve refs that share their first digits (hundreds of payloads)", async () => {
    const rng = new Prng(11);
    const placed = workload(11, 900).slice(0, 1000);
    const { store, identity, context } = await fold(placed, rng);
    const stored = await history(store, identity, context);
    expect(stored.index.some((e) => /[+.][0-9a-f]{5,}/.test(e)), "some ref is longer than the minimum").toBe(true);
    for (let i = 0; i < 12; i++) {
      const d = rng.pick(placed);
      const points = [{ partition: d.partition, offset: d.offset }, { partition: 1 - d.partition, offset: 1n << 40n }];
      expect(packetAsOf(stored, points)?.packet).toBe(expected(placed, points, identity));
    }
  });

  it("past the delivery bound: the rejected packet from the delivery that crossed it, nothing before (the payloads are dropped)", async () => {
    const rng = new Prng(5);
    const placed = workload(5, 1200).slice(0, 1100).map((p, i) => ({ ...p, partition: 0, offset: BigInt(i * 2) }));
    const { store, identity, context } = await fold(placed, rng);
    const stored = await history(store, identity, context);
    expect(stored.index).toHaveLength(MAX_INDEX_ENTRIES);
    expect(stored.deliveries).toBe(1100);
    const crossing = placed[MAX_INDEX_ENTRIES - 1]!.offset;
    expect(packetAsOf(stored, [{ partition: 0, offset: crossing }])?.packet).toBe(expected(placed, [{ partition: 0, offset: crossing }], identity));
    expect(packetAsOf(stored, [{ partition: 0, offset: 1n << 40n }])?.packet).toBe(await store.read(G, identity));
    expect(packetAsOf(stored, [{ partition: 0, offset: crossing - 1n }])).toBeNull();
  });

  it("refuse an index that does not cover the stored deliveries", async () => {
    const placed = workload(4, 30);
    const { store, identity, context } = await fold(placed, new Prng(4));
    const stored = await history(store, identity, context);
    expect(() => packetAsOf({ ...stored, index: stored.index.slice(1) }, [{ partition: 0, offset: 0n }])).toThrow(/holds \d+ of the identity's \d+ deliveries/);
  });
});
