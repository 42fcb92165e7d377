/**
 * Pipeline benchmarks, each a ratio or a CPU cost measured in one run on this machine (2 cores, shared with the broker
 * and Redis: judge the ratios and the CPU per record, not the wall-clock rates):
 *   1. fold throughput vs raw kafkajs consumption (stock kafkajs in a process of its own, bench/raw-kafkajs.ts; and
 *      again with mufold's record decoder, as the fold reads) vs kcat consumption of the same topic (and the fold
 *      again on a second topic, once the process has run every step of 1 and 4: its CPU warm); the live fold with two
 *      worker processes at saturation, by CPU
 *   2. end-to-end observations/s (produce -> visible in Redis), two workers
 *   3. produce-to-readback latency p50/p99 at a fixed offered load
 *   4. replay rate (one process, then --workers 2; each verified) vs live fold rate and raw consumption, and the CPU
 *      per record of one replay process against two
 *   5. worker memory vs number of identities, at a fixed cache size (--million: and a million identities in 256 MB)
 *   6. Redis memory per delivery and per identity
 *
 *   7. IdentityModel.plan per new delivery at 10 and 1,000 held deliveries (bench/plan.bench.ts, pure)
 *   8. core vs the Python reference (bench/core.bench.ts, spawned; needs .cache/reference-venv)
 *   9. the fold vs a naive Python peer (bench/naive-peer.ts: loopx re-reducing every touched identity per batch)
 *
 *   npx tsx bench/pipeline.bench.ts [--records 100000] [--latency-rate 2000,5000] [--latency-seconds 10] [--broker-warm-up-seconds 30]
 *       [--memory-identities 10000,100000] [--cache-size 10000] [--million] [--peer-records 20000]
 *       [--plan-samples 200] [--plan-rounds 5] [--core-repeat 30]
 *       [--steps fold,peer,e2e,latency,memory,plan,core] [--skip-core] [--json FILE]
 *
 * --steps runs only the named steps (default: all; --skip-core drops `core`): fold is 1 + 4 + 6, peer 9, e2e 2,
 * latency 3, memory 5, plan 7, core 8. The JSON's keys of a step not run are null.
 *
 * Issue 35's keys (the bounds are judged on them, never on a rate alone):
 * - replay_over_raw: the one-process replay's records/s over raw kafkajs consumption's, same topic, same run.
 * - replay_cpu_us_per_record: the one-process replay's CPU (this process, all threads: process.cpuUsage(), user +
 *   system) from runReplay's start until it has applied every record (before verify), over the records.
 *   replay_2_workers_cpu_us_per_record: the same stretch with --workers 2, summed over every replay process: this one
 *   (coordinator, reading its share) and the spawned replay worker (its /proc/<pid>/stat utime + stime, read while it
 *   still runs, the moment the last record is applied: its whole life so far, Node's start and compiling included).
 *   Bound: the second ≤ 1.15 × the first.
 * - fold_2_workers_cpu_us_per_record: two `mufold fold` processes (spawned as deployed, the warm-up off as in the
 *   one-worker fold) join an empty topic of 12 partitions; a fleet pause (what a promote takes) holds them while the
 *   fold's records are produced, then is released on the whole backlog: saturation. Both workers' CPU (/proc utime +
 *   stime) from before the first record is produced (every fetch and decode inside, the paused polling too) until the
 *   group has committed every record, summed, over the records. Bound: ≤ 1.15 × worker_cpu_us_per_record (the
 *   in-process one-worker fold of the same records, from its start to caught up).
 * - rss_mib_at_1m_identities (--million, opt-in: ~6 minutes on this shared 2-core machine, 105 s to produce and 235 s
 *   to fold; Redis holds ~3 GB until the prefix is dropped, and this process ~3 GB while producing: the simulation
 *   keeps every agent's history): a worker started with --max-old-space-size=256 and the cache at its default folds
 *   1,000,000 one-observation identities (the memory step's workload); its RSS once caught up, null with
 *   rss_1m_worker_survived false when it died first (out of memory), and its peak and mean as the other points.
 * - mufold_over_naive_loopx_fold: the fold's records/s over the naive peer's on the same records, in the same step.
 *   Both read one topic to its end from offset 0: the fold step's topic when --peer-records is --records, else (the
 *   default: 20,000 of 100,000; the peer re-reduces every touched identity over all its deliveries, so it slows as
 *   they pile up and the ratio grows with N: compare runs at the same N) a topic holding exactly the fold step's
 *   first N records (its workload and seed, the same keys and partitions). The fold: an in-process FoldWorker with a
 *   fresh group and prefix, timed from FoldWorker.start (its connect, checks and join) until it has written every
 *   record to Redis (its counters; the offsets' commit after that left out, as the peer commits none); run twice, the
 *   second taken (V8 warm, as a running worker is; the Python peer has no JIT to warm). The peer: its own clock, from
 *   its subscribe (the join included) to its last Redis write, after its interpreter started and connected. Both must
 *   make the same identities, and the peer the embedded reducer's bytes (runNaivePeer checks a sample).
 * replay_over_live and replay_2_workers_over_1 are still printed and written: wall-clock ratios, no longer bounds.
 *
 * --json FILE writes every measurement as one JSON object (the issue 10 and issue 35 keys; null
 * for what this run could not measure), and the pictures drawn from it
 * (bench/render-charts.ts: bench-*.svg in FILE's folder). Run `npm run build`
 * first: the spawned workers run bin/mufold.js from dist/.
 *
 * Needs KAFKA_BROKERS / REDIS_URL (defaults 127.0.0.1). The fold step uses the kcat on PATH; without one it runs
 * scripts/setup-foreign.sh first, as the foreign-client tests do (it installs kcat with apt-get, and the foreign
 * clients' Python venv, or says what to install). The peer step runs the peer in that venv (made the same way).
 */
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parseArgs, promisify } from "node:util";
import { Redis } from "ioredis";
import { createKafka } from "../src/adapters/kafka/client.js";
import type { OutMessage } from "../src/adapters/kafka/producer.js";
import { ensureTopics } from "../src/adapters/kafka/topics.js";
import { ensureSetup } from "../src/adapters/redis/functions.js";
import { RedisControlStore } from "../src/adapters/redis/control-store.js";
import { SETTINGS, type Settings } from "../src/config/settings.js";
import { indexKey } from "../src/adapters/redis/keys.js";
import { connectRedis } from "../src/adapters/redis/connect.js";
import { FleetPause } from "../consumers/replay/fleet-pause.js";
import { WORKER_NODE_FLAGS, mufoldBin } from "../consumers/fold/fold-process.js";
import { FoldWorker } from "../consumers/fold/fold-worker.js";
import { runReplay } from "../consumers/replay/replay.js";
import { observationRecord } from "../src/client/producer.js";
import { identitySetDigest } from "./identity-set.js";
import { workload } from "./partitioned-workload.js";
import { openSender } from "../producers/produce.js";
import { simulate } from "../producers/simulation.js";
import { nodeFlagsInEffect, runUnderMufoldFlags } from "./mufold-flags.js";
import { runNaivePeer } from "./naive-peer.js";
import { LATENCY_WARMUP_MS, measureLatency, percentile } from "./latency-run.js";
import { measurePlans } from "./plan.bench.js";
import { writeBenchmarkCharts } from "./render-charts.js";
import { childProcessesCpuSeconds, processCpuSeconds, startMachineCpu, startThreadSplit, type ThreadSplit } from "./cpu-split.js";
import { startHeapTraffic, type HeapTraffic } from "./heap-traffic.js";
import { v8PagesResidentBytes } from "./v8-pages.js";
import { infoNumber, redisCpuSeconds, redisInfo } from "./redis-info.js";
import { servicePid } from "../test/support/services/pidfiles.js";
import { freePort } from "../test/support/free-port.js";
import { ensureForeignClients, kcatOnPath } from "../test/support/foreign/foreign.js";
import { waitForMembers } from "../test/support/group-members.js";
import { dropPrefix, quietLog, sleep, spawnWorker, stopWorker, testSettings, waitCaughtUp } from "../test/support/pipeline.js";

// The in-process fold and replay (1, 4) run under the V8 flags every `mufold` process has.
await runUnderMufoldFlags();

const { values } = parseArgs({
  options: {
    records: { type: "string", default: "100000" },
    "latency-rate": { type: "string", default: "2000,5000" },
    "latency-seconds": { type: "string", default: "10" },
    "broker-warm-up-seconds": { type: "string", default: "30" },
    "memory-identities": { type: "string", default: "10000,100000" },
    "cache-size": { type: "string", default: "10000" },
    million: { type: "boolean", default: false },
    "peer-records": { type: "string", default: "20000" },
    "plan-samples": { type: "string", default: "200" },
    "plan-rounds": { type: "string", default: "5" },
    "core-repeat": { type: "string", default: "30" },
    "skip-core": { type: "boolean", default: false },
    steps: { type: "string", default: "fold,peer,e2e,latency,memory,plan,core" },
    json: { type: "string" },
  },
});
const RECORDS = Number(values.records);
const STEPS = ["fold", "peer", "e2e", "latency", "memory", "plan", "core"] as const;
const steps = new Set(String(values.steps).split(",").map((x) => x.trim()));
for (const step of steps) if (!(STEPS as readonly string[]).includes(step)) throw new Error(`--steps: unknown step ${step} (the steps: ${STEPS.join(",")})`);
if (values["skip-core"]) steps.delete("core");
const run = (step: (typeof STEPS)[number]) => steps.has(step);
// Before anything is produced: a machine without kcat gets it installed, or a message saying how, not a spawn error.
const kcatPath = run("fold") ? (kcatOnPath() ?? ensureForeignClients().kcat) : "";
const startedAt = Date.now();
/** The JSON result: issue 10's and 35's keys (null = not measured in this run), plus the raw points behind them. */
const result: Record<string, unknown> = {
  command: ["npx tsx bench/pipeline.bench.ts", ...process.argv.slice(2)].join(" "),
  measured_at: new Date().toISOString(),
  git_commit: execFileSync("git", ["rev-parse", "HEAD"]).toString().trim(),
  git_dirty: execFileSync("git", ["status", "--porcelain", "--untracked-files=no"]).toString().trim() !== "",
  node: process.version,
  node_flags: nodeFlagsInEffect(),
  records: RECORDS,
  steps: STEPS.filter(run),
  // Issue 10's and 35's keys, null until (and unless) the step that measures them runs.
  ...Object.fromEntries(
    [
      "fold_records_per_s", "raw_kafkajs_records_per_s", "fold_over_raw", "worker_cpu_us_per_record", "e2e_obs_per_s", "latency_p99_ms_at_2000",
      "latency_p99_ms_at_5000", "replay_over_live", "replay_2_workers_over_1", "rss_mib_at_10k_identities", "rss_mib_at_300k_identities",
      "redis_bytes_per_delivery", "plan_us_per_delivery_n10", "plan_us_per_delivery_n1000", "core_over_reference_300", "core_over_reference_1000",
      // issue 35's
      "replay_over_raw", "replay_cpu_us_per_record", "replay_2_workers_cpu_us_per_record", "fold_2_workers_cpu_us_per_record",
      "rss_mib_at_1m_identities", "mufold_over_naive_loopx_fold",
    ].map((key) => [key, null]),
  ),
};
const round = (x: number, digits = 2) => Number(x.toFixed(digits));
const rows: string[][] = [];
const out = (...cells: (string | number)[]) => {
  rows.push(cells.map(String));
  process.stderr.write(cells.join(" | ") + "\n");
};

async function produceAll(settings: Settings, messages: OutMessage[]): Promise<number> {
  const t0 = Date.now();
  const sender = await openSender(settings);
  await sender.send(messages);
  await sender.close();
  return (Date.now() - t0) / 1000;
}

/**
 * Raw kafkajs consumption of the whole topic: wall seconds, and what reading alone costs per record (CPU, the young
 * generation's traffic), measured as the fold's: the floor under the worker's keys of the same names. In a process
 * of its own (bench/raw-kafkajs.ts): this one has loaded mufold's consumer, whose record decoder replaces kafkajs's
 * for every fetch in the process; "fast-decoder" reads with it, as the fold does, and "decide" also decides each
 * record as the fold does and keeps nothing (the floor under any fold: `seen`, `accepted` and `identities` are for
 * checkDecidedAsTheFold).
 */
async function rawKafkajs(
  settings: Settings,
  total: number,
  reader: "kafkajs" | "fast-decoder" | "decide" = "kafkajs",
): Promise<{ seconds: number; cpuUs: number; split: ThreadSplit | null; traffic: HeapTraffic; seen: number; accepted?: number; identities?: string }> {
  const script = new URL("./raw-kafkajs.ts", import.meta.url).pathname;
  const args = ["--brokers", settings.brokers.join(","), "--topic", settings.topic, "--group", `${settings.group}.raw-${reader}`, "--records", String(total)];
  // Read as this run's worker reads and decides (its fetches, its reducer version and value bound), stated, not assumed.
  const asTheFold = [
    "--fetch-max-bytes", String(settings.fetchMaxBytes), "--partition-fetch-max-bytes", String(settings.partitionFetchMaxBytes),
    "--partitions-concurrency", String(settings.partitionsConcurrency), "--reducer-version", settings.reducerVersion, "--max-value-bytes", String(settings.maxValueBytes),
  ];
  const { stdout } = await promisify(execFile)(process.execPath, [...process.execArgv, script, ...args, ...(reader === "kafkajs" ? [] : [`--${reader}`, ...asTheFold])], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as Awaited<ReturnType<typeof rawKafkajs>>;
}

/**
 * The decide-only reader must have read every record once and decided them as the fold did (as many accepted, the
 * same identities), else its floor is of other work; a fold that read a record twice leaves nothing to
 * compare against, which fails too.
 */
function checkDecidedAsTheFold(reader: { seen: number; accepted?: number; identities?: string }, fold: { consumed: number; deadLettered: number; identities: string }): void {
  const problems: string[] = [];
  if (reader.seen !== RECORDS) problems.push(`the reader read ${reader.seen} records of ${RECORDS}`);
  if (fold.consumed !== RECORDS) problems.push(`the fold read ${fold.consumed} records of ${RECORDS}`);
  if (reader.accepted !== fold.consumed - fold.deadLettered) problems.push(`the reader accepted ${reader.accepted}, the fold ${fold.consumed - fold.deadLettered}`);
  if (reader.identities !== fold.identities) problems.push(`the reader's accepted records make other identities than the fold indexed (digests ${reader.identities}, ${fold.identities})`);
  if (problems.length > 0) throw new Error(`read and decide did not decide as the fold: ${problems.join("; ")}`);
}

async function brokerTopics(settings: Settings): Promise<number> {
  const admin = createKafka({ brokers: settings.brokers, clientId: "bench-topics" }).admin();
  await admin.connect();
  try {
    return (await admin.listTopics()).length;
  } finally {
    await admin.disconnect();
  }
}

function kcat(settings: Settings, path: string): number {
  const t0 = Date.now();
  execFileSync(path, ["-C", "-b", settings.brokers.join(","), "-t", settings.topic, "-o", "beginning", "-e", "-q", "-f", "%k %s\n"], { stdio: ["ignore", "ignore", "inherit"], maxBuffer: 1 << 30 });
  return (Date.now() - t0) / 1000;
}

/**
 * One in-process FoldWorker over the whole topic: wall seconds, this process's CPU (user + system) meanwhile, its
 * split between the main thread and the others (cpu-split.ts), its young generation's traffic (heap-traffic.ts), and
 * the CPU Redis and the broker spent meanwhile.
 */
async function foldOnce(
  settings: Settings,
  records = RECORDS,
): Promise<{ seconds: number; cpuUs: number; split: ThreadSplit | null; traffic: HeapTraffic; redisUs: number; brokerUs: number | null; consumed: number; deadLettered: number }> {
  const broker = brokerPid();
  const redis0 = await redisCpuSeconds(settings.redisUrl);
  const broker0 = broker === null ? null : processCpuSeconds(broker);
  const t0 = Date.now();
  const cpu0 = process.cpuUsage();
  const split = startThreadSplit();
  const heap = startHeapTraffic();
  // Without the start's warm-up (a fixed ~0.3-0.7 s of CPU, whatever the topic): this step measures the cost per
  // record, and stays comparable with the runs before the warm-up existed. The latency step's workers warm up.
  const worker = await FoldWorker.start({ ...settings, warmUpRecords: 0 }, quietLog);
  await waitCaughtUp(settings, 1_800_000);
  const cpu = process.cpuUsage(cpu0);
  const threads = split.stop(records);
  const traffic = heap.stop(records);
  const seconds = (Date.now() - t0) / 1000;
  const broker1 = broker === null ? null : processCpuSeconds(broker);
  const redisUs = ((await redisCpuSeconds(settings.redisUrl)) - redis0) * 1e6 / records;
  await worker.stop();
  const brokerUs = broker0 === null || broker1 === null ? null : ((broker1 - broker0) * 1e6) / records;
  const { consumed, deadLettered } = worker.counters;
  return { seconds, cpuUs: cpu.user + cpu.system, split: threads, traffic, redisUs, brokerUs, consumed, deadLettered };
}

/**
 * The peer step's fold: one in-process FoldWorker (no warm-up, as foldOnce's) over the whole topic, timed from its
 * start until it has applied every record (its counters count a batch once it is written to Redis; the offsets'
 * commit after that is left out, as the peer commits none), and the identities it made.
 */
async function foldUntilApplied(settings: Settings, records: number): Promise<{ seconds: number; identities: number }> {
  const t0 = Date.now();
  const worker = await FoldWorker.start({ ...settings, warmUpRecords: 0 }, quietLog);
  try {
    const deadline = t0 + 1_800_000;
    while (worker.counters.consumed < records) {
      if (Date.now() > deadline) throw new Error(`the fold applied ${worker.counters.consumed} of ${records} records in 30 minutes`);
      await sleep(2);
    }
    const seconds = (Date.now() - t0) / 1000;
    return { seconds, identities: await liveIdentities(settings) };
  } finally {
    await worker.stop();
  }
}

/** The pid of the broker `infra/` started (its pid file), or null for a broker of somebody else's. */
function brokerPid(): number | null {
  try {
    return servicePid("kafka");
  } catch {
    return null;
  }
}

/** The live generation's identities, as `read` takes them from its index (generation numbers are not 1 any more: read the control hash). */
async function liveIndex<T>(settings: Settings, read: (r: Redis, index: string | null) => Promise<T>): Promise<T> {
  const r = new Redis(settings.redisUrl);
  try {
    const generation = await new RedisControlStore(r, settings.prefix).liveGeneration();
    return await read(r, generation === null ? null : indexKey(settings.prefix, generation));
  } finally {
    await r.quit();
  }
}

/** How many identities the live generation's index holds. */
const liveIdentities = (settings: Settings): Promise<number> => liveIndex(settings, async (r, index) => (index === null ? 0 : r.scard(index)));

/** The live generation's identities, as one digest (identity-set.ts). */
const liveIdentitySet = (settings: Settings): Promise<string> => liveIndex(settings, async (r, index) => identitySetDigest(index === null ? [] : await r.smembers(index)));

/**
 * 4: a replay of the whole topic into a shadow generation with `workers` processes, verified against the live
 * fold (it must find every identity byte-equal: the bench fails loudly otherwise). Records per second of the
 * rebuild itself: from the start of the replay until it has applied every record (before verify's pause), and
 * the machine's busy cores over that stretch (cpu-split.ts: when they are all of its cores, more replay
 * processes cannot help on this machine), and this process's CPU per record by thread over the same stretch
 * (the whole replay's with one process; with more, this process reads only its share). `cpuUs`: the CPU of every
 * replay process over that stretch, µs per record: this one's (process.cpuUsage, all threads) and that of the replay
 * worker processes it spawned (/proc, read while they run: from their start), null when they could not be read.
 */
async function verifiedReplay(
  settings: Settings,
  workers: number,
): Promise<{ rate: number; machine: { busy: number; cores: number } | null; split: ThreadSplit | null; cpuUs: { own: number; workers: number } | null }> {
  const meter = startMachineCpu();
  const threads = startThreadSplit();
  const cpu0 = process.cpuUsage();
  let machine: { busy: number; cores: number } | null | undefined;
  let split: ThreadSplit | null = null;
  // (not narrowed to null after the await: it is set in the callback)
  let cpuUs = null as { own: number; workers: number } | null;
  const onProgress = (p: { consumed: number }) => {
    if (machine === undefined && p.consumed >= RECORDS) {
      machine = meter.stop();
      split = threads.stop(RECORDS);
      const own = process.cpuUsage(cpu0);
      // consumers/replay/replay-workers.ts spawns each as `mufold.js replay --internal-worker`.
      const children = workers > 1 ? childProcessesCpuSeconds("--internal-worker") : new Map<number, number>();
      if (children !== null && children.size === workers - 1) {
        const childSeconds = [...children.values()].reduce((a, b) => a + b, 0);
        cpuUs = { own: (own.user + own.system) / RECORDS, workers: (childSeconds * 1e6) / RECORDS };
      }
    }
  };
  const summary = await runReplay(settings, { verify: true, promote: false, keepShadow: false, workers, onProgress }, quietLog);
  if (summary.verified !== true || summary.mismatches !== 0 || summary.records !== RECORDS) {
    const failures = JSON.stringify(summary.verify?.failures.slice(0, 5));
    throw new Error(`replay --verify with ${workers} worker(s): verified ${summary.verified}, ${summary.mismatches} mismatches, ${summary.records} of ${RECORDS} records: ${failures}`);
  }
  return { rate: Math.round(summary.records / summary.rebuildSeconds), machine: machine ?? null, split, cpuUs };
}

/**
 * The fixed part of a replay worker process's CPU, apart: one started as consumers/replay/replay-workers.ts starts them and
 * read (/proc) once it says it is ready for its job (Node's start and mufold's modules loaded); ms, null without /proc.
 */
async function replayWorkerStartCpuMs(): Promise<number | null> {
  const child = spawn(process.execPath, [...WORKER_NODE_FLAGS, mufoldBin(), "replay", "--internal-worker"], { stdio: ["ignore", "ignore", "inherit", "ipc"], serialization: "advanced" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // (a promise settles once: the exit after the ready below rejects nothing)
  const seconds = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) => reject(new Error(`a replay worker exited before it was ready (code ${code}, signal ${signal})`)));
    child.on("message", (m: { type?: string }) => {
      if (m.type === "ready") resolve(processCpuSeconds(child.pid!));
    });
  });
  child.disconnect(); // a worker whose coordinator is gone exits
  await exited;
  return seconds === null ? null : seconds * 1000;
}

/**
 * The live fold with two worker processes at saturation (issue 35): two `mufold fold` processes, spawned as deployed
 * but without the warm-up (as foldOnce's worker), join an empty topic of 12 partitions; a fleet pause (a promote's)
 * holds them while `messages` are produced, and its release gives them the whole backlog at once. Each worker's CPU
 * (/proc utime + stime, all threads) from before the first record is produced until the group has committed every
 * record, µs per record of the topic (`pausedUs`: the part of it spent before the release: fetching, decoding and
 * holding the first batches, polling the pause), and the wall seconds from the release to caught up.
 */
async function foldTwoWorkers(messages: OutMessage[]): Promise<{ seconds: number; cpuUs: number[] | null; pausedUs: number | null }> {
  const settings = { ...testSettings(), partitions: 12 };
  const records = messages.length;
  const admin = createKafka({ brokers: settings.brokers, clientId: "bench" }).admin();
  await admin.connect();
  const redis = connectRedis(settings.redisUrl);
  const workers: ChildProcess[] = [];
  try {
    await ensureTopics(admin, [{ topic: settings.topic, partitions: 12 }, { topic: `${settings.topic}.dlq`, partitions: 12 }]);
    for (let i = 0; i < 2; i++) workers.push(spawnWorker(settings, { MUFOLD_WARM_UP_RECORDS: "0" }));
    // A worker that dies (rather than a group that never catches up) ends the step at once, with its exit.
    const died = new Promise<never>((_, reject) => {
      for (const w of workers) w.once("exit", (code, signal) => reject(new Error(`a fold worker of the two-worker fold exited (code ${code}, signal ${signal})`)));
    });
    died.catch(() => undefined);
    await Promise.race([waitForMembers(settings, 2), died]);
    const pause = await FleetPause.take(new RedisControlStore(redis, settings.prefix), settings.pauseLeaseSeconds, quietLog);
    await Promise.race([pause.awaitAcks(admin, settings.group, 60), died]);
    const cpuNow = () => workers.map((w) => processCpuSeconds(w.pid!));
    const before = cpuNow();
    await produceAll(settings, messages);
    const released = cpuNow();
    await pause.release();
    const t0 = Date.now();
    await Promise.race([waitCaughtUp(settings, 1_800_000), died]);
    const seconds = (Date.now() - t0) / 1000;
    const after = cpuNow();
    const us = (from: (number | null)[], to: (number | null)[]) => from.map((x, i) => (x === null || to[i] === null ? null : ((to[i]! - x) * 1e6) / records));
    const total = us(before, after);
    const paused = us(before, released);
    return {
      seconds,
      cpuUs: total.some((x) => x === null) ? null : (total as number[]),
      pausedUs: paused.some((x) => x === null) ? null : (paused as number[]).reduce((a, b) => a + b, 0),
    };
  } finally {
    // (`died` rejects now, caught: nothing waits on it any more)
    for (const w of workers) await stopWorker(w);
    await redis.quit();
    await admin.disconnect();
    await dropPrefix(settings);
  }
}

async function redisNetInput(redisUrl: string): Promise<number> {
  return infoNumber(await redisInfo(redisUrl, "stats"), "total_net_input_bytes");
}

/** Redis's zset-max-listpack-value; null when CONFIG GET is refused (a managed Redis). */
async function zsetListpackValue(redisUrl: string): Promise<number | null> {
  const r = new Redis(redisUrl);
  try {
    const [, value] = (await r.config("GET", "zset-max-listpack-value")) as string[];
    return value === undefined ? null : Number(value);
  } catch {
    return null;
  } finally {
    r.disconnect();
  }
}

async function redisMemory(redisUrl: string): Promise<number> {
  return infoNumber(await redisInfo(redisUrl, "memory"), "used_memory");
}

// As `mufold setup` would (once, on the benchmarks' Redis): the folds and the replay only check for the functions.
await ensureSetup(testSettings());

// Every client's first metadata request lists every topic of the cluster: a broker left with thousands of test
// topics makes each worker start and admin connect decode megabytes (part of a fold step's allocation and CPU).
result.broker_topics = await brokerTopics(testSettings());
out("topics on the broker at the start (each client's first metadata lists them all)", result.broker_topics as number, "topics");
// Redis's memory a delivery depends on it (docs/operations.md): mufold's sorted-set members are 100-200 bytes.
result.redis_zset_max_listpack_value = await zsetListpackValue(testSettings().redisUrl);
out("Redis zset-max-listpack-value", String(result.redis_zset_max_listpack_value), "bytes");

/** The fold step's records: ~500 x (RECORDS/500/50) identities, the same at every call. */
function foldWorkload(): OutMessage[] {
  return workload(RECORDS, 500, 50, 1);
}

/**
 * Produce the fold step's records, with the CPU of producing them (not of building them). They are not kept: the
 * fold runs in this process, and a deployed worker does not hold 100k records on its heap for its collector to mark
 * (raw kafkajs, its yardstick, reads in a process of its own). Steps that need them again build them again.
 */
async function produceFoldWorkload(settings: Settings): Promise<{ seconds: number; cpuUs: number }> {
  const messages = foldWorkload();
  const cpu0 = process.cpuUsage();
  const seconds = await produceAll(settings, messages);
  const cpu = process.cpuUsage(cpu0);
  return { seconds, cpuUs: cpu.user + cpu.system };
}

// The fold step's topic, for the peer step.
let foldTopic: Settings | undefined;

// 1 + 4 + 6: one topic, consumed four ways.
if (run("fold")) {
  const settings = { ...testSettings(), partitions: 12 };
  if (run("peer")) foldTopic = settings;
  const { seconds: produceSeconds, cpuUs: produceCpuUs } = await produceFoldWorkload(settings);
  const produceUs = produceCpuUs / RECORDS;
  out("produce (one producer, idempotent, acks=all, zstd)", Math.round(RECORDS / produceSeconds), "observations/s");
  out("  its CPU per record (this process: kafkajs, zstd; the records built before)", produceUs.toFixed(1), "µs");
  const { seconds: raw, ...rawCost } = await rawKafkajs(settings, RECORDS);
  const { seconds: rawFast, ...rawFastCost } = await rawKafkajs(settings, RECORDS, "fast-decoder");
  const { seconds: rawDecide, ...rawDecideCost } = await rawKafkajs(settings, RECORDS, "decide");
  const kc = kcat(settings, kcatPath);
  const memBefore = await redisMemory(settings.redisUrl);
  const netBefore = await redisNetInput(settings.redisUrl);
  const { seconds: fold, cpuUs, split, traffic, redisUs, brokerUs, consumed, deadLettered } = await foldOnce(settings);
  const netAfter = await redisNetInput(settings.redisUrl);
  const memAfter = await redisMemory(settings.redisUrl);
  const { rate: replay1, machine: machine1, split: replaySplit, cpuUs: replayCpu1 } = await verifiedReplay(settings, 1);
  const { rate: replay2, machine: machine2, cpuUs: replayCpu2 } = await verifiedReplay(settings, 2);
  const replayWorkerStartMs = await replayWorkerStartCpuMs();
  const identities = await liveIdentities(settings);
  checkDecidedAsTheFold(rawDecideCost, { consumed, deadLettered, identities: await liveIdentitySet(settings) });
  // The same records again, on a topic of their own, folded by two worker processes at saturation.
  const fold2 = await foldTwoWorkers(foldWorkload());
  // A second topic of the same shape, folded by this process after everything above: the first fold's CPU includes V8
  // compiling the engine (a fixed cost a long-running worker pays once), this one is a worker that has run a while.
  const warmSettings = { ...testSettings(), partitions: 12 };
  await produceAll(warmSettings, workload(RECORDS, 500, 50, 3));
  const warm = await foldOnce(warmSettings);
  await dropPrefix(warmSettings);
  out("raw kafkajs consumption (eachBatch, no processing)", Math.round(RECORDS / raw), "records/s");
  out(
    "  raw kafkajs: CPU per record (main / other threads), young bytes allocated / promoted per record",
    `${(rawCost.cpuUs / RECORDS).toFixed(1)} (${rawCost.split === null ? "not measured" : `${rawCost.split.mainUs.toFixed(1)} / ${rawCost.split.otherUs.toFixed(1)}`}), ${rawCost.traffic.allocatedBytes} / ${rawCost.traffic.promotedBytes}`,
    "µs, bytes",
  );
  out(
    "  the same with mufold's record decoder (as the fold reads): records/s, CPU per record, young bytes allocated / promoted",
    `${Math.round(RECORDS / rawFast)}, ${(rawFastCost.cpuUs / RECORDS).toFixed(1)}, ${rawFastCost.traffic.allocatedBytes} / ${rawFastCost.traffic.promotedBytes}`,
    "records/s, µs, bytes",
  );
  const splitCell = (s: ThreadSplit | null) => (s === null ? "not measured" : `${s.mainUs.toFixed(1)} / ${s.otherUs.toFixed(1)}`);
  out(
    "  the same, each record also decided as the fold decides, nothing kept: records/s, CPU per record (main / other threads), young bytes allocated / promoted",
    `${Math.round(RECORDS / rawDecide)}, ${(rawDecideCost.cpuUs / RECORDS).toFixed(1)} (${splitCell(rawDecideCost.split)}), ${rawDecideCost.traffic.allocatedBytes} / ${rawDecideCost.traffic.promotedBytes}`,
    "records/s, µs, bytes",
  );
  out("kcat consumption (librdkafka, to /dev/null)", Math.round(RECORDS / kc), "records/s");
  out("fold, one worker (decide + apply + DLQ + commit)", Math.round(RECORDS / fold), "records/s");
  out("fold / raw kafkajs", (raw / fold).toFixed(2), "ratio");
  out("replay, one process (into a shadow generation, verified)", replay1, "records/s");
  out("replay, --workers 2 (this process and one worker process, verified)", replay2, "records/s");
  out("replay / live fold", (replay1 / (RECORDS / fold)).toFixed(2), "ratio");
  out("replay two workers / one", (replay2 / replay1).toFixed(2), "ratio");
  out("replay / raw kafkajs consumption", (replay1 / (RECORDS / raw)).toFixed(3), "ratio");
  const cpuCell = (us: number | null) => (us === null ? "not measured (no /proc)" : us.toFixed(1));
  const replayCpuUs1 = replayCpu1 === null ? null : replayCpu1.own + replayCpu1.workers;
  const replayCpuUs2 = replayCpu2 === null ? null : replayCpu2.own + replayCpu2.workers;
  out("replay CPU per record, one process (user + system, start to last record applied)", cpuCell(replayCpuUs1), "µs");
  out(
    "replay CPU per record, --workers 2: both processes summed (this one / the replay worker, from its start)",
    replayCpu2 === null ? "not measured (no /proc)" : `${replayCpuUs2!.toFixed(1)} (${replayCpu2.own.toFixed(1)} / ${replayCpu2.workers.toFixed(1)})`,
    "µs",
  );
  const ratioCell = (a: number | null, b: number | null) => (a === null || b === null ? "not measured" : (a / b).toFixed(3));
  out("  two replay processes' CPU per record / one's (bound ≤ 1.15)", ratioCell(replayCpuUs2, replayCpuUs1), "ratio");
  out(
    "  of the replay worker's: its start to ready (Node, mufold's modules; measured apart), per record of the topic",
    replayWorkerStartMs === null ? "not measured (no /proc)" : ((replayWorkerStartMs * 1000) / RECORDS).toFixed(1),
    `µs (${replayWorkerStartMs === null ? "?" : Math.round(replayWorkerStartMs)} ms of CPU once)`,
  );
  const threadCells = (s: ThreadSplit | null) => (s === null ? "not measured (no /proc)" : `${s.mainUs.toFixed(1)} / ${s.otherUs.toFixed(1)} / ${s.gcPauseUs.toFixed(1)}`);
  out("  the one-process replay's CPU per record: its main thread / its other threads / main-thread GC pauses", threadCells(replaySplit), "µs");
  const busy = (m: { busy: number } | null) => (m === null ? "not measured" : m.busy.toFixed(2));
  out(`machine cores busy during the replay, one process / two (of ${machine1?.cores ?? "?"}; every process: replay, Redis, broker)`, `${busy(machine1)} / ${busy(machine2)}`, "cores");
  if (machine1 !== null) out("  so the most more replay processes could give here (cores / busy with one)", (machine1.cores / machine1.busy).toFixed(2), "ratio");
  out("Redis memory per delivery", Math.round((memAfter - memBefore) / RECORDS), "bytes");
  out("Redis memory per identity", Math.round((memAfter - memBefore) / identities), `bytes (${identities} identities)`);
  out("worker CPU per record (in-process fold, user + system)", Math.round(cpuUs / RECORDS), "µs");
  out("  of which its main thread / its other threads (V8's collector and compiler, libuv) / main-thread GC pauses", threadCells(split), "µs");
  const named = (us: number | null | undefined) => (us === null || us === undefined ? "not named" : us.toFixed(1));
  out("  its other threads by name: V8's platform workers (collector, compiler) / libuv's pool (zstd)", `${named(split?.v8PlatformUs)} / ${named(split?.libuvPoolUs)}`, "µs");
  out("  young generation per record: allocated / survived scavenges / of which promoted (heap-traffic.ts)", `${traffic.allocatedBytes} / ${traffic.survivedBytes} / ${traffic.promotedBytes}`, `bytes (${traffic.scavenges} scavenges, ${traffic.scavengePauseUs} µs of pauses per record; ${traffic.fullCollections} full collections)`);
  out("worker CPU per record, warm (a second topic of the same shape, folded after the steps above)", Math.round(warm.cpuUs / RECORDS), `µs (${Math.round(RECORDS / warm.seconds)} records/s)`);
  out("  of which its main thread / its other threads / main-thread GC pauses", threadCells(warm.split), "µs");
  const fold2Us = fold2.cpuUs === null ? null : fold2.cpuUs.reduce((a, b) => a + b, 0);
  out(
    "fold, two worker processes at saturation: CPU per record, both summed (each)",
    fold2.cpuUs === null ? "not measured (no /proc)" : `${fold2Us!.toFixed(1)} (${fold2.cpuUs.map((x) => x.toFixed(1)).join(" + ")})`,
    `µs (${Math.round(RECORDS / fold2.seconds)} records/s from the release; ${fold2.pausedUs === null ? "?" : fold2.pausedUs.toFixed(1)} µs of it before the release)`,
  );
  out("  two workers' CPU per record / the one in-process worker's (bound ≤ 1.15)", ratioCell(fold2Us, cpuUs / RECORDS), "ratio");
  out("Redis CPU per record during the fold / the broker's", `${redisUs.toFixed(1)} / ${brokerUs === null ? "not measured" : brokerUs.toFixed(1)}`, "µs");
  out("Redis input bytes per delivery (total_net_input_bytes, whole server)", Math.round((netAfter - netBefore) / RECORDS), "bytes");
  Object.assign(result, {
    produce_records_per_s: Math.round(RECORDS / produceSeconds),
    produce_cpu_us_per_record: round(produceUs, 1),
    fold_records_per_s: Math.round(RECORDS / fold),
    raw_kafkajs_records_per_s: Math.round(RECORDS / raw),
    kcat_records_per_s: Math.round(RECORDS / kc),
    raw_kafkajs_cpu_us_per_record: round(rawCost.cpuUs / RECORDS, 1),
    raw_kafkajs_main_thread_us_per_record: rawCost.split === null ? null : round(rawCost.split.mainUs, 1),
    raw_kafkajs_young_allocated_bytes_per_record: rawCost.traffic.allocatedBytes,
    raw_kafkajs_promoted_bytes_per_record: rawCost.traffic.promotedBytes,
    raw_mufold_decoder_records_per_s: Math.round(RECORDS / rawFast),
    raw_mufold_decoder_cpu_us_per_record: round(rawFastCost.cpuUs / RECORDS, 1),
    raw_mufold_decoder_young_allocated_bytes_per_record: rawFastCost.traffic.allocatedBytes,
    raw_decide_records_per_s: Math.round(RECORDS / rawDecide),
    raw_decide_cpu_us_per_record: round(rawDecideCost.cpuUs / RECORDS, 1),
    raw_decide_main_thread_us_per_record: rawDecideCost.split === null ? null : round(rawDecideCost.split.mainUs, 1),
    raw_decide_other_threads_us_per_record: rawDecideCost.split === null ? null : round(rawDecideCost.split.otherUs, 1),
    raw_decide_young_allocated_bytes_per_record: rawDecideCost.traffic.allocatedBytes,
    raw_decide_promoted_bytes_per_record: rawDecideCost.traffic.promotedBytes,
    fold_over_raw: round(raw / fold, 3),
    worker_cpu_us_per_record: Math.round(cpuUs / RECORDS),
    worker_cpu_cores_during_fold: round(cpuUs / 1e6 / fold),
    worker_main_thread_us_per_record: split === null ? null : round(split.mainUs, 1),
    worker_other_threads_us_per_record: split === null ? null : round(split.otherUs, 1),
    worker_v8_platform_threads_us_per_record: split?.v8PlatformUs == null ? null : round(split.v8PlatformUs, 1),
    worker_libuv_pool_threads_us_per_record: split?.libuvPoolUs == null ? null : round(split.libuvPoolUs, 1),
    worker_gc_pause_us_per_record: split === null ? null : round(split.gcPauseUs, 1),
    worker_young_allocated_bytes_per_record: traffic.allocatedBytes,
    worker_scavenge_survived_bytes_per_record: traffic.survivedBytes,
    worker_promoted_bytes_per_record: traffic.promotedBytes,
    worker_scavenges: traffic.scavenges,
    worker_full_collections: traffic.fullCollections,
    fold_records_per_s_warm: Math.round(RECORDS / warm.seconds),
    worker_cpu_us_per_record_warm: Math.round(warm.cpuUs / RECORDS),
    worker_main_thread_us_per_record_warm: warm.split === null ? null : round(warm.split.mainUs, 1),
    worker_other_threads_us_per_record_warm: warm.split === null ? null : round(warm.split.otherUs, 1),
    redis_cpu_us_per_record_during_fold: round(redisUs, 1),
    broker_cpu_us_per_record_during_fold: brokerUs === null ? null : round(brokerUs, 1),
    fold_2_workers_cpu_us_per_record: fold2Us === null ? null : round(fold2Us, 1),
    fold_2_workers_cpu_us_per_record_by_worker: fold2.cpuUs?.map((x) => round(x, 1)) ?? null,
    fold_2_workers_paused_cpu_us_per_record: fold2.pausedUs === null ? null : round(fold2.pausedUs, 1),
    fold_2_workers_records_per_s: Math.round(RECORDS / fold2.seconds),
    fold_2_workers_cpu_over_1: fold2Us === null ? null : round(fold2Us / (cpuUs / RECORDS), 3),
    replay_records_per_s: replay1,
    replay_over_live: round(replay1 / (RECORDS / fold), 3),
    replay_over_raw: round(replay1 / (RECORDS / raw), 3),
    replay_cpu_us_per_record: replayCpuUs1 === null ? null : round(replayCpuUs1, 1),
    replay_2_workers_cpu_us_per_record: replayCpuUs2 === null ? null : round(replayCpuUs2, 1),
    replay_2_workers_coordinator_cpu_us_per_record: replayCpu2 === null ? null : round(replayCpu2.own, 1),
    replay_2_workers_worker_cpu_us_per_record: replayCpu2 === null ? null : round(replayCpu2.workers, 1),
    replay_worker_start_cpu_ms: replayWorkerStartMs === null ? null : Math.round(replayWorkerStartMs),
    replay_2_workers_cpu_over_1: replayCpuUs1 === null || replayCpuUs2 === null ? null : round(replayCpuUs2 / replayCpuUs1, 3),
    replay_2_workers_records_per_s: replay2,
    replay_2_workers_over_1: round(replay2 / replay1, 3),
    replay_2_workers_over_live: round(replay2 / (RECORDS / fold), 3),
    machine_cores: machine1?.cores ?? null,
    replay_machine_cores_busy: machine1 === null ? null : round(machine1.busy),
    replay_main_thread_us_per_record: replaySplit === null ? null : round(replaySplit.mainUs, 1),
    replay_other_threads_us_per_record: replaySplit === null ? null : round(replaySplit.otherUs, 1),
    replay_2_workers_machine_cores_busy: machine2 === null ? null : round(machine2.busy),
    replay_2_workers_ceiling: machine1 === null ? null : round(machine1.cores / machine1.busy),
    redis_bytes_per_delivery: Math.round((memAfter - memBefore) / RECORDS),
    redis_bytes_per_identity: Math.round((memAfter - memBefore) / identities),
    redis_identities: identities,
    redis_net_input_bytes_per_delivery: Math.round((netAfter - netBefore) / RECORDS),
  });
  await dropPrefix(settings);
}

// 9: the fold against a naive Python peer, on the same records (the header says how the two are timed).
if (run("peer")) {
  const n = Math.min(Number(values["peer-records"]), RECORDS);
  let topic: Settings;
  if (foldTopic !== undefined && n === RECORDS) {
    topic = foldTopic;
  } else {
    // The fold step's first n records (the same workload and seed), alone on a topic of the same shape.
    topic = { ...testSettings(), partitions: 12 };
    await produceAll(topic, foldWorkload().slice(0, n));
  }
  foldTopic = undefined;
  // The fold twice, each with a fresh group and prefix; the second is measured (the first warms V8 up).
  let mufold: { seconds: number; identities: number } | undefined;
  for (let round = 0; round < 2; round++) {
    const fresh = testSettings();
    const settings = { ...topic, group: fresh.group, prefix: fresh.prefix };
    mufold = await foldUntilApplied(settings, n);
    await dropPrefix(settings);
  }
  const peer = await runNaivePeer({
    brokers: topic.brokers.join(","),
    topic: topic.topic,
    redisUrl: topic.redisUrl,
    prefix: testSettings().prefix,
    reducerVersion: topic.reducerVersion,
    records: n,
    timeoutSeconds: 3600,
  });
  const mufoldRate = n / mufold!.seconds;
  out(`fold, one in-process worker, the same ${n} records (start to the last record applied, second of two)`, Math.round(mufoldRate), `records/s (${mufold!.identities} identities)`);
  out(`naive Python peer (loopx re-reducing each touched identity per batch; subscribe to its last Redis write)`, Math.round(peer.recordsPerSecond), `records/s (${peer.records} records, ${peer.identities} identities, ${peer.skipped} skipped, ${peer.seconds.toFixed(1)} s)`);
  out("fold / naive peer", (mufoldRate / peer.recordsPerSecond).toFixed(1), "ratio");
  if (peer.records !== n || peer.identities !== mufold!.identities) {
    throw new Error(`the peer folded ${peer.records} records into ${peer.identities} identities, the fold ${n} into ${mufold!.identities}: not the same work`);
  }
  Object.assign(result, {
    mufold_over_naive_loopx_fold: round(mufoldRate / peer.recordsPerSecond, 2),
    peer_records: n,
    peer_mufold_records_per_s: Math.round(mufoldRate),
    peer_naive_records_per_s: round(peer.recordsPerSecond, 1),
    peer_naive_seconds: round(peer.seconds, 2),
    peer_identities: peer.identities,
    peer_naive_skipped: peer.skipped,
  });
}

// 2: end to end, two worker processes, producing at full speed while they fold.
if (run("e2e")) {
  const settings = { ...testSettings(), partitions: 12 };
  const messages = workload(RECORDS, 500, 50, 2);
  const admin = createKafka({ brokers: settings.brokers, clientId: "bench" }).admin();
  await admin.connect();
  await ensureTopics(admin, [{ topic: settings.topic, partitions: 12 }, { topic: `${settings.topic}.dlq`, partitions: 12 }]);
  await admin.disconnect();
  const workers = [spawnWorker(settings), spawnWorker(settings)];
  await waitForMembers(settings, 2);
  const t0 = Date.now();
  await produceAll(settings, messages);
  await waitCaughtUp(settings, 1_800_000);
  const seconds = (Date.now() - t0) / 1000;
  for (const w of workers) await stopWorker(w);
  out("end to end (produce -> visible in Redis), two workers", Math.round(RECORDS / seconds), "observations/s");
  result.e2e_obs_per_s = Math.round(RECORDS / seconds);
  await dropPrefix(settings);
}

// 3: latency at a fixed offered load: send time -> the record is readable (the live generation's mark in Redis is past
// it; bench/latency-run.ts).
const LATENCY_PERCENTILES = [50, 75, 90, 95, 99, 99.9];
const latencyPercentiles: Record<string, Record<string, number>> = {};
result.latency_percentiles_ms_by_rate = latencyPercentiles;
if (run("latency")) {
  // A broker just started (the bench's runs begin on a freshly reset one) compiles its request paths for the first
  // ~20-30 s of this traffic: three 10 s passes at 5,000/s right after a reset gave p99 373, 320, 150 ms. The
  // earlier steps' bulk traffic does not warm them. So the broker first gets the same traffic, unmeasured, on a topic
  // of its own with workers of its own; the measured workers below still start cold.
  const rates = String(values["latency-rate"]).split(",").map(Number);
  const warmUpSeconds = Number(values["broker-warm-up-seconds"]);
  if (warmUpSeconds > 0) {
    const pass = await measureLatency(Math.max(...rates), warmUpSeconds);
    out(`  the broker's warm-up pass (not a key): ${Math.max(...rates)}/s for ${warmUpSeconds} s, p99`, percentile(pass.latencies, 99), "ms");
    result.latency_broker_warm_up_p99_ms = percentile(pass.latencies, 99);
  }
  for (const rate of rates) {
    const seconds = Number(values["latency-seconds"]);
    const measured = await measureLatency(rate, seconds);
    const latencies = measured.latencies;
    const pct = (p: number) => percentile(latencies, p);
    const warmP99 = measured.warm.length === 0 ? null : percentile(measured.warm, 99);
    out(`produce-to-readback latency at ${rate}/s, p50`, pct(50), "ms");
    out(`produce-to-readback latency at ${rate}/s, p99`, pct(99), "ms");
    result[`latency_p50_ms_at_${rate}`] = pct(50);
    result[`latency_p99_ms_at_${rate}`] = pct(99);
    // Not an issue key: the same run without the records sent in its first 2 s (how much of the tail is the start).
    out(`produce-to-readback latency at ${rate}/s, p99 of records sent after the first ${LATENCY_WARMUP_MS / 1000} s`, warmP99 ?? "none", "ms");
    result[`latency_p99_ms_at_${rate}_after_2s`] = warmP99;
    out(`  at ${rate}/s, by second of sending: median / longest latency of its ticks`, measured.bySecond.map((l) => `${l.p50}/${l.max}`).join(" "), "ms");
    result[`latency_by_second_ms_at_${rate}`] = measured.bySecond;
    // The distribution behind the two keys above (bench/render-charts.ts draws it): nearest-rank percentiles and the max.
    latencyPercentiles[String(rate)] = { ...Object.fromEntries(LATENCY_PERCENTILES.map((p) => [`p${p}`, pct(p)])), max: latencies.at(-1)! };
    result.latency_seconds = seconds;
  }
}

// 5: worker memory vs identities, cache size fixed. RSS read once the group has caught up (and its peak, sampled
// every second); a worker that dies first (out of memory) gives null, not a number.
const rssByIdentities: Record<string, number | null> = {};
const rssPeakByIdentities: Record<string, number | null> = {};
// The mean of the once-a-second samples from the worker's spawn to caught up, beside the single reading after
// catching up, which varies more between runs (null below MIN_MEAN_SAMPLES: a fold that short is mostly the start).
const MIN_MEAN_SAMPLES = 5;
const rssMeanByIdentities: Record<string, number | null> = {};
const heapByIdentities: Record<string, HeapSplit | null> = {};
const rssOf = (pid: number): number => Number(execFileSync("ps", ["-o", "rss=", "-p", String(pid)]).toString().trim()) * 1024;
const mib = (bytes: number) => Math.round(bytes / 1024 / 1024);

/** Produce n one-observation identities (workload(n, n, 1, seed)'s records), a chunk at a time: a million do not fit at once. */
async function produceIdentities(settings: Settings, n: number, seed: number): Promise<number> {
  const t0 = Date.now();
  const sender = await openSender(settings);
  let chunk: OutMessage[] = [];
  let produced = 0;
  for (const d of simulate({ agents: n, observationsPerAgent: 1, snapshotEvery: 1, duplicateRate: 0.1, conflictRate: 0.01, seed })) {
    if (produced + chunk.length >= n) break;
    chunk.push(observationRecord(d.observation));
    if (chunk.length === 20_000) {
      await sender.send(chunk);
      produced += chunk.length;
      chunk = [];
    }
  }
  if (chunk.length > 0) await sender.send(chunk);
  await sender.close();
  return (Date.now() - t0) / 1000;
}

/**
 * One spawned worker (`maxOldSpaceMb`, `cacheSize`) folding n one-observation identities: its RSS once the group has
 * caught up (null when it exited first: `outcome` says how), its peak and mean over the once-a-second samples, and the
 * seconds to produce and to fold.
 */
async function memoryPoint(
  n: number,
  cacheSize: string,
  maxOldSpaceMb: number,
): Promise<{ rss: number | null; peak: number; mean: number | null; samples: number; outcome: string; produceSeconds: number; foldSeconds: number; heap: HeapSplit | null }> {
  const settings = { ...testSettings(), partitions: 12 };
  const produceSeconds = await produceIdentities(settings, n, 5);
  const t0 = Date.now();
  const port = await freePort();
  const child = spawnWorker(settings, {
    MUFOLD_CACHE_SIZE: cacheSize,
    MUFOLD_HTTP_PORT: String(port),
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --max-old-space-size=${maxOldSpaceMb}`.trim(),
  });
  let peak = 0;
  let sum = 0;
  let samples = 0;
  const sampler = setInterval(() => {
    try {
      const rss = rssOf(child.pid!);
      peak = Math.max(peak, rss);
      if (rss > 0) {
        // (ps gives 0 for a process between its exit and its reaping)
        sum += rss;
        samples++;
      }
    } catch {
      // gone
    }
  }, 1000);
  const exited = new Promise<string>((resolve) => child.once("exit", (code, signal) => resolve(`exited (code ${code}, signal ${signal})`)));
  const outcome = await Promise.race([waitCaughtUp(settings, 1_800_000).then(() => "caught up"), exited]);
  clearInterval(sampler);
  const foldSeconds = (Date.now() - t0) / 1000;
  let rss: number | null = null;
  let heap: HeapSplit | null = null;
  if (outcome === "caught up") {
    heap = await heapSplit(port, child.pid!);
    rss = rssOf(child.pid!);
    peak = Math.max(peak, rss);
    await stopWorker(child);
  }
  await dropPrefix(settings);
  return { rss, peak, mean: samples < MIN_MEAN_SAMPLES ? null : sum / samples, samples, outcome, produceSeconds, foldSeconds, heap };
}

/** Where a worker's RSS is, as its own /metrics says (prom-client's default metrics; MiB): null when it did not answer. */
interface HeapSplit {
  heapTotal: number;
  heapUsed: number;
  external: number;
  cacheEstimate: number;
  /** Resident in V8's pages (v8-pages.ts: those its spaces count and those it keeps pooled); null off Linux. */
  v8PagesResident: number | null;
}

async function heapSplit(port: number, pid: number): Promise<HeapSplit | null> {
  const pages = v8PagesResidentBytes(pid);
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const metric = (name: string): number => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)?.[1] ?? NaN);
    return {
      heapTotal: mib(metric("nodejs_heap_size_total_bytes")),
      heapUsed: mib(metric("nodejs_heap_size_used_bytes")),
      external: mib(metric("nodejs_external_memory_bytes")),
      cacheEstimate: mib(metric("mufold_identity_cache_bytes")),
      v8PagesResident: pages === null ? null : mib(pages),
    };
  } catch {
    return null;
  }
}

for (const n of run("memory") ? String(values["memory-identities"]).split(",").map(Number) : []) {
  // Every point with a 384 MB old space: the issue's bound for a worker folding 300k identities (one that runs out
  // of memory exits before catching up, and its point is null).
  const p = await memoryPoint(n, String(values["cache-size"]), 384);
  if (p.rss !== null) {
    out(`worker RSS after folding ${n} identities (cache ${values["cache-size"]}); peak`, `${mib(p.rss)}; ${mib(p.peak)}`, "MiB");
  } else {
    out(`worker RSS after folding ${n} identities (cache ${values["cache-size"]})`, `worker ${p.outcome} before catching up; peak ${mib(p.peak)}`, "MiB");
  }
  if (p.heap !== null) {
    out(
      `worker heap after folding ${n} identities: total; used; external; the cache's estimate; resident in V8's pages`,
      `${p.heap.heapTotal}; ${p.heap.heapUsed}; ${p.heap.external}; ${p.heap.cacheEstimate}; ${p.heap.v8PagesResident ?? "not measured"}`,
      "MiB",
    );
  }
  heapByIdentities[String(n)] = p.heap;
  rssByIdentities[String(n)] = p.rss === null ? null : mib(p.rss);
  rssPeakByIdentities[String(n)] = mib(p.peak);
  rssMeanByIdentities[String(n)] = p.mean === null ? null : mib(p.mean);
  out(`worker RSS from spawn to caught up, ${n} identities: mean of ${p.samples} samples (one a second)`, rssMeanByIdentities[String(n)] ?? `none (fewer than ${MIN_MEAN_SAMPLES})`, "MiB");
}
result.rss_mib_by_identities = rssByIdentities;
result.rss_peak_mib_by_identities = rssPeakByIdentities;
result.rss_mean_mib_by_identities = rssMeanByIdentities;
result.heap_mib_by_identities = heapByIdentities;
result.rss_cache_size = Number(values["cache-size"]);
result.rss_max_old_space_mb = 384;
// Null when the point was not run (e.g. 300k identities is too long for one run here).
result.rss_mib_at_10k_identities = rssByIdentities["10000"] ?? null;
result.rss_mib_at_300k_identities = rssByIdentities["300000"] ?? null;

// 5, --million (issue 35): a million identities in a worker of 256 MB of old space, the cache at its default.
if (run("memory") && values.million) {
  const cacheSize = SETTINGS.cacheSize.default;
  const p = await memoryPoint(1_000_000, cacheSize, 256);
  const how = `${Math.round(p.produceSeconds)} s to produce, ${Math.round(p.foldSeconds)} s to fold`;
  out(
    `worker RSS after folding 1,000,000 identities (--max-old-space-size=256, cache ${cacheSize}); peak`,
    p.rss === null ? `worker ${p.outcome} before catching up; peak ${mib(p.peak)}` : `${mib(p.rss)}; ${mib(p.peak)}`,
    `MiB (${how})`,
  );
  Object.assign(result, {
    rss_mib_at_1m_identities: p.rss === null ? null : mib(p.rss),
    rss_1m_worker_survived: p.rss !== null,
    rss_1m_worker_outcome: p.outcome,
    rss_peak_mib_at_1m_identities: mib(p.peak),
    rss_mean_mib_at_1m_identities: p.mean === null ? null : mib(p.mean),
    rss_1m_max_old_space_mb: 256,
    rss_1m_cache_size: Number(cacheSize),
    rss_1m_produce_seconds: Math.round(p.produceSeconds),
    rss_1m_fold_seconds: Math.round(p.foldSeconds),
  });
}

// 7: IdentityModel.plan for one new delivery, pure and in process.
if (run("plan")) {
  const samples = Number(values["plan-samples"]);
  const rounds = Number(values["plan-rounds"]);
  for (const r of measurePlans([10, 1000], samples, rounds)) {
    out(`IdentityModel.plan, one new delivery on an identity holding ${r.held} (median of ${r.samples}, in ${rounds} rounds side by side)`, r.medianUs.toFixed(1), "µs");
    result[`plan_us_per_delivery_n${r.held}`] = round(r.medianUs, 1);
    result[`plan_us_p90_n${r.held}`] = round(r.p90Us, 1);
  }
  result.plan_rounds = rounds;
}

// 8: core vs the Python reference: bench/core.bench.ts in its own process, its ratios parsed from its table.
if (run("core")) {
  const repeat = String(values["core-repeat"]);
  const table = execFileSync("npx", ["tsx", "bench/core.bench.ts", "--repeat", repeat], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 24 });
  const ratio = (deliveries: string) => {
    const line = table.split("\n").find((l) => l.startsWith(`| one identity, ${deliveries} deliveries`));
    const m = line === undefined ? null : /\| ([\d.]+)x \|$/.exec(line.trim());
    return m === null ? null : Number(m[1]);
  };
  result.core_over_reference_300 = ratio("300");
  result.core_over_reference_1000 = ratio("1,000");
  result.core_repeat = Number(repeat);
  out("core / reference, one identity of 300 deliveries", String(result.core_over_reference_300), "ratio");
  out("core / reference, one identity of 1,000 deliveries", String(result.core_over_reference_1000), "ratio");
}
result.seconds_total = Math.round((Date.now() - startedAt) / 1000);
if (values.json !== undefined) {
  writeFileSync(values.json, JSON.stringify(result, null, 2) + "\n");
  // The pictures of docs/benchmarks.md, next to the JSON they are drawn from.
  for (const path of writeBenchmarkCharts(result, dirname(values.json))) process.stderr.write(`wrote ${path}\n`);
}

console.log("| measurement | value | unit |");
console.log("|---|---|---|");
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
// A worker that died leaves waitCaughtUp polling until its timeout: do not wait for it.
process.exit(0);
