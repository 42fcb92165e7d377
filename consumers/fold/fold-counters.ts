/** What a fold worker has done, in its own counters and in the metrics registry, batch by batch. */
import type { BatchContext } from "../../src/adapters/kafka/consumer.js";
import type { IdentityApplier } from "../../src/fold/identity-applier.js";
import type { FoldMetrics } from "../../src/observability/metrics.js";

export interface FoldCounters {
  consumed: number;
  applied: number;
  duplicatesSkipped: number;
  deadLettered: number;
  casRetries: number;
  batches: number;
  dlqByReason: Record<string, number>;
}

export function emptyCounters(): FoldCounters {
  return { consumed: 0, applied: 0, duplicatesSkipped: 0, deadLettered: 0, casRetries: 0, batches: 0, dlqByReason: {} };
}

/** The applier's counts of one batch. */
export type BatchStats = Awaited<ReturnType<IdentityApplier["applyInWaves"]>>;

/** Count a folded batch of `records` (dead letters are counted as they are sent). */
export function countBatch(counters: FoldCounters, metrics: FoldMetrics | undefined, applier: IdentityApplier, records: number, stats: BatchStats, ctx: BatchContext): void {
  counters.applied += stats.applied;
  counters.duplicatesSkipped += stats.duplicatesSkipped;
  counters.casRetries += stats.casRetries;
  counters.consumed += records;
  counters.batches++;
  if (!metrics) return;
  metrics.deliveriesApplied.inc(stats.applied);
  metrics.duplicatesSkipped.inc(stats.duplicatesSkipped);
  metrics.casRetries.inc(stats.casRetries);
  metrics.conflictingDeliveries.inc(stats.conflicting);
  metrics.recordsConsumed.inc(records);
  metrics.identitiesCached.set(applier.cached);
  metrics.identityCacheBytes.set(applier.cachedBytes);
  metrics.consumerLag.set({ topic: ctx.topic, partition: String(ctx.partition) }, Math.max(0, Number(BigInt(ctx.highWatermark) - BigInt(ctx.nextOffset))));
}

/** Count dead-lettered records by reason. */
export function countDeadLetters(counters: FoldCounters, metrics: FoldMetrics | undefined, reasons: readonly string[]): void {
  for (const reason of reasons) {
    counters.dlqByReason[reason] = (counters.dlqByReason[reason] ?? 0) + 1;
    metrics?.deadLetters.inc({ reason });
  }
  counters.deadLettered += reasons.length;
}
