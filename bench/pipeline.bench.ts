/**
 * Pipeline benchmarks, each a ratio measured in one run on this machine:
 *   1. fold throughput vs raw kafkajs consumption vs kcat consumption of the same topic
 *   2. end-to-end observations/s (produce -> visible in Redis), two workers
 *   3. produce-to-readback latency p50/p99 at a fixed offered load
 *   4. replay rate vs live fold rate
 *   5. worker memory vs number of identities, at a fixed cache size
 *   6. Redis memory per delivery and per identity
 *
 *   npx tsx bench/pipeline.bench.ts [--records 100000] [--latency-rate 5000] [--latency-seconds 20]
 *
 * Needs KAFKA_BROKERS / REDIS_URL (defaults 127.0.0.1) and kcat on PATH.
 */
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { createKafka } from "../src/adapters/kafka/client.js";
import { ReliableProducer, type OutMessage } from "../src/adapters/kafka/producer.js";
import { ensureTopics } from "../src/adapters/kafka/topics.js";
import { ensureSetup } from "../src/adapters/redis/functions.js";
import type { Settings } from "../src/config.js";
import { FoldWorker } from "../consumers/fold-worker.js";
import { runReplay } from "../consumers/replay.js";
import { observationMessage } from "../producers/observation-message.js";
import { openSender } from "../producers/produce.js";
import { simulate } from "../producers/simulation.js";
import { dropPrefix, quietLog, sleep, spawnWorker, stopWorker, testSettings, waitCaughtUp } from "../test/support/pipeline.js";

const { values } = parseArgs({
  options: {
    records: { type: "string", default: "100000" },
    "latency-rate": { type: "string", default: "5000" },
    "latency-seconds": { type: "string", default: "20" },
    "memory-identities": { type: "string", default: "10000,100000" },
    "cache-size": { type: "string", default: "10000" },
  },
});
const RECORDS = Number(values.records);
const rows: string[][] = [];
const out = (...cells: (string | number)[]) => {
  rows.push(cells.map(String));
  process.stderr.write(cells.join(" | ") + "\n");
};

function workload(records: number, agents: number, snapshotEvery: number, seed: number): OutMessage[] {
  const perAgent = Math.ceil(records / agents);
  return [...simulate({ agents, observationsPerAgent: perAgent, snapshotEvery, duplicateRate: 0.1, conflictRate: 0.01, seed })].slice(0, records).map((d) => observationMessage(d.observation));
}

async function produceAll(settings: Settings, messages: OutMessage[]): Promise<number> {
  const t0 = Date.now();
  const sender = await openSender(settings);
  await sender.send(messages);
  await sender.close();
  return (Date.now() - t0) / 1000;
}

async function rawKafkajs(settings: Settings, total: number): Promise<number> {
  const kafka = createKafka({ brokers: settings.brokers, clientId: "bench-raw" });
  const consumer = kafka.consumer({ groupId: `${settings.group}.raw`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic: settings.topic, fromBeginning: true });
  let seen = 0;
  // Timed like the fold: from run() (group join included) to the last record.
  const t0 = Date.now();
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachBatchAutoResolve: true,
      eachBatch: async ({ batch }) => {
        seen += batch.messages.length;
        if (seen >= total) resolve();
      },
    });
  });
  const seconds = (Date.now() - t0) / 1000;
  await consumer.disconnect();
  return seconds;
}

function kcat(settings: Settings): number {
  const t0 = Date.now();
  execFileSync("kcat", ["-C", "-b", settings.brokers.join(","), "-t", settings.topic, "-o", "beginning", "-e", "-q", "-f", "%k %s\n"], { stdio: ["ignore", "ignore", "inherit"], maxBuffer: 1 << 30 });
  return (Date.now() - t0) / 1000;
}

async function foldOnce(settings: Settings): Promise<number> {
  const t0 = Date.now();
  const worker = await FoldWorker.start(settings, quietLog);
  await waitCaughtUp(settings, 1_800_000);
  const seconds = (Date.now() - t0) / 1000;
  await worker.stop();
  return seconds;
}

async function redisMemory(redisUrl: string): Promise<number> {
  const r = new Redis(redisUrl);
  const info = await r.info("memory");
  await r.quit();
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

// As `mufold setup` would (once, on the benchmarks' Redis): the folds and the replay only check for the functions.
await ensureSetup(testSettings());

// 1 + 4 + 6: one topic, consumed four ways.
{
  const settings = { ...testSettings(), partitions: 12 };
  const messages = workload(RECORDS, 500, 50, 1); // ~500 x (RECORDS/500/50) identities
  const produceSeconds = await produceAll(settings, messages);
  out("produce (one producer, idempotent, acks=all, zstd)", Math.round(RECORDS / produceSeconds), "observations/s");
  const raw = await rawKafkajs(settings, RECORDS);
  const kc = kcat(settings);
  const memBefore = await redisMemory(settings.redisUrl);
  const fold = await foldOnce(settings);
  const memAfter = await redisMemory(settings.redisUrl);
  const replay = await runReplay(settings, { verify: false, promote: false, keepShadow: false }, quietLog);
  const identities = Number(execFileSync("redis-cli", ["-u", settings.redisUrl, "SCARD", `${settings.prefix}:g1:index`]).toString().trim());
  out("raw kafkajs consumption (eachBatch, no processing)", Math.round(RECORDS / raw), "records/s");
  out("kcat consumption (librdkafka, to /dev/null)", Math.round(RECORDS / kc), "records/s");
  out("fold, one worker (decide + apply + DLQ + commit)", Math.round(RECORDS / fold), "records/s");
  out("fold / raw kafkajs", (raw / fold).toFixed(2), "ratio");
  out("replay (one consumer, into a shadow generation)", replay.recordsPerSecond, "records/s");
  out("replay / live fold", ((RECORDS / fold) > 0 ? replay.recordsPerSecond / (RECORDS / fold) : 0).toFixed(2), "ratio");
  out("Redis memory per delivery", Math.round((memAfter - memBefore) / RECORDS), "bytes");
  out("Redis memory per identity", Math.round((memAfter - memBefore) / identities), `bytes (${identities} identities)`);
  await dropPrefix(settings);
}

// 2: end to end, two worker processes, producing at full speed while they fold.
{
  const settings = { ...testSettings(), partitions: 12 };
  const messages = workload(RECORDS, 500, 50, 2);
  const admin = createKafka({ brokers: settings.brokers, clientId: "bench" }).admin();
  await admin.connect();
  await ensureTopics(admin, [{ topic: settings.topic, partitions: 12 }, { topic: `${settings.topic}.dlq`, partitions: 12 }]);
  await admin.disconnect();
  const workers = [spawnWorker(settings), spawnWorker(settings)];
  await sleep(3000); // both joined
  const t0 = Date.now();
  await produceAll(settings, messages);
  await waitCaughtUp(settings, 1_800_000);
  const seconds = (Date.now() - t0) / 1000;
  for (const w of workers) await stopWorker(w);
  out("end to end (produce -> visible in Redis), two workers", Math.round(RECORDS / seconds), "observations/s");
  await dropPrefix(settings);
}

// 3: latency at a fixed offered load: send time -> the group has committed past the record (Redis has it).
{
  const rate = Number(values["latency-rate"]);
  const seconds = Number(values["latency-seconds"]);
  const settings = { ...testSettings(), partitions: 12 };
  const messages = workload(rate * seconds, 500, 50, 3);
  const kafka = createKafka({ brokers: settings.brokers, clientId: "bench-latency" });
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [{ topic: settings.topic, partitions: 12 }, { topic: `${settings.topic}.dlq`, partitions: 12 }]);
  const workers = [spawnWorker(settings), spawnWorker(settings)];
  await sleep(3000);
  const producer = await ReliableProducer.connect(kafka);
  // Each tick's records go to explicit partitions, so every record's offset is known from the send result.
  const sent: { partition: number; last: bigint; count: number; at: number; done: boolean }[] = [];
  const tickMs = 20;
  const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
  let producing = true;
  const polling = (async () => {
    const latencies: number[] = [];
    while (producing || sent.some((s) => !s.done)) {
      const offsets = await admin.fetchOffsets({ groupId: settings.group, topics: [settings.topic] });
      const committed = new Map((offsets[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
      const now = Date.now();
      for (const s of sent) {
        if (!s.done && (committed.get(s.partition) ?? -1n) > s.last) {
          s.done = true;
          for (let k = 0; k < s.count; k++) latencies.push(now - s.at);
        }
      }
      await sleep(5);
    }
    return latencies;
  })();
  const start = Date.now();
  for (let i = 0; i < messages.length; i += perTick) {
    const chunk = messages.slice(i, i + perTick).map((m, k) => ({ ...m, partition: (i + k) % settings.partitions }));
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
  const latencies = (await polling).sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
  out(`produce-to-readback latency at ${rate}/s, p50`, pct(50), "ms");
  out(`produce-to-readback latency at ${rate}/s, p99`, pct(99), "ms");
  await producer.disconnect();
  await admin.disconnect();
  for (const w of workers) await stopWorker(w);
  await dropPrefix(settings);
}

// 5: worker memory vs identities, cache size fixed.
for (const n of String(values["memory-identities"]).split(",").map(Number)) {
  const settings = { ...testSettings(), partitions: 12 };
  const messages = workload(n, n, 1, 5); // one observation per agent: n identities
  await produceAll(settings, messages);
  const child = spawnWorker(settings, { MUFOLD_CACHE_SIZE: String(values["cache-size"]) });
  await waitCaughtUp(settings, 1_800_000);
  const rss = Number(execFileSync("ps", ["-o", "rss=", "-p", String(child.pid)]).toString().trim()) * 1024;
  await stopWorker(child);
  out(`worker RSS after folding ${n} identities (cache ${values["cache-size"]})`, Math.round(rss / 1024 / 1024), "MiB");
  await dropPrefix(settings);
}

console.log("| measurement | value | unit |");
console.log("|---|---|---|");
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
