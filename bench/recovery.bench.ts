/**
 * Recovery: a Redis that goes back in time (or loses everything) and the fold
 * heals it by itself from the per-partition marks. Each scenario folds a log,
 * makes the fault, and is timed from the fault (or the fold's restart) until
 * every packet equals the reducer over the topic's records, every mark stands
 * at the log's end and the worker says `folding`; it counts the records the
 * fold took meanwhile (FoldWorker.counters.consumed).
 *
 *   restore-running, restore-restart   a snapshot of the prefix (redis-snapshot.ts) restored, with no mark for a
 *                                      partition folded after it; the fold running / stopped and restarted
 *   rdb-mid-stream, rdb-idle           a private Redis restored from an RDB (SAVE) while the fold folds the tail / is idle
 *   replica-promoted                   a replica cut off from its primary before the tail, promoted; the fold restarted
 *                                      with the replica's URL
 *   reset-earliest, reset-latest       the tail produced while the fold is stopped, the group's offsets reset to the
 *                                      log start / end (resolved, as kafka-consumer-groups does), the fold restarted
 *   emptied-cache5, emptied-default    a private Redis emptied (FLUSHALL) a third into folding the log, a batch in flight
 *                                      (16 KiB partition fetches: batches of a few hundred records); cache 5 / 10,000
 *   new-redis                          the fold's Redis replaced by a brand-new empty one; timed from `mufold setup`
 *                                      (ensureSetup) on it
 *
 * `tail records`: what the fold must fold for the packets to be exact, read right after the fault (or before the
 * restart): the log's end minus Redis's marks, summed over the partitions. `records refolded`: the records the
 * fold took from the fault until exact (a restarted fold: all it took). `noticed`: the first poll (every 25 ms)
 * at which the worker was not `folding` (behind_log, rebuilding or waiting_for_setup).
 *
 *   npx tsx bench/recovery.bench.ts [--tail 10000] [--base 2000] [--scenarios restore-running,...]
 *       [--timeout-seconds 120] [--json FILE]
 *
 * The fold runs in this process (FoldWorker.start, under the mufold V8 flags) on the topic's 4 partitions;
 * MUFOLD_POSITION_CHECK_MS and MUFOLD_LOG_LEVEL are read from the environment as the fold reads them.
 * Needs KAFKA_BROKERS / REDIS_URL (defaults 127.0.0.1) and redis-server on PATH (the private Redis servers).
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { FoldWorker } from "../consumers/fold/fold-worker.js";
import { observationRecord } from "../src/client/producer.js";
import { produce } from "../producers/produce.js";
import { simulate } from "../producers/simulation.js";
import { createKafka } from "../src/adapters/kafka/client.js";
import { partitionOffsets } from "../src/adapters/kafka/topics.js";
import { ensureSetup } from "../src/adapters/redis/functions.js";
import { RedisControlStore } from "../src/adapters/redis/control-store.js";
import type { Settings } from "../src/config/settings.js";
import type { Observation } from "../src/core/index.js";
import { dlqTopic } from "../src/fold/dead-letter.js";
import { freePort } from "../test/support/free-port.js";
import { comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, sleep, testSettings, waitCaughtUp } from "../test/support/pipeline.js";
import { PrivateRedis } from "../test/support/private-redis.js";
import { restorePrefix, snapshotPrefix } from "../test/support/redis-snapshot.js";
import { until } from "../test/support/wait.js";
import { nodeFlagsInEffect, runUnderMufoldFlags } from "./mufold-flags.js";

// The fold runs in this process: under the V8 flags every `mufold` process has.
await runUnderMufoldFlags();

const SCENARIOS = [
  "restore-running",
  "restore-restart",
  "rdb-mid-stream",
  "rdb-idle",
  "replica-promoted",
  "reset-earliest",
  "reset-latest",
  "emptied-cache5",
  "emptied-default",
  "new-redis",
] as const;
type Scenario = (typeof SCENARIOS)[number];

const { values } = parseArgs({
  options: {
    tail: { type: "string", default: "10000" },
    base: { type: "string", default: "2000" },
    scenarios: { type: "string", default: SCENARIOS.join(",") },
    "timeout-seconds": { type: "string", default: "120" },
    json: { type: "string" },
  },
});
const TAIL = Number(values.tail);
const BASE = Number(values.base);
const TIMEOUT_S = Number(values["timeout-seconds"]);
for (const [flag, n] of [["--tail", TAIL], ["--base", BASE], ["--timeout-seconds", TIMEOUT_S]] as const) {
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a positive integer`);
}
const chosen = String(values.scenarios).split(",").map((s) => s.trim()) as Scenario[];
for (const s of chosen) if (!SCENARIOS.includes(s)) throw new Error(`--scenarios: unknown scenario ${s} (the scenarios: ${SCENARIOS.join(",")})`);

const PARTITIONS = 4;
const POLL_MS = 25;

interface Outcome {
  seconds_to_exact: number | null;
  records_refolded: number | null;
  tail_records: number | null;
  seconds_to_notice: number | null;
  note: string;
  /** new-redis: from the replacement until the fold said waiting_for_setup. */
  seconds_to_waiting_for_setup?: number;
  error?: string;
}

// ---------------------------------------------------------------------------------------------------------------
// The workload: observations of 100 agents (one scope each: 100 record keys), each record sent to the partition
// its key's md5 picks, so a base can leave a partition empty while the per-key order stays the log's.

function observations(records: number, seed: number): Observation[] {
  const agents = 100;
  return [...simulate({ agents, observationsPerAgent: Math.ceil(records / agents), snapshotEvery: 50, duplicateRate: 0.1, conflictRate: 0.01, seed })]
    .slice(0, records)
    .map((d) => d.observation);
}

const keyOf = (o: Observation) => String(observationRecord(o).key);
const partitionOf = (key: string) => createHash("md5").update(key).digest()[0]! % PARTITIONS;

function messages(obs: readonly Observation[]) {
  return obs.map((o) => {
    const m = observationRecord(o);
    return { ...m, partition: partitionOf(String(m.key)) };
  });
}

/** `base` records, then the tail (the rest of `base + tail`); with `emptyPartition`, no base record on that partition. */
function split(seed: number, emptyPartition?: number): { base: Observation[]; tail: Observation[] } {
  const all = observations(BASE + TAIL + (emptyPartition === undefined ? 0 : BASE), seed);
  const base: Observation[] = [];
  const rest: Observation[] = [];
  for (const o of all) {
    if (base.length < BASE && (emptyPartition === undefined || partitionOf(keyOf(o)) !== emptyPartition)) base.push(o);
    else rest.push(o);
  }
  return { base, tail: rest.slice(0, TAIL) };
}

// ---------------------------------------------------------------------------------------------------------------
// Kafka and Redis, read from outside the fold.

function admin(settings: Settings) {
  return createKafka({ brokers: settings.brokers, clientId: "mufold-bench-recovery" }).admin();
}

async function logEnds(settings: Settings): Promise<Map<number, bigint>> {
  const a = admin(settings);
  await a.connect();
  try {
    return new Map((await partitionOffsets(a, settings.topic)).map((p) => [p.partition, p.high]));
  } finally {
    await a.disconnect();
  }
}

/** The live generation's marks (partition → next offset); none when Redis has no generation. */
async function marksOf(redis: Redis, settings: Settings): Promise<Map<number, bigint>> {
  const store = new RedisControlStore(redis, settings.prefix);
  const generation = await store.liveGeneration();
  const out = new Map<number, bigint>();
  if (generation === null) return out;
  for (const [field, value] of await store.generationFields(generation, "mark")) {
    const colon = field.lastIndexOf(":");
    if (field.slice(0, colon) === settings.topic) out.set(Number(field.slice(colon + 1)), BigInt(value));
  }
  return out;
}

/** Records between the marks and the log's end, summed over the partitions. */
function behind(marks: ReadonlyMap<number, bigint>, ends: ReadonlyMap<number, bigint>): number {
  let n = 0n;
  for (const [p, end] of ends) if (end > (marks.get(p) ?? 0n)) n += end - (marks.get(p) ?? 0n);
  return Number(n);
}

/** Wait until the fold has sealed every record in the log (its marks at the log's end). */
async function untilFolded(what: string, redis: Redis, settings: Settings): Promise<void> {
  const ends = await logEnds(settings);
  await until(what, async () => behind(await marksOf(redis, settings).catch(() => new Map<number, bigint>()), ends) === 0, TIMEOUT_S * 1000, POLL_MS);
}

/** Move the stopped group's committed offsets to the log start or end, resolved to numbers (kafka-consumer-groups --reset-offsets). */
async function resetOffsets(settings: Settings, to: "earliest" | "latest"): Promise<void> {
  const a = admin(settings);
  await a.connect();
  try {
    const offsets = await partitionOffsets(a, settings.topic);
    await a.setOffsets({ groupId: settings.group, topic: settings.topic, partitions: offsets.map((o) => ({ partition: o.partition, offset: String(to === "earliest" ? o.low : o.high) })) });
  } finally {
    await a.disconnect();
  }
}

async function dropTopics(settings: Settings): Promise<void> {
  const a = admin(settings);
  await a.connect();
  try {
    await a.deleteGroups([settings.group]).catch(() => undefined);
    await a.deleteTopics({ topics: [settings.topic, dlqTopic(settings.topic)], timeout: 30_000 }).catch(() => undefined);
  } finally {
    await a.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The measurement.

/** What exact means for a scenario: these packets, every mark at these ends (known once the log is whole). */
interface Target {
  expected: Map<string, string>;
  ends: Map<number, bigint> | Promise<Map<number, bigint>>;
}

/**
 * Poll from `t0` until exact: the worker `folding`, every mark at the log's end, every packet the reducer's.
 * `worker` may still be starting (a restart timed from its start); `consumed0` is its count at `t0`.
 */
async function untilExact(
  name: string,
  worker: FoldWorker | Promise<FoldWorker>,
  redis: Redis,
  settings: Settings,
  target: Target,
  t0: number,
  consumed0 = 0,
): Promise<Pick<Outcome, "seconds_to_exact" | "records_refolded" | "seconds_to_notice">> {
  let w = worker instanceof FoldWorker ? worker : undefined;
  let failed: unknown;
  if (w === undefined) (worker as Promise<FoldWorker>).then((x) => (w = x), (error: unknown) => (failed = error));
  let ends = target.ends instanceof Map ? target.ends : undefined;
  if (ends === undefined) void (target.ends as Promise<Map<number, bigint>>).then((e) => (ends = e));
  let noticed: number | null = null;
  let last = "";
  for (;;) {
    const at = (performance.now() - t0) / 1000;
    if (failed !== undefined) throw failed;
    const state = w?.state;
    if (w === undefined) {
      last = "the fold starting";
    } else if (state !== "folding") {
      noticed ??= at;
      last = `state ${state}, healing ${JSON.stringify(w.healing(), (_, v: unknown) => (typeof v === "bigint" ? Number(v) : v))}`;
    } else if (ends === undefined) {
      last = "state folding, the log still being produced";
    } else {
      const left = behind(await marksOf(redis, settings).catch(() => new Map<number, bigint>()), ends);
      if (left > 0) {
        last = `state folding, the marks ${left} records short of the log's end`;
      } else {
        const diff = comparePackets(await readAllPackets(settings).catch(() => new Map<string, string>()), target.expected);
        if (diff.missing.length + diff.extra.length + diff.different.length === 0) {
          return { seconds_to_exact: round(at), records_refolded: w.counters.consumed - consumed0, seconds_to_notice: noticed === null ? null : round(noticed) };
        }
        last = `state folding, marks at the end, packets differ: ${diff.missing.length} missing, ${diff.extra.length} extra, ${diff.different.length} different`;
      }
    }
    if (at > TIMEOUT_S) throw new Error(`${name}: not exact ${TIMEOUT_S} s after the fault (${w === undefined ? "not started" : `consumed ${w.counters.consumed - consumed0} since`}): ${last}`);
    await sleep(POLL_MS);
  }
}

const round = (x: number, digits = 2) => Number(x.toFixed(digits));

/** What one scenario leaves to clean up, newest last. */
type Cleanups = (() => Promise<unknown>)[];

async function startFold(settings: Settings, cleanups: Cleanups): Promise<FoldWorker> {
  const worker = await FoldWorker.start(settings, quietLog);
  cleanups.push(() => worker.stop());
  return worker;
}

function redisClient(url: string, cleanups: Cleanups): Redis {
  const redis = new Redis(url);
  redis.on("error", () => undefined); // refused while a private server restarts: the commands retry
  cleanups.push(async () => redis.disconnect());
  return redis;
}

async function privateRedis(cleanups: Cleanups, args: string[] = []): Promise<PrivateRedis> {
  const server = await PrivateRedis.start(args);
  cleanups.push(() => server.remove());
  return server;
}

/** Settings of a scenario: its own topic, group and prefix; on `redisUrl` (a private server) or the shared Redis. */
async function scenarioSettings(cleanups: Cleanups, overrides: Partial<Settings> = {}): Promise<Settings> {
  const settings = testSettings({ partitions: PARTITIONS, ...overrides });
  cleanups.push(() => dropTopics(settings));
  if (overrides.redisUrl === undefined) cleanups.push(() => dropPrefix(settings));
  else await ensureSetup(settings); // a private Redis: `mufold setup`'s function libraries
  return settings;
}

// ---------------------------------------------------------------------------------------------------------------
// The scenarios.

async function restoreNoMark(restart: boolean, cleanups: Cleanups): Promise<Outcome> {
  const name = restart ? "restore-restart" : "restore-running";
  const settings = await scenarioSettings(cleanups);
  const redis = redisClient(settings.redisUrl, cleanups);
  const empty = PARTITIONS - 1;
  const { base, tail } = split(1, empty);
  await produce(settings, messages(base));
  const worker = await startFold(settings, cleanups);
  await untilFolded("the base folded", redis, settings);
  if ((await marksOf(redis, settings)).has(empty)) throw new Error(`${name}: partition ${empty} has a mark before the tail`);
  const snapshot = await snapshotPrefix(redis, settings.prefix);
  await produce(settings, messages(tail));
  await untilFolded("the tail folded", redis, settings);
  const target = { expected: expectedPackets([...base, ...tail]), ends: await logEnds(settings) };
  if (restart) {
    await waitCaughtUp(settings); // the group has committed the tail: the restart sees committed offsets past the marks
    await worker.stop(); // (its cleanup stops it again: harmless)
    await restorePrefix(redis, snapshot);
    const tailRecords = behind(await marksOf(redis, settings), target.ends);
    const t0 = performance.now();
    const r = await untilExact(name, startFold(settings, cleanups), redis, settings, target, t0);
    return { ...r, tail_records: tailRecords, note: `fold stopped, snapshot restored (partition ${empty}: no mark), fold restarted; timed from the restart` };
  }
  await restorePrefix(redis, snapshot);
  const t0 = performance.now();
  const consumed0 = worker.counters.consumed;
  const tailRecords = behind(await marksOf(redis, settings), target.ends);
  const r = await untilExact(name, worker, redis, settings, target, t0, consumed0);
  return { ...r, tail_records: tailRecords, note: `snapshot restored under the running, idle fold (partition ${empty}: no mark); timed from the restore` };
}

async function rdbRestore(midStream: boolean, cleanups: Cleanups): Promise<Outcome> {
  const name = midStream ? "rdb-mid-stream" : "rdb-idle";
  const server = await privateRedis(cleanups, ["--appendonly", "no"]); // saveRdb/restoreRdb: the RDB is what a start loads
  const settings = await scenarioSettings(cleanups, { redisUrl: server.url });
  const redis = redisClient(settings.redisUrl, cleanups);
  const { base, tail } = split(2);
  const expected = expectedPackets([...base, ...tail]);
  await produce(settings, messages(base));
  const worker = await startFold(settings, cleanups);
  await untilFolded("the base folded", redis, settings);
  const backup = await server.saveRdb();
  if (midStream) {
    const consumedAtBackup = worker.counters.consumed;
    const producing = produce(settings, messages(tail));
    await until("half the tail folded", () => worker.counters.consumed - consumedAtBackup >= TAIL / 2, TIMEOUT_S * 1000, 1);
    const folded = worker.counters.consumed - consumedAtBackup;
    const down = performance.now();
    await server.restoreRdb(backup);
    const t0 = performance.now();
    const consumed0 = worker.counters.consumed;
    const marks = await marksOf(redis, settings);
    const ends = producing.then(() => logEnds(settings));
    const r = await untilExact(name, worker, redis, settings, { expected, ends }, t0, consumed0);
    const note = `RDB (after the base) restored with ${folded} of the tail's ${TAIL} records folded, the fold running and the tail still being produced; Redis down ${Math.round(t0 - down)} ms; timed from the restored server's start`;
    return { ...r, tail_records: behind(marks, await ends), note };
  }
  await produce(settings, messages(tail));
  await untilFolded("the tail folded", redis, settings);
  const ends = await logEnds(settings);
  const down = performance.now();
  await server.restoreRdb(backup);
  const t0 = performance.now();
  const consumed0 = worker.counters.consumed;
  const tailRecords = behind(await marksOf(redis, settings), ends);
  const r = await untilExact(name, worker, redis, settings, { expected, ends }, t0, consumed0);
  return { ...r, tail_records: tailRecords, note: `RDB (after the base) restored under the idle fold (Redis down ${Math.round(t0 - down)} ms); timed from the restored server's start` };
}

function replicationInfo(text: string): Map<string, string> {
  return new Map(text.split(/\r?\n/).filter((l) => l.includes(":")).map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()]));
}

async function replicaPromoted(cleanups: Cleanups): Promise<Outcome> {
  const primary = await privateRedis(cleanups);
  const replica = await privateRedis(cleanups, ["--replicaof", "127.0.0.1", String(primary.port)]);
  const settings = await scenarioSettings(cleanups, { redisUrl: primary.url });
  const onPrimary = redisClient(primary.url, cleanups);
  const onReplica = redisClient(replica.url, cleanups);
  await until("the replica linked", async () => replicationInfo(await onReplica.info("replication")).get("master_link_status") === "up", TIMEOUT_S * 1000, POLL_MS);
  const { base, tail } = split(3);
  await produce(settings, messages(base));
  const worker = await startFold(settings, cleanups);
  await untilFolded("the base folded", onPrimary, settings);
  const atBase = await marksOf(onPrimary, settings);
  const same = (a: Map<number, bigint>, b: Map<number, bigint>) => a.size === b.size && [...a].every(([p, m]) => b.get(p) === m);
  await until("the replica has the base's marks", async () => same(await marksOf(onReplica, settings), atBase), TIMEOUT_S * 1000, POLL_MS);
  // The link breaks: the replica keeps what it has and gets nothing more (its master now one that never answers).
  const cut = performance.now();
  await onReplica.replicaof("127.0.0.1", await freePort());
  await produce(settings, messages(tail));
  await untilFolded("the tail folded on the primary", onPrimary, settings);
  await waitCaughtUp(settings);
  await worker.stop();
  await primary.down();
  const missed = (performance.now() - cut) / 1000;
  await onReplica.replicaof("NO", "ONE");
  const promoted = { ...settings, redisUrl: replica.url };
  const target = { expected: expectedPackets([...base, ...tail]), ends: await logEnds(settings) };
  const tailRecords = behind(await marksOf(onReplica, settings), target.ends);
  const t0 = performance.now();
  const r = await untilExact("replica-promoted", startFold(promoted, cleanups), onReplica, promoted, target, t0);
  return { ...r, tail_records: tailRecords, note: `replica cut off after the base, ${missed.toFixed(1)} s of replication missed (the tail), primary stopped, replica promoted (REPLICAOF NO ONE); timed from the fold's restart with the replica's URL` };
}

async function offsetsReset(to: "earliest" | "latest", cleanups: Cleanups): Promise<Outcome> {
  const settings = await scenarioSettings(cleanups);
  const redis = redisClient(settings.redisUrl, cleanups);
  const { base, tail } = split(4);
  await produce(settings, messages(base));
  const worker = await startFold(settings, cleanups);
  await untilFolded("the base folded", redis, settings);
  await waitCaughtUp(settings);
  await worker.stop();
  await produce(settings, messages(tail));
  await resetOffsets(settings, to);
  const target = { expected: expectedPackets([...base, ...tail]), ends: await logEnds(settings) };
  const tailRecords = behind(await marksOf(redis, settings), target.ends);
  const t0 = performance.now();
  const r = await untilExact(`reset-${to}`, startFold(settings, cleanups), redis, settings, target, t0);
  const what = to === "earliest" ? `to the log start (${BASE + TAIL} records behind them)` : "to the log end (the tail skipped by the group)";
  return { ...r, tail_records: tailRecords, note: `fold stopped after the base, tail produced, group offsets reset ${what}, fold restarted; timed from the restart (caught up = exact)` };
}

/** How many batches the worker is folding now (a private count, read for this bench only; undefined if it is gone). */
function batchesInFlight(worker: FoldWorker): number | undefined {
  const n: unknown = Reflect.get(worker, "batchesInFlight");
  return typeof n === "number" ? n : undefined;
}

async function emptied(cacheSize: number | undefined, cleanups: Cleanups): Promise<Outcome> {
  const server = await privateRedis(cleanups);
  // Batches of a few hundred records (16 KiB fetches, as the state-loss test): with the default 512 KiB a partition's
  // whole share of the log is one batch, and the flush could fall between batches however it is timed.
  const settings = await scenarioSettings(cleanups, { redisUrl: server.url, partitionFetchMaxBytes: 16_384, ...(cacheSize === undefined ? {} : { cacheSize }) });
  const redis = redisClient(settings.redisUrl, cleanups);
  const log = observations(TAIL, 5);
  const expected = expectedPackets(log);
  await produce(settings, messages(log));
  const ends = await logEnds(settings);
  const worker = await startFold(settings, cleanups);
  // Mid-batch: a third of the log folded and a batch being folded now.
  await until("a third of the log folded, a batch in flight", () => worker.counters.consumed >= TAIL / 3 && (batchesInFlight(worker) ?? 1) > 0, TIMEOUT_S * 1000, 1);
  const [consumedAtFlush, inFlight] = [worker.counters.consumed, batchesInFlight(worker)];
  await redis.flushall();
  const t0 = performance.now();
  // A batch Redis sealed just before the flush may have its reply read after the flush's: let the fold's socket
  // be read (two turns of the event loop) before counting, or that batch counts as taken after the flush.
  for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r));
  const consumed0 = worker.counters.consumed;
  const tailRecords = behind(await marksOf(redis, settings), ends);
  const r = await untilExact(`emptied-${cacheSize ?? "default"}`, worker, redis, settings, { expected, ends }, t0, consumed0);
  return { ...r, tail_records: tailRecords, note: `FLUSHALL with ${consumedAtFlush} of ${TAIL} records folded and ${inFlight ?? "?"} batches in flight when it was sent, cache ${settings.cacheSize}, 16 KiB partition fetches; timed from the flush` };
}

async function newRedis(cleanups: Cleanups): Promise<Outcome> {
  const server = await privateRedis(cleanups);
  const settings = await scenarioSettings(cleanups, { redisUrl: server.url });
  const redis = redisClient(settings.redisUrl, cleanups);
  const log = observations(TAIL, 6);
  await produce(settings, messages(log));
  const worker = await startFold(settings, cleanups);
  await untilFolded("the log folded", redis, settings);
  const target = { expected: expectedPackets(log), ends: await logEnds(settings) };
  const replaced = performance.now();
  await server.replaceWithEmpty(); // no keys, no function libraries
  await until("the fold to wait for setup", () => worker.state === "waiting_for_setup", TIMEOUT_S * 1000, POLL_MS);
  const waited = (performance.now() - replaced) / 1000;
  await ensureSetup(settings);
  const t0 = performance.now();
  const consumed0 = worker.counters.consumed;
  const tailRecords = behind(await marksOf(redis, settings), target.ends);
  const r = await untilExact("new-redis", worker, redis, settings, target, t0, consumed0);
  return { ...r, tail_records: tailRecords, seconds_to_waiting_for_setup: round(waited), note: `the idle fold's Redis replaced by an empty server (waiting_for_setup ${waited.toFixed(2)} s after), setup run on it; timed from ensureSetup` };
}

const RUN: Record<Scenario, (cleanups: Cleanups) => Promise<Outcome>> = {
  "restore-running": (c) => restoreNoMark(false, c),
  "restore-restart": (c) => restoreNoMark(true, c),
  "rdb-mid-stream": (c) => rdbRestore(true, c),
  "rdb-idle": (c) => rdbRestore(false, c),
  "replica-promoted": (c) => replicaPromoted(c),
  "reset-earliest": (c) => offsetsReset("earliest", c),
  "reset-latest": (c) => offsetsReset("latest", c),
  "emptied-cache5": (c) => emptied(5, c),
  "emptied-default": (c) => emptied(undefined, c),
  "new-redis": (c) => newRedis(c),
};

// ---------------------------------------------------------------------------------------------------------------

const startedAt = Date.now();
const loadBefore = loadavg();
const outcomes: Partial<Record<Scenario, Outcome>> = {};
for (const scenario of chosen) {
  const cleanups: Cleanups = [];
  const t = Date.now();
  try {
    outcomes[scenario] = await RUN[scenario](cleanups);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    outcomes[scenario] = { seconds_to_exact: null, records_refolded: null, tail_records: null, seconds_to_notice: null, note: "failed", error: message };
  } finally {
    while (cleanups.length > 0) await cleanups.pop()!().catch(() => undefined);
  }
  const o = outcomes[scenario]!;
  process.stderr.write(`${scenario}: ${o.error ?? `exact in ${o.seconds_to_exact} s, ${o.records_refolded} records taken for a tail of ${o.tail_records}`} (${((Date.now() - t) / 1000).toFixed(0)} s)\n`);
}
const loadAfter = loadavg();

const fmt = (n: number | null, digits = 2) => (n === null ? "–" : digits === 0 ? n.toLocaleString("en-US") : n.toFixed(digits));
console.log("| scenario | tail records | records refolded | noticed (s) | exact (s) |");
console.log("|---|---|---|---|---|");
for (const s of chosen) {
  const o = outcomes[s]!;
  console.log(`| ${s} | ${fmt(o.tail_records, 0)} | ${fmt(o.records_refolded, 0)} | ${fmt(o.seconds_to_notice)} | ${o.error === undefined ? fmt(o.seconds_to_exact) : "FAILED"} |`);
}
const tails = chosen.map((s) => outcomes[s]!).filter((o) => o.error === undefined && (o.tail_records ?? 0) >= TAIL);
const worst = Math.max(...tails.map((o) => o.seconds_to_exact!));
console.log(`\nslowest heal of a tail of ${TAIL.toLocaleString("en-US")}+ records: ${tails.length > 0 ? `${worst.toFixed(2)} s (goal <= 10 s: ${worst <= 10 ? "met" : "missed"})` : "none measured"}`);
for (const s of chosen) {
  const o = outcomes[s]!;
  console.log(`- ${s}: ${o.error ?? o.note}`);
}
console.log(`\nload average (1 min) ${loadBefore[0]!.toFixed(2)} before, ${loadAfter[0]!.toFixed(2)} after; ${((Date.now() - startedAt) / 1000).toFixed(0)} s in all`);

if (values.json !== undefined) {
  const result = {
    command: ["npx tsx bench/recovery.bench.ts", ...process.argv.slice(2)].join(" "),
    measured_at: new Date(startedAt).toISOString(),
    git_commit: execFileSync("git", ["rev-parse", "HEAD"]).toString().trim(),
    git_dirty: execFileSync("git", ["status", "--porcelain", "--untracked-files=no"]).toString().trim() !== "",
    node: process.version,
    node_flags: nodeFlagsInEffect(),
    partitions: PARTITIONS,
    base_records: BASE,
    tail: TAIL,
    position_check_ms: testSettings().positionCheckMs,
    load_average_1m: { before: round(loadBefore[0]!), after: round(loadAfter[0]!) },
    ...outcomes,
  };
  writeFileSync(values.json, JSON.stringify(result, null, 2) + "\n");
}
if (chosen.some((s) => outcomes[s]!.error !== undefined)) process.exitCode = 1;
