/**
 * Decide records and group the accepted ones by reducer identity; group
 * records by Kafka key, and cut a batch into waves of key groups, decided
 * one after another.
 */
import { RepeatedStrings } from "../core/repeated-strings.js";
import { decideRecord, type DecisionOptions, type DlqReason } from "./record-decision.js";
import type { IdentityBatch } from "./identity-applier.js";
import type { SourceRecord } from "./source-record.js";

export interface RoutedBatch {
  identities: IdentityBatch[];
  rejected: { record: SourceRecord; reason: DlqReason; detail: string }[];
  accepted: number;
}

export function routeRecords(records: readonly SourceRecord[], options: DecisionOptions): RoutedBatch {
  const byIdentity = new Map<string, IdentityBatch>();
  const rejected: RoutedBatch["rejected"] = [];
  let accepted = 0;
  for (const record of records) {
    const decision = decideRecord(record, options);
    if (decision.kind === "reject") {
      rejected.push({ record, reason: decision.reason, detail: decision.detail });
      continue;
    }
    accepted++;
    let batch = byIdentity.get(decision.identity);
    if (batch === undefined) {
      batch = { identity: decision.identity, context: decision.context, deliveries: [] };
      byIdentity.set(decision.identity, batch);
    }
    batch.deliveries.push({
      observation: decision.observation,
      fingerprint: decision.fingerprint,
      topic: record.topic,
      partition: record.partition,
      offset: BigInt(record.offset),
      timestamp: record.timestamp,
      owned: decision.owned,
    });
  }
  return { identities: [...byIdentity.values()], rejected, accepted };
}

/**
 * The records of one wave of the live fold (keyWaves). A wave is decided,
 * planned and written before the next is decided, so what deciding makes
 * (the observations read from each record, their fingerprints) dies young,
 * within a wave, instead of living as long as a whole batch and being
 * promoted to the old generation. Smaller waves cost the main thread more.
 */
const DECIDE_WAVE_RECORDS = 256;

/** The keys' strings: a scope's records share one key, and a string per record was young garbage. */
const keys = new RepeatedStrings(1024);

/**
 * Add records to `into` by Kafka key (its bytes as latin1, "" for none), each
 * key's records in their order; keys in the order their first record comes.
 */
export function groupByKey(records: readonly SourceRecord[], into = new Map<string, SourceRecord[]>()): Map<string, SourceRecord[]> {
  for (const record of records) {
    const key = record.key === null ? "" : keys.of(record.key, 0, record.key.length);
    const group = into.get(key);
    if (group === undefined) into.set(key, [record]);
    else group.push(record);
  }
  return into;
}

/**
 * The records grouped by Kafka key, groups in the order their first record
 * comes and each group's records in their order, cut into waves: a wave
 * closes once it holds `maxRecords` or more, between groups. A record is
 * accepted only under its scope's key, so an identity's records of the batch
 * stay in one wave, unless its key alone holds more than `maxRecords`: such a
 * group is cut into pieces of `maxRecords`, in consecutive waves (a hot
 * scope, or a producer that keys everything alike, does not make one wave of
 * the batch). A wave holds fewer than 2 × `maxRecords`. Waves applied one
 * after another keep each partition's offsets in order for every identity.
 */
export function keyWaves(records: readonly SourceRecord[], maxRecords = DECIDE_WAVE_RECORDS): SourceRecord[][] {
  const waves: SourceRecord[][] = [];
  let wave: SourceRecord[] = [];
  for (const group of groupByKey(records).values()) {
    for (let from = 0; from < group.length; from += maxRecords) {
      const end = Math.min(group.length, from + maxRecords);
      for (let i = from; i < end; i++) wave.push(group[i]!);
      if (wave.length >= maxRecords) {
        waves.push(wave);
        wave = [];
      }
    }
  }
  if (wave.length > 0) waves.push(wave);
  return waves;
}

/** The rejections of a batch decided wave by wave, in the batch's order (as its records came). */
export function inBatchOrder<R extends { record: SourceRecord }>(rejected: readonly R[], records: readonly SourceRecord[]): R[] {
  const of = new Map(rejected.map((r) => [r.record, r]));
  const out: R[] = [];
  for (const record of records) {
    const r = of.get(record);
    if (r !== undefined) out.push(r);
  }
  return out;
}
