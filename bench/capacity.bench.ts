/**
 * Capacity planning, checked: measure the per-record costs of one fold worker on one Redis
 * (worker CPU, Redis server CPU, broker CPU, Redis bytes), predict with the formula of
 * docs/operations.md "Capacity planning" what 3 workers on a 3-master Redis Cluster will do
 * on this machine's cores, then run exactly that and compare.
 *
 *   npm run build && npx tsx bench/capacity.bench.ts [--records 60000] [--json FILE]
 *
 * Both runs start their workers on the empty topic and wait until they have joined, then produce
 * the workload and fold it (end to end). The prediction: the cores are shared by every process,
 * so the cluster run's throughput is
 *   cores / (worker + Redis + broker + producer CPU per record)
 * and each master holds identities × bytes per identity / masters of Redis memory. The
 * bench prints predicted and measured side by side (and their ratio); the formula is only
 * as good as that ratio. Needs KAFKA_BROKERS / REDIS_URL and starts infra/redis-cluster.
 */
import { execFileSync } from "node:child_process";
import { cpus } from "node:os";
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { createKafka } from "../src/adapters/kafka/client.js";
import type { OutMessage } from "../src/adapters/kafka/producer.js";
import { ensureTopics } from "../src/adapters/kafka/topics.js";
import { connectRedis, masterNodes } from "../src/adapters/redis/connect.js";
import { ensureSetup } from "../src/adapters/redis/functions.js";
import { RedisControlStore } from "../src/adapters/redis/control-store.js";
import type { Settings } from "../src/config/settings.js";
import { indexKey } from "../src/adapters/redis/keys.js";
import { observationRecord } from "../src/client/producer.js";
import { openSender } from "../producers/produce.js";
import { simulate } from "../producers/simulation.js";
import { dropPrefix, spawnWorker, stopWorker, testSettings, waitCaughtUp } from "../test/support/pipeline.js";
import { startRedisCluster } from "../test/support/redis-cluster.js";
import { waitForMembers } from "../test/support/group-members.js";
import { infoNumber, redisCpuSeconds, redisInfo } from "./redis-info.js";

const { values } = parseArgs({ options: { records: { type: "string", default: "60000" }, json: { type: "string" } } });
const RECORDS = Number(values.records);
const PARTITIONS = 12;
const CORES = cpus().length;
const TICK_US = 1e6 / Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim());

function workload(seed: number): OutMessage[] {
  return [...simulate({ agents: 300, observationsPerAgent: Math.ceil(RECORDS / 300), snapshotEvery: 50, duplicateRate: 0.1, conflictRate: 0.01, seed })]
    .slice(0, RECORDS)
    .map((d) => observationRecord(d.observation));
}

/** A process's CPU (user + system) in µs, from /proc. */
function processCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

function brokerPid(): number {
  const out = execFileSync("pgrep", ["-f", "kafka.Kafka"]).toString().trim().split("\n")[0];
  if (out === undefined || out === "") throw new Error("no Kafka broker process found (pgrep -f kafka.Kafka)");
  return Number(out);
}

/** Redis server CPU (used_cpu_user + used_cpu_sys) in µs and used_memory, summed over the given nodes. */
async function redisStats(nodes: Redis[]): Promise<{ cpuUs: number; memory: number[]; fcalls: number }> {
  let cpuUs = 0;
  let fcalls = 0;
  const memory: number[] = [];
  for (const node of nodes) {
    cpuUs += (await redisCpuSeconds(node)) * 1e6;
    memory.push(infoNumber(await redisInfo(node, "memory"), "used_memory"));
    // INFO commandstats lists a command only once it has been called: no line is no FCALL yet.
    fcalls += Number(/^cmdstat_fcall:calls=(\d+)/m.exec(await redisInfo(node, "commandstats"))?.[1] ?? 0);
  }
  return { cpuUs, memory, fcalls };
}

async function createTopics(settings: Settings): Promise<void> {
  const admin = createKafka({ brokers: settings.brokers, clientId: "bench-capacity" }).admin();
  await admin.connect();
  await ensureTopics(admin, [{ topic: settings.topic, partitions: PARTITIONS }, { topic: `${settings.topic}.dlq`, partitions: PARTITIONS }]);
  await admin.disconnect();
}

async function produce(settings: Settings, messages: OutMessage[]): Promise<void> {
  const sender = await openSender(settings);
  await sender.send(messages);
  await sender.close();
}

async function identities(settings: Settings): Promise<number> {
  const redis = connectRedis(settings.redisUrl);
  try {
    const generation = await new RedisControlStore(redis, settings.prefix).liveGeneration();
    return generation === null ? 0 : await redis.scard(indexKey(settings.prefix, generation));
  } finally {
    await redis.quit();
  }
}

interface Run {
  seconds: number;
  workerCpuUs: number;
  redisCpuUs: number;
  brokerCpuUs: number;
  producerCpuUs: number;
  fcalls: number;
  memoryDelta: number[];
  identities: number;
}

/**
 * Start `workers` worker processes on the empty topic and wait until they have joined (their start-up is not a
 * per-record cost), then produce the workload from this process and fold it: wall time until every record is
 * committed, and the CPU meanwhile of the workers (/proc), Redis (INFO), the broker (/proc) and the producer (this
 * process): every process that shares the cores.
 */
async function run(settings: Settings, workers: number, seed: number): Promise<Run> {
  await ensureSetup(settings);
  const messages = workload(seed);
  await createTopics(settings);
  const redis = connectRedis(settings.redisUrl);
  const nodes = await masterNodes(redis);
  const children = Array.from({ length: workers }, () => spawnWorker(settings));
  await waitForMembers(settings, workers);
  const cpuOf = () => new Map(children.map((c) => [c.pid!, processCpuUs(c.pid!)]));
  const broker = brokerPid();
  const before = { workers: cpuOf(), redis: await redisStats(nodes), broker: processCpuUs(broker), producer: process.cpuUsage() };
  const t0 = Date.now();
  await produce(settings, messages);
  await waitCaughtUp(settings, 1_800_000);
  const seconds = (Date.now() - t0) / 1000;
  const workersAfter = cpuOf();
  const producer = process.cpuUsage(before.producer);
  const brokerCpuUs = processCpuUs(broker) - before.broker;
  const after = await redisStats(nodes);
  for (const c of children) await stopWorker(c);
  await redis.quit();
  const result: Run = {
    seconds,
    workerCpuUs: [...workersAfter].reduce((a, [pid, us]) => a + us - before.workers.get(pid)!, 0),
    redisCpuUs: after.cpuUs - before.redis.cpuUs,
    brokerCpuUs,
    producerCpuUs: producer.user + producer.system,
    fcalls: after.fcalls - before.redis.fcalls,
    memoryDelta: after.memory.map((m, i) => m - before.redis.memory[i]!),
    identities: await identities(settings),
  };
  await dropPrefix(settings);
  return result;
}

const perRecord = (us: number) => us / RECORDS;
const round = (x: number, d = 1) => Number(x.toFixed(d));

// 1. One worker, one Redis: the per-record costs the formula takes.
const single = await run(testSettings({ partitions: PARTITIONS }), 1, 11);
const costs = {
  worker_cpu_us_per_record: perRecord(single.workerCpuUs),
  redis_cpu_us_per_record: perRecord(single.redisCpuUs),
  broker_cpu_us_per_record: perRecord(single.brokerCpuUs),
  producer_cpu_us_per_record: perRecord(single.producerCpuUs),
  redis_bytes_per_identity: single.memoryDelta[0]! / single.identities,
};

// 2. The prediction for 3 workers on a 3-master cluster on these cores.
const MASTERS = 3;
const WORKERS = 3;
const totalUs = costs.worker_cpu_us_per_record + costs.redis_cpu_us_per_record + costs.broker_cpu_us_per_record + costs.producer_cpu_us_per_record;
const predictedRate = (CORES * 1e6) / totalUs;

// 3. Measure it.
const clusterUrl = await startRedisCluster();
const cluster = await run(testSettings({ partitions: PARTITIONS, redisUrl: clusterUrl }), WORKERS, 12);
const measuredRate = RECORDS / cluster.seconds;
const measuredCores = (cluster.workerCpuUs + cluster.redisCpuUs + cluster.brokerCpuUs + cluster.producerCpuUs) / 1e6 / cluster.seconds;
const predictedPerMaster = (cluster.identities * costs.redis_bytes_per_identity) / MASTERS;

const result = {
  command: ["npx tsx bench/capacity.bench.ts", ...process.argv.slice(2)].join(" "),
  measured_at: new Date().toISOString(),
  git_commit: execFileSync("git", ["rev-parse", "HEAD"]).toString().trim(),
  records: RECORDS,
  cores: CORES,
  single: { seconds: round(single.seconds), identities: single.identities, fcalls_per_record: round(single.fcalls / RECORDS, 3), ...Object.fromEntries(Object.entries(costs).map(([k, v]) => [k, round(v)])) },
  cluster: {
    workers: WORKERS,
    masters: MASTERS,
    seconds: round(cluster.seconds),
    identities: cluster.identities,
    fcalls_per_record: round(cluster.fcalls / RECORDS, 3),
    worker_cpu_us_per_record: round(perRecord(cluster.workerCpuUs)),
    redis_cpu_us_per_record: round(perRecord(cluster.redisCpuUs)),
    broker_cpu_us_per_record: round(perRecord(cluster.brokerCpuUs)),
    producer_cpu_us_per_record: round(perRecord(cluster.producerCpuUs)),
    cores_busy: round(measuredCores, 2),
    redis_memory_per_master: cluster.memoryDelta,
  },
  predicted_records_per_s: Math.round(predictedRate),
  measured_records_per_s: Math.round(measuredRate),
  measured_over_predicted: round(measuredRate / predictedRate, 2),
  predicted_redis_bytes_per_master: Math.round(predictedPerMaster),
  measured_over_predicted_memory_per_master: cluster.memoryDelta.map((m) => round(m / predictedPerMaster, 2)),
};
process.stdout.write(JSON.stringify(result, null, 2) + "\n");
if (values.json !== undefined) writeFileSync(values.json, JSON.stringify(result, null, 2) + "\n");
process.exit(0);
