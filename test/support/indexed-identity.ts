/**
 * One identity's deliveries placed on a topic (partitions, offsets, Kafka timestamps) and folded through the
 * model into the memory store, for the tests of what the offset index rebuilds (as-of reads, explain, diff).
 */
import { MemoryIdentityStore } from "../../src/adapters/memory/identity-store.js";
import { contextOfObservation, reducerIdentity, type ReducerContext } from "../../src/core/identity.js";
import { observationFingerprint, type Observation } from "../../src/core/observation.js";
import { IdentityModel } from "../../src/fold/identity-model.js";
import { META_FIELDS } from "../../src/fold/stored-names.js";
import { Prng, simulate } from "../../producers/simulation.js";

export interface Placed {
  observation: Observation;
  partition: number;
  offset: bigint;
  /** The record's Kafka timestamp (ms, decimal), or "-1" for a record without one. */
  timestamp: string;
}

/** The generation the fixtures fold into. */
export const G = 1;

/** Fold placed deliveries of one identity through the model, in batches of random sizes, into a memory store. */
export async function fold(placed: readonly Placed[], rng: Prng): Promise<{ store: MemoryIdentityStore; identity: string; context: ReducerContext }> {
  const context = contextOfObservation(placed[0]!.observation, "memory_utility_reducer_v0");
  const identity = reducerIdentity(context);
  const store = new MemoryIdentityStore();
  let model = new IdentityModel(identity, context);
  for (let at = 0; at < placed.length; ) {
    const n = rng.int(1, 40);
    const batch = placed.slice(at, at + n).map((p) => ({ observation: p.observation, fingerprint: observationFingerprint(p.observation), topic: "t", partition: p.partition, offset: p.offset, timestamp: p.timestamp }));
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

/** One identity's deliveries from the simulation, with retries that carry an earlier created_at mixed in, spread over two partitions. */
export function workload(seed: number, observations: number): Placed[] {
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
  let clock = 1_790_000_000_000;
  return out.map((observation) => {
    const partition = rng.chance(0.7) ? 0 : 1;
    next[partition] = next[partition]! + BigInt(rng.int(1, 5)); // other identities' records between
    clock += rng.int(0, 3_000);
    // CreateTime: producers' clocks disagree, so timestamps are not in offset order.
    return { observation, partition, offset: next[partition]!, timestamp: String(clock - rng.int(0, 5_000)) };
  });
}

/** What an as-of read loads of the identity (the StoredHistory of src/fold/offset-index.ts). */
export async function history(store: MemoryIdentityStore, identity: string, context: ReducerContext) {
  const h = await store.loadHistory(G, identity);
  return { context, deliveries: Number(h.meta[META_FIELDS.deliveries] ?? "0"), records: h.records, history: h.history, index: h.index };
}

