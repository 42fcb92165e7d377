/**
 * One latency measurement of the pipeline bench (bench/pipeline.bench.ts, step 3): a topic of its own, two spawned
 * fold workers (cold: fresh processes, the engine's warm-up only), one producer sending `rate` records a second in
 * ticks of 20 ms to explicit partitions (so every record's offset is known from the send), and a poll every 5 ms of
 * the live generation's marks in Redis. A batch's packets are written before its seal moves the mark past it, so a
 * record is readable by the first poll that finds its partition's mark past it: its latency is its send to that poll
 * (an upper bound: a reader can get the packet a little earlier).
 * (Until 2026-12 the poll read the group's committed offsets, which follow the seal: in one run each, the p99 of the
 * two differed by 4-6 ms. That poll was an OffsetFetch to the broker every 5 ms, on the machine being measured.)
 * The ticks (their records and partitions) are made before the clock starts: the load generator shares the machine.
 */
import kafkajs from "kafkajs";
import { connectRedis } from "../src/adapters/redis/connect.js";
import { CONTROL_FIELDS, controlKey, markField } from "../src/adapters/redis/keys.js";
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

interface Sent {
  partition: number;
  last: bigint;
  count: number;
  at: number;
}

/** How long the poll waits, once the last tick is sent, for the workers to fold every record. */
const FOLD_DEADLINE_MS = 120_000;

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
  await admin.disconnect(); // the marks are read from Redis: no broker request during the measurement
  const workers = [spawnWorker(settings), spawnWorker(settings)];
  await waitForMembers(settings, 2);
  const producer = await ReliableProducer.connect(kafka);
  // The partition kafkajs's default partitioner gives the record's key (records are keyed by scope, as producers must).
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: settings.partitions }, (_, partitionId) => ({ partitionId, leader: 0, replicas: [0], isr: [0], partitionErrorCode: 0 }));
  const partitionOf = (m: OutMessage) => partitioner({ topic: settings.topic, partitionMetadata, message: { key: m.key, value: m.value } });
  const tickMs = 20;
  const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
  const ticks: { messages: (OutMessage & { partition: number })[]; counts: Map<number, number> }[] = [];
  for (let i = 0; i < messages.length; i += perTick) {
    const chunk = messages.slice(i, i + perTick).map((m) => ({ ...m, partition: partitionOf(m) }));
    const counts = new Map<number, number>();
    for (const m of chunk) counts.set(m.partition, (counts.get(m.partition) ?? 0) + 1);
    ticks.push({ messages: chunk, counts });
  }
  const sent: Sent[] = [];
  let producing = true;
  let start = Date.now();
  const redis = connectRedis(settings.redisUrl);
  /** The live generation's marks (the next offset to fold, by partition), from one read of the control hash. */
  const marks = async (): Promise<Map<number, bigint>> => {
    const control = await redis.hgetall(controlKey(settings.prefix));
    const generation = control[CONTROL_FIELDS.generation];
    const out = new Map<number, bigint>();
    if (generation === undefined) return out;
    for (let partition = 0; partition < settings.partitions; partition++) {
      const next = control[markField(Number(generation), settings.topic, partition)];
      if (next !== undefined) out.set(partition, BigInt(next));
    }
    return out;
  };
  /** Polls the marks until every sent tick is past them, timing each tick once. */
  const polling = (async (): Promise<LatencyRun> => {
    const latencies: number[] = [];
    const warm: number[] = [];
    const bySecond: number[][] = Array.from({ length: seconds + 1 }, () => []);
    let next = 0; // ticks before it are done
    const done = new Set<Sent>();
    let deadline = Number.POSITIVE_INFINITY;
    while (producing || next < sent.length) {
      if (!producing && deadline === Number.POSITIVE_INFINITY) deadline = Date.now() + FOLD_DEADLINE_MS;
      if (Date.now() > deadline) {
        const behind = [...new Set(sent.slice(next).filter((s) => !done.has(s)).map((s) => s.partition))].sort((a, b) => a - b);
        throw new Error(`the workers did not fold every record within ${FOLD_DEADLINE_MS / 1000} s of the last send: partitions ${behind.join(", ")} behind`);
      }
      const at = await marks();
      const now = Date.now();
      for (let i = next; i < sent.length; i++) {
        const s = sent[i]!;
        if (done.has(s) || !((at.get(s.partition) ?? -1n) > s.last)) continue;
        done.add(s);
        for (let k = 0; k < s.count; k++) latencies.push(now - s.at);
        bySecond[Math.floor((s.at - start) / 1000)]?.push(now - s.at);
        if (s.at - start >= LATENCY_WARMUP_MS) for (let k = 0; k < s.count; k++) warm.push(now - s.at);
      }
      while (next < sent.length && done.has(sent[next]!)) done.delete(sent[next++]!);
      await sleep(5);
    }
    const byTick = bySecond.filter((l) => l.length > 0).map((l) => l.sort((a, b) => a - b));
    return {
      latencies: latencies.sort((a, b) => a - b),
      warm: warm.sort((a, b) => a - b),
      bySecond: byTick.map((l) => ({ p50: l[l.length >> 1]!, max: l.at(-1)! })),
    };
  })();
  let failed = false;
  polling.catch(() => (failed = true)); // awaited below; this only stops the sending early
  try {
    try {
      start = Date.now();
      for (let t = 0; t < ticks.length && !failed; t++) {
        const tick = ticks[t]!;
        const at = Date.now();
        const meta = await producer.sendWithOffsets(settings.topic, tick.messages);
        for (const m of meta) {
          const count = tick.counts.get(m.partition)!;
          sent.push({ partition: m.partition, last: m.baseOffset + BigInt(count - 1), count, at });
        }
        const wait = start + (((t + 1) * perTick) / rate) * 1000 - Date.now();
        if (wait > 0) await sleep(wait);
      }
    } finally {
      producing = false;
    }
    return await polling;
  } finally {
    redis.disconnect();
    await producer.disconnect();
    for (const w of workers) await stopWorker(w);
    await dropPrefix(settings);
  }
}
