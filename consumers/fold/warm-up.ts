/**
 * Warms a fold worker's engine before it joins its group: synthetic records
 * (the simulation's) decided, planned and applied into a memory store, no IO.
 * Without it, the engine's code is not optimised yet when the first records
 * arrive, and the first second's records wait longer (Kafka and Redis clients
 * are not warmed). It leaves behind garbage and V8's
 * optimised code, which is the point; the engine keeps no caches of its own.
 */
import { MemoryIdentityStore } from "../../src/adapters/memory/identity-store.js";
import { observationRecord } from "../../src/client/producer.js";
import { keyWaves, routeRecords } from "../../src/fold/batch-router.js";
import type { SourceRecord } from "../../src/fold/source-record.js";
import { IdentityApplier } from "../../src/fold/identity-applier.js";
import type { DecisionOptions } from "../../src/fold/record-decision.js";
import { simulate } from "../../producers/simulation.js";

/** Records per warm-up batch, over this many partitions: batches of several identities, as a fetch brings. */
const BATCH = 250;
const PARTITIONS = 4;

export interface WarmUpStats {
  records: number;
  identities: number;
  applied: number;
}

export async function warmUpEngine(options: DecisionOptions, records: number): Promise<WarmUpStats> {
  const agents = Math.max(1, Math.ceil(records / 50));
  const deliveries = [...simulate({ agents, observationsPerAgent: 50, snapshotEvery: 25, duplicateRate: 0.1, conflictRate: 0.01, seed: 7 })].slice(0, records);
  const source: SourceRecord[] = deliveries.map((d, i) => {
    const m = observationRecord(d.observation);
    return { topic: "mufold-warm-up", partition: i % PARTITIONS, offset: String(i), key: Buffer.from(m.key), value: Buffer.from(m.value), headers: { ...m.headers } };
  });
  const applier = new IdentityApplier(new MemoryIdentityStore(), 1_000, { feed: true });
  const identities = new Set<string>();
  let applied = 0;
  for (let i = 0; i < source.length; i += BATCH) {
    // As the fold applies a batch: in waves (batch-router.ts, keyWaves).
    const stats = await applier.applyInWaves(1, keyWaves(source.slice(i, i + BATCH)), (wave) => {
      const routed = routeRecords(wave, options);
      for (const b of routed.identities) identities.add(b.identity);
      return routed.identities;
    });
    applied += stats.applied;
  }
  return { records: source.length, identities: identities.size, applied };
}
