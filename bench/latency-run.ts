/**
 * One latency measurement of the pipeline bench (bench/pipeline.bench.ts, step 3): a topic of its own, two spawned
 * fold workers (cold: fresh processes, the engine's warm-up only), one producer sending `rate` records a second in
 * ticks of 20 ms to explicit partitions (so every record's offset is known from the send), and a poll of the group's
 * committed offsets every 5 ms. A record's latency: its send to the first poll that finds the group committed past
 * it (Redis has it).
 */
import kafkajs from "kafkajs";
import { createKafka } from "../src/adapters/kafka/client.js";
import { ReliableProducer, type OutMessage } from "../src/adapters/kafka/producer.js";
import { ensureTopics } from "../src/adapters/kafka/topics.js";
import { waitForMembers } from "../test/support/group-members.js";
import { dropPrefix, sleep, spawnWorker, stopWorker, testSettings } from "../test/support/pipeline.js";
import { workload } from "./partitioned-workload.js";

const { Partitioners } = kafkajs;

/** Records sent in the first LATENCY_WARMUP_MS are also left out of a second p99 (the workers' JIT and first loads). */
export const LATENCY_WARMUP_MS = 2_000;

export interface LatencyRun {
  /** Every record's latency (ms), sorted. */
  latencies: number[];
  /** Those of records sent after the first LATENCY_WARMUP_MS, sorted. */
  warm: number[];
  /** By the second the ticks were sent in: the median and the longest tick latency. */
  bySecond: { p50: number; max: number }[];
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function measureLatency(rate: number, seconds: number): Promise<LatencyRun> {
  const settings = { ...testSettings(), partitions: 12 };
  const messages = workload(rate * seconds, 500, 50, 3);
  const kafka = createKafka({ brokers: settings.brokers, clientId: "bench-latency" });
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [{ topic: settings.topic, partitions: 12 }, { topic: `${settings.topic}.dlq`, partitions: 12 }]);
  const workers = [spawnWorker(settings), spawnWorker(settings)];
  await waitForMembers(settings, 2);
  const producer = await ReliableProducer.connect(kafka);
  // The partition kafkajs's default partitioner gives the record's key (records are keyed by scope, as producers must).
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: settings.partitions }, (_, partitionId) => ({ partitionId, leader: 0, replicas: [0], isr: [0], partitionErrorCode: 0 }));
  const partitionOf = (m: OutMessage) => partitioner({ topic: settings.topic, partitionMetadata, message: { key: m.key, value: m.value } });
  const sent: { partition: number; last: bigint; count: number; at: number; done: boolean }[] = [];
  const tickMs = 20;
  const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
  let producing = true;
  let start = Date.now();
  const bySecond: number[][] = Array.from({ length: seconds + 1 }, () => []);
  const polling = (async () => {
    const latencies: number[] = [];
    const warm: number[] = [];
    while (producing || sent.some((s) => !s.done)) {
      const offsets = await admin.fetchOffsets({ groupId: settings.group, topics: [settings.topic] });
      const committed = new Map((offsets[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
      const now = Date.now();
      for (const s of sent) {
        if (!s.done && (committed.get(s.partition) ?? -1n) > s.last) {
          s.done = true;
          for (let k = 0; k < s.count; k++) latencies.push(now - s.at);
          bySecond[Math.floor((s.at - start) / 1000)]?.push(now - s.at);
          if (s.at - start >= LATENCY_WARMUP_MS) for (let k = 0; k < s.count; k++) warm.push(now - s.at);
        }
      }
      await sleep(5);
    }
    return { latencies, warm };
  })();
  start = Date.now();
  for (let i = 0; i < messages.length; i += perTick) {
    const chunk = messages.slice(i, i + perTick).map((m) => ({ ...m, partition: partitionOf(m) }));
    const at = Date.now();
    const meta = await producer.sendWithOffsets(settings.topic, chunk);
    for (const m of meta) {
      const count = chunk.filter((c) => c.partition === m.partition).length;
      sent.push({ partition: m.partition, last: m.baseOffset + BigInt(count - 1), count, at, done: false });
    }
    const wait = start + ((i + perTick) / rate) * 1000 - Date.now();
    if (wait > 0) await sleep(wait);
  }
  producing = false;
  const measured = await polling;
  await producer.disconnect();
  await admin.disconnect();
  for (const w of workers) await stopWorker(w);
  await dropPrefix(settings);
  const byTick = bySecond.filter((l) => l.length > 0).map((l) => l.sort((a, b) => a - b));
  return {
    latencies: measured.latencies.sort((a, b) => a - b),
    warm: measured.warm.sort((a, b) => a - b),
    bySecond: byTick.map((l) => ({ p50: l[l.length >> 1]!, max: l.at(-1)! })),
  };
}
