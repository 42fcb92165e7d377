/**
 * The pipeline bench's workload (~2,000 identities, 10% retries, 1% changed
 * judgments) as Kafka records split over 12 partitions by key, as the producer
 * would place them (any stable split will do), for benches that run the fold
 * engine without a broker.
 */
import { createHash } from "node:crypto";
import type { OutMessage } from "../src/adapters/kafka/producer.js";
import type { SourceRecord } from "../src/fold/source-record.js";
import { observationRecord } from "../src/client/producer.js";
import { simulate } from "../producers/simulation.js";

export const PARTITIONS = 12;

/** `records` observations of `agents` agents (a new memory snapshot every `snapshotEvery`), 10% retries, 1% changed judgments, as records. */
export function workload(records: number, agents: number, snapshotEvery: number, seed: number): OutMessage[] {
  const perAgent = Math.ceil(records / agents);
  return [...simulate({ agents, observationsPerAgent: perAgent, snapshotEvery, duplicateRate: 0.1, conflictRate: 0.01, seed })].slice(0, records).map((d) => observationRecord(d.observation));
}

/** Per partition, its records in offset order. */
export function partitionedWorkload(records: number): SourceRecord[][] {
  const byPartition = Array.from({ length: PARTITIONS }, () => [] as SourceRecord[]);
  for (const m of workload(records, 500, 50, 1)) {
    const p = createHash("md5").update(m.key as string).digest()[0]! % PARTITIONS;
    // A Kafka timestamp, as every record of a v2 batch has (the offset index keeps it).
    const offset = byPartition[p]!.length;
    byPartition[p]!.push({ topic: "t", partition: p, offset: String(offset), key: Buffer.from(m.key as string), value: Buffer.from(m.value as string), headers: {}, timestamp: String(1_790_000_000_000 + offset) });
  }
  return byPartition;
}

/**
 * Each partition's records cut into batches of `size`: partition after
 * partition, or interleaved (the first batch of every partition, then the
 * second, ...: as a consumer of all partitions at once meets them).
 */
export function batchesOf(byPartition: SourceRecord[][], size: number, order: "partition" | "interleaved" = "partition"): SourceRecord[][] {
  const cut = byPartition.map((list) => Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, (i + 1) * size)));
  if (order === "partition") return cut.flat();
  const out: SourceRecord[][] = [];
  for (let i = 0; cut.some((batches) => i < batches.length); i++) for (const batches of cut) if (i < batches.length) out.push(batches[i]!);
  return out;
}
