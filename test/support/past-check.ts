/**
 * After a run with faults (kills, restarts, Redis emptied or restored from an
 * older snapshot): are the answers about the past still exact? For identities
 * drawn at random, explain must list exactly the identity's records on the
 * log (each once: a redelivery is not a delivery), with counts equal to the
 * packet's counters, and as-of reads at random points must be the reducer over
 * the records up to them. The records and their order come from the caller,
 * who read the log itself; the expected packets from the embedded reducer.
 */
import { Redis } from "ioredis";
import { ProjectionReader } from "../../src/client/readback.js";
import { contextOfObservation, reducerIdentity, type Observation } from "../../src/core/index.js";
import type { Settings } from "../../src/config/settings.js";
import { Prng } from "../../producers/simulation.js";
import { expectedPackets } from "./oracle.js";

/** A valid record of the log, where it is. */
export interface PlacedRecord {
  observation: Observation;
  partition: number;
  offset: bigint;
}

export interface PastCheck {
  identities: number;
  points: number;
  /** One line per disagreement; empty when every answer was exact. */
  mismatches: string[];
}

const COUNTERS = ["accepted_observation_count", "duplicate_observation_count", "conflicting_observation_count", "rejected_observation_count"] as const;

export async function checkPast(settings: Settings, records: readonly PlacedRecord[], o: { identities: number; pointsPerIdentity: number; seed: number }): Promise<PastCheck> {
  const byIdentity = new Map<string, PlacedRecord[]>();
  for (const r of records) {
    const identity = reducerIdentity(contextOfObservation(r.observation, settings.reducerVersion));
    let list = byIdentity.get(identity);
    if (list === undefined) byIdentity.set(identity, (list = []));
    list.push(r);
  }
  const rng = new Prng(o.seed);
  const pool = [...byIdentity.keys()].sort();
  const chosen: string[] = [];
  while (chosen.length < o.identities && pool.length > 0) chosen.push(pool.splice(rng.int(0, pool.length - 1), 1)[0]!);
  const redis = new Redis(settings.redisUrl);
  const reader = new ProjectionReader(redis, settings.prefix, settings.reducerVersion, settings.topic);
  const result: PastCheck = { identities: 0, points: 0, mismatches: [] };
  const key = (partition: number, offset: bigint, id: string | null) => `${partition}:${offset}:${id ?? "-"}`;
  try {
    for (const identity of chosen) {
      const placed = byIdentity.get(identity)!;
      const oracle = (upTo: readonly PlacedRecord[]) => expectedPackets(upTo.map((p) => p.observation), settings.reducerVersion).get(identity);
      const explanation = await reader.explain(identity);
      result.identities++;
      if (explanation === null) {
        result.mismatches.push(`${identity}: explain found no projection`);
        continue;
      }
      const listed = explanation.deliveries.map((d) => key(d.partition, d.offset, d.observation_id)).sort();
      const onLog = placed.map((p) => key(p.partition, p.offset, p.observation.observation_id)).sort();
      if (explanation.notIndexed === 0 && listed.join() !== onLog.join()) {
        result.mismatches.push(`${identity}: explain lists ${listed.length} deliveries, the log holds ${onLog.length} (first differing: ${listed.find((k, i) => k !== onLog[i]) ?? onLog[listed.length]})`);
      }
      const packet = oracle(placed);
      if (explanation.text !== packet) result.mismatches.push(`${identity}: the explained packet is not the reducer's over the log`);
      const counters = JSON.parse(packet ?? "{}") as Record<string, number>;
      const counts = explanation.counts as unknown as Record<string, number>;
      for (const c of COUNTERS) {
        if (counts[c] !== counters[c]) result.mismatches.push(`${identity}: explain counts ${c} ${counts[c]}, the packet ${counters[c]}`);
      }
      for (let i = 0; i < o.pointsPerIdentity && placed.length <= 1_024; i++) {
        const at = rng.pick(placed);
        const upTo = placed.filter((p) => p.partition === at.partition && p.offset <= at.offset);
        const got = await reader.get(identity, { asOf: { partition: at.partition, offset: at.offset } });
        result.points++;
        if (got?.text !== oracle(upTo)) result.mismatches.push(`${identity}: as of ${at.partition}:${at.offset} differs from the reducer over its ${upTo.length} records`);
      }
    }
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
  return result;
}
