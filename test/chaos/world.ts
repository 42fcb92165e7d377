/**
 * "The world as it is" (issue 8): one topic fed while the fold runs by
 * producers mufold did not write (confluent-kafka with gzip, snappy, lz4 and
 * zstd, and a transactional one that aborts a transaction) next to mufold's
 * own kafkajs producer, plus one record near the broker's size limit; two fold
 * worker processes whose cache is smaller than the number of identities; Redis
 * emptied mid-batch and rebuilt by the folds themselves; a replay killed inside
 * its promote's pause. Afterwards the log is read back (read_committed) and
 * every packet is compared with the pure reducer over the records on it that
 * the generator produced as valid observations.
 */
import { pausedMember } from "../support/group-members.js";
import { settingsEnv } from "../../consumers/fold/fold-process.js";
import { randomBytes } from "node:crypto";
import { spawn, type ChildProcess } from "node:child_process";
import kafkajs from "kafkajs";
import type { Admin, IHeaders } from "kafkajs";
import { Redis } from "ioredis";
import { DLQ_HEADERS, dlqTopic } from "../../src/fold/dead-letter.js";
import { runReplay } from "../../consumers/replay/replay.js";
import type { ReplaySummary } from "../../consumers/replay/replay-summary.js";
import { observationRecord } from "../../src/client/producer.js";
import { openSender } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { groupOffsets, partitionOffsets } from "../../src/adapters/kafka/topics.js";
import type { Settings } from "../../src/config/settings.js";
import type { Observation } from "../../src/core/index.js";
import { confluentBatches } from "../support/foreign/batches.js";
import type { ForeignClients } from "../support/foreign/foreign.js";
import { batchHeaders } from "../support/kafka-raw.js";
import { BIN, comparePackets, expectedPackets, quietLog, readAllPackets, spawnWorker, stopWorker } from "../support/pipeline.js";

const { CompressionTypes } = kafkajs;

/** The near-limit value: with its key and header the record batch is just under the broker's 1,048,588 bytes. */
export const NEAR_LIMIT_BYTES = 1_048_388;
const CODEC_NAMES = ["none", "gzip", "snappy", "lz4", "zstd"] as const;

type Codec = "gzip" | "snappy" | "lz4" | "zstd";
interface ProducerSpec {
  name: string;
  kind: "kafkajs" | "confluent" | "transactional";
  codec: Codec;
}

/** Every delivery goes to one of these, round-robin; mufold's own producer is one among them. */
export const PRODUCERS: readonly ProducerSpec[] = [
  { name: "kafkajs zstd (mufold)", kind: "kafkajs", codec: "zstd" },
  { name: "confluent-kafka gzip", kind: "confluent", codec: "gzip" },
  { name: "confluent-kafka snappy", kind: "confluent", codec: "snappy" },
  { name: "confluent-kafka lz4", kind: "confluent", codec: "lz4" },
  { name: "confluent-kafka zstd", kind: "confluent", codec: "zstd" },
  { name: "confluent-kafka transactional lz4", kind: "transactional", codec: "lz4" },
];

export interface WorldOptions {
  agents: number;
  observationsPerAgent: number;
  snapshotEvery: number;
  seed: number;
  /** Traffic goes out in this many rounds, released as the scenario advances. */
  rounds: number;
  /** The round whose transaction is split in three: commit, abort, commit. */
  abortRound: number;
  cacheSize: number;
  leaseSeconds: number;
  timeLimitSeconds: number;
  log?: (line: string) => void;
}

export interface LogRecord {
  partition: number;
  offset: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: IHeaders;
}

export interface WorldResult {
  report: Record<string, unknown>;
  /** Stored packets against the reducer over the log's generator-valid records. */
  diff: { missing: string[]; extra: string[]; different: string[] };
  /** The packets would differ if the aborted records had counted (the comparison can tell). */
  abortedWouldChangePackets: boolean;
  identities: number;
  /** Log records neither a generated valid observation nor the near-limit record. */
  unknownRecords: number;
  /** Generated values whose count on the log differs from how often they were committed. */
  countMismatches: number;
  abortedOnLog: number;
  codecsOnLog: Record<string, number>;
  codecsSent: Record<string, number>;
  nearLimit: { partition: number; offset: string; onLogIntact: boolean; dlq: { reason: string; sourceTopic: string; originalValueBytes: string }[]; otherDlq: number };
  /** Redis emptied: the live generation before, the one the folds made by themselves, and how long that took. */
  restore: { generationBefore: string | null; generationAfter: string | null; rebuiltAfterMs: number };
  /** Records on the log not yet committed by the group when Redis was emptied (the fold was mid-traffic). */
  backlogAtFlush: number;
  killedReplay: { pausedSeen: boolean; generationUnchanged: boolean; resumedAfterMs: number; exitSignal: string | null };
  finalVerify: ReplaySummary;
}

const hex = () => randomBytes(4).toString("hex");

/** A promise with its resolve, to release a round of traffic. */
function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

/**
 * Every record of a topic below the end offsets taken at the start, read
 * read_committed by a plain kafkajs consumer (aborted records never appear).
 * kafkajs hands no batch for transaction markers, so the position also follows
 * its END_BATCH_PROCESS events, which carry the fetch's last offset, markers included.
 */
export async function readLog(brokers: string[], topic: string, timeoutMs: number): Promise<LogRecord[]> {
  const kafka = createKafka({ brokers, clientId: "mufold-world-reader" });
  const admin = kafka.admin();
  await admin.connect();
  const high = new Map((await partitionOffsets(admin, topic)).map((e) => [e.partition, e.high]));
  await admin.disconnect();
  const position = new Map<number, bigint>();
  const advance = (p: number, next: bigint) => {
    if (next > (position.get(p) ?? 0n)) position.set(p, next);
  };
  const out: LogRecord[] = [];
  const consumer = kafka.consumer({ groupId: `mufold-world-reader.${hex()}`, readUncommitted: false, maxWaitTimeInMs: 100 });
  consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
    if (e.payload.topic === topic) advance(e.payload.partition, BigInt(e.payload.lastOffset) + 1n);
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          const offset = BigInt(m.offset);
          if (offset < (high.get(batch.partition) ?? 0n)) out.push({ partition: batch.partition, offset, key: m.key, value: m.value, headers: m.headers ?? {} });
          advance(batch.partition, offset + 1n);
        }
      },
    });
    await until(`${topic} read to its end offsets`, () => [...high].every(([p, h]) => (position.get(p) ?? 0n) >= h), timeoutMs);
  } finally {
    await consumer.disconnect();
  }
  return out.sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
}

async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs: number, failure?: () => string | undefined): Promise<number> {
  const started = Date.now();
  for (;;) {
    const why = failure?.();
    if (why !== undefined) throw new Error(`${why} (while waiting for ${what})`);
    if (await cond()) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}


const text = (v: unknown): string | undefined => (v === undefined ? undefined : Buffer.isBuffer(v) ? v.toString("utf8") : Array.isArray(v) ? text(v[0]) : String(v));

export async function runWorld(settings: Settings, foreign: ForeignClients, o: WorldOptions): Promise<WorldResult> {
  const log = o.log ?? (() => undefined);
  if (o.rounds < 6 || o.abortRound >= o.rounds) throw new Error("runWorld: at least 6 rounds (4 from the start, 1 while Redis is empty, the rest after the killed replay)");
  const started = Date.now();
  const deadline = started + o.timeLimitSeconds * 1000;
  const left = () => Math.max(1_000, deadline - Date.now());

  // The traffic: deliveries in production order, dealt round-robin to the producers, cut into rounds.
  const deliveries = [...simulate({ agents: o.agents, observationsPerAgent: o.observationsPerAgent, snapshotEvery: o.snapshotEvery, duplicateRate: 0.1, conflictRate: 0.02, seed: o.seed })].map((d) => d.observation);
  const valueOf = (obs: Observation) => String(observationRecord(obs).value);
  const generated = new Map<string, Observation>(); // what the generator produced as valid, by record value
  for (const obs of deliveries) generated.set(valueOf(obs), obs);
  const slots = Array.from({ length: o.rounds }, () => PRODUCERS.map(() => [] as Observation[]));
  deliveries.forEach((obs, i) => slots[Math.floor((i * o.rounds) / deliveries.length)]![i % PRODUCERS.length]!.push(obs));
  const planned = deliveries.length + 1;

  const sentBy: Record<string, number> = Object.fromEntries(PRODUCERS.map((p) => [p.name, 0]));
  const committedValues = new Map<string, number>();
  const abortedValues = new Map<string, number>();
  const transactions = { committed: 0, aborted: 0, abortedRecords: 0 };
  const count = (m: Map<string, number>, obs: Observation[]) => obs.forEach((x) => m.set(valueOf(x), (m.get(valueOf(x)) ?? 0) + 1));
  let nearLimit: { partition: number; offset: string; value: Buffer } | undefined;

  const sender = await openSender(settings); // creates the topic (infinite retention) and its DLQ
  const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-world" });
  const admin: Admin = kafka.admin();
  await admin.connect();
  const raw = kafka.producer({ allowAutoTopicCreation: false });
  await raw.connect();
  const redis = new Redis(settings.redisUrl);

  const sendAs = async (p: ProducerSpec, round: number, obs: Observation[]): Promise<void> => {
    if (obs.length === 0) return;
    const lines = obs.map(valueOf);
    if (p.kind === "kafkajs") {
      await sender.send(obs.map(observationRecord));
    } else {
      const split = p.kind === "transactional" && round === o.abortRound;
      const thirds = [0, 1, 2, 3].map((k) => Math.floor((k * obs.length) / 3));
      const groups = split ? [0, 1, 2].map((k) => ({ commit: k !== 1, obs: obs.slice(thirds[k], thirds[k + 1]) })) : [{ commit: true, obs }];
      const delivered = await confluentBatches(foreign, settings.brokers, settings.topic, {
        compression: p.codec,
        partition: null, // librdkafka's own partitioner on the scope key (not kafkajs's murmur2)
        transactionalId: p.kind === "transactional" ? `${settings.group}.tx` : null,
        groups: groups.map((g) => ({ commit: g.commit, lines: g.obs.map(valueOf) })),
      });
      if (delivered !== lines.length) throw new Error(`${p.name}: the broker acknowledged ${delivered} of ${lines.length} records`);
      if (p.kind === "transactional") {
        for (const g of groups) {
          if (g.commit) {
            transactions.committed++;
          } else {
            transactions.aborted++;
            transactions.abortedRecords += g.obs.length;
            count(abortedValues, g.obs);
          }
        }
        count(committedValues, groups.filter((g) => g.commit).flatMap((g) => g.obs));
        sentBy[p.name]! += lines.length;
        return;
      }
    }
    count(committedValues, obs);
    sentBy[p.name]! += lines.length;
  };

  const gates = Array.from({ length: o.rounds }, gate);
  const producing = (async () => {
    for (let r = 0; r < o.rounds; r++) {
      await gates[r]!.opened;
      await Promise.all(PRODUCERS.map((p, i) => sendAs(p, r, slots[r]![i]!)));
      if (r === 1) {
        // Garbage just under the broker's limit, raw and uncompressed, keyed like the valid traffic.
        const key = String(observationRecord(deliveries[0]!).key);
        const value = randomBytes(NEAR_LIMIT_BYTES);
        const [meta] = await raw.send({ topic: settings.topic, acks: -1, compression: CompressionTypes.None, messages: [{ key, value, headers: { schema: "memory_utility_observation_v0" } }] });
        nearLimit = { partition: meta!.partition, offset: meta!.baseOffset!, value };
      }
      log(`world: round ${r + 1}/${o.rounds} produced`);
    }
  })();
  let producingFailed: string | undefined;
  producing.catch((e) => (producingFailed = `producing failed: ${e instanceof Error ? e.message : String(e)}`));

  const workers: ChildProcess[] = [];
  let stopping = false;
  let workerDied: string | undefined;
  const failure = () => producingFailed ?? workerDied;
  const committed = async () => [...(await groupOffsets(admin, settings.group, settings.topic)).values()].reduce((a, v) => a + (v > 0n ? Number(v) : 0), 0);

  const faults = { redisFlushes: 0, promotes: 0, replaysKilled: 0, flushedAtCommitted: 0, backlogAtFlush: 0, killedAtCommitted: 0 };
  let restore: WorldResult["restore"];
  let killedReplay: WorldResult["killedReplay"];
  let finalVerify: ReplaySummary;
  try {
    for (let k = 0; k < 2; k++) {
      const w = spawnWorker(settings, { MUFOLD_CACHE_SIZE: String(o.cacheSize) });
      w.once("exit", (code, signal) => {
        if (!stopping) workerDied ??= `fold worker ${k} exited (${signal ?? `code ${code}`})`;
      });
      workers.push(w);
    }
    for (const r of [0, 1, 2, 3]) gates[r]!.open();

    // Fault 1: Redis emptied while the fold is a third of the way through, with records still to fold.
    const logEnd = async () => (await partitionOffsets(admin, settings.topic)).reduce((a, e) => a + Number(e.high), 0);
    await until("a third of the log committed, with a backlog", async () => {
      faults.flushedAtCommitted = await committed();
      faults.backlogAtFlush = (await logEnd()) - faults.flushedAtCommitted;
      return faults.flushedAtCommitted >= planned / 3 && faults.backlogAtFlush > 0;
    }, left(), failure);
    // FLUSHDB only on the database of our own URL, never 0 (the shared one).
    const db = Number(new URL(settings.redisUrl).pathname.slice(1) || "0");
    const client = String(await redis.call("CLIENT", "INFO"));
    if (db === 0 || !client.includes(` db=${db} `)) throw new Error(`refusing to FLUSHDB: not a private database (${client.trim()})`);
    const control = `${settings.prefix}:control`;
    const generationBefore = await redis.hget(control, "generation");
    await redis.flushdb();
    faults.redisFlushes++;
    log(`world: FLUSHDB at ${faults.flushedAtCommitted}/${planned} committed`);
    gates[4]!.open(); // traffic keeps coming while Redis is empty
    // No operator step: the folds see the loss and rebuild a new generation from the log start by themselves.
    let generationAfter: string | null = null;
    const rebuiltAfterMs = await until("the folds to make a new generation", async () => {
      generationAfter = await redis.hget(control, "generation");
      return generationAfter !== null && generationAfter !== generationBefore;
    }, left(), failure);
    restore = { generationBefore, generationAfter, rebuiltAfterMs };
    log(`world: the folds rebuild by themselves (generation ${generationBefore} -> ${generationAfter} after ${rebuiltAfterMs} ms)`);

    // Fault 2: a replay --promote killed inside its pause; a member that never acknowledges holds it there.
    await until("two thirds of the log committed", async () => (await committed()) >= (2 * planned) / 3, left(), failure);
    const zombie = await pausedMember(settings, "mufold-world-zombie");
    try {
      await until("the zombie to join the group", async () => ((await admin.describeGroups([settings.group])).groups[0]?.members.length ?? 0) === 3, 60_000, failure);
      const control = `${settings.prefix}:control`;
      const liveBefore = await redis.hget(control, "generation");
      const replay = spawn(process.execPath, [BIN, "replay", "--promote"], {
        env: { ...process.env, ...settingsEnv(settings), MUFOLD_PAUSE_LEASE_SECONDS: String(o.leaseSeconds), MUFOLD_LOG_LEVEL: "error" },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      replay.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<string | null>((r) => replay.once("exit", (code, signal) => r(signal ?? `code ${code}`)));
      try {
        await until("the promote to pause the fleet", async () => (await redis.hget(control, "paused")) === "1", left(), () =>
          failure() ?? (replay.exitCode !== null ? `the replay exited (${replay.exitCode}) before pausing: ${stderr.trim()}` : undefined),
        );
      } finally {
        if (replay.exitCode === null) replay.kill("SIGKILL");
      }
      const exitSignal = await exited;
      faults.replaysKilled++;
      faults.killedAtCommitted = await committed();
      const killedAt = Date.now();
      const generationUnchanged = (await redis.hget(control, "generation")) === liveBefore;
      const pausedAfterKill = (await redis.hget(control, "paused")) === "1";
      await zombie.disconnect();
      gates[5]!.open(); // traffic produced after the kill: the folds must fold it once the lease runs out
      for (let r = 6; r < o.rounds; r++) gates[r]!.open();
      await until("the folds to resume after the lease", async () => (await committed()) > faults.killedAtCommitted, left(), failure);
      killedReplay = { pausedSeen: pausedAfterKill, generationUnchanged, resumedAfterMs: Date.now() - killedAt, exitSignal };
      log(`world: replay killed in its pause; folds resumed ${killedReplay.resumedAfterMs} ms later`);
    } finally {
      await zombie.disconnect().catch(() => undefined);
    }

    await producing;
    // waitCaughtUp's condition, failing at once if a worker died.
    await until("the group to commit every partition's end offset", async () => {
      const ends = await partitionOffsets(admin, settings.topic);
      const done = await groupOffsets(admin, settings.group, settings.topic);
      return ends.every((e) => e.high === 0n || (done.get(e.partition) ?? -1n) >= e.high);
    }, left(), failure);
    log("world: the group committed every partition's end");

    finalVerify = await runReplay(settings, { verify: true, promote: false, stallSeconds: 60 }, quietLog);
  } finally {
    stopping = true;
    for (const g of gates) g.open();
    await producing.catch(() => undefined);
    for (const w of workers) await stopWorker(w, "SIGTERM");
    await Promise.all([sender.close(), raw.disconnect(), admin.disconnect()].map((p) => p.catch(() => undefined)));
    await redis.quit().catch(() => undefined);
  }

  // The log as it is: read_committed, then each record looked up among what the generator produced as valid.
  const records = await readLog(settings.brokers, settings.topic, left());
  const onLog: Observation[] = [];
  const onLogCounts = new Map<string, number>();
  let unknownRecords = 0;
  let nearLimitOnLog: LogRecord | undefined;
  for (const r of records) {
    if (r.partition === nearLimit!.partition && String(r.offset) === nearLimit!.offset) {
      nearLimitOnLog = r;
      continue;
    }
    const v = r.value?.toString("utf8");
    const obs = v === undefined ? undefined : generated.get(v);
    if (obs === undefined) {
      unknownRecords++;
      continue;
    }
    onLog.push(obs);
    onLogCounts.set(v!, (onLogCounts.get(v!) ?? 0) + 1);
  }
  let countMismatches = 0;
  for (const v of new Set([...committedValues.keys(), ...onLogCounts.keys()])) if ((committedValues.get(v) ?? 0) !== (onLogCounts.get(v) ?? 0)) countMismatches++;
  const abortedOnLog = [...abortedValues.keys()].filter((v) => (onLogCounts.get(v) ?? 0) > (committedValues.get(v) ?? 0)).length;

  const expected = expectedPackets(onLog, settings.reducerVersion);
  const actual = await readAllPackets(settings);
  const diff = comparePackets(actual, expected);
  const withAborted = expectedPackets([...onLog, ...[...abortedValues.keys()].map((v) => generated.get(v)!)], settings.reducerVersion);
  const abortedWouldChangePackets = [...withAborted].some(([id, p]) => expected.get(id) !== p);

  // Batch codecs on the log (read_uncommitted: aborted records included, markers left out).
  const codecsOnLog: Record<string, number> = {};
  for (let p = 0; p < settings.partitions; p++) {
    for (const b of await batchHeaders(settings.brokers, settings.topic, p)) if (!b.control) codecsOnLog[CODEC_NAMES[b.codec] ?? `codec${b.codec}`] = (codecsOnLog[CODEC_NAMES[b.codec] ?? `codec${b.codec}`] ?? 0) + b.count;
  }
  const codecsSent: Record<string, number> = { none: 1 };
  for (const p of PRODUCERS) codecsSent[p.codec] = (codecsSent[p.codec] ?? 0) + sentBy[p.name]!;

  // The DLQ: every dead letter, and which point at the near-limit record.
  const dlq = await readLog(settings.brokers, dlqTopic(settings.topic), left());
  const pointing = dlq.filter((d) => text(d.headers[DLQ_HEADERS.partition]) === String(nearLimit!.partition) && text(d.headers[DLQ_HEADERS.offset]) === nearLimit!.offset);
  const nearLimitResult = {
    partition: nearLimit!.partition,
    offset: nearLimit!.offset,
    onLogIntact: nearLimitOnLog?.value?.equals(nearLimit!.value) === true,
    dlq: pointing.map((d) => ({ reason: text(d.headers[DLQ_HEADERS.reason]) ?? "", sourceTopic: text(d.headers[DLQ_HEADERS.topic]) ?? "", originalValueBytes: text(d.headers[DLQ_HEADERS.originalValueBytes]) ?? "" })),
    otherDlq: dlq.length - pointing.length,
  };

  const seconds = Math.round((Date.now() - started) / 100) / 10;
  const report = {
    observationsGenerated: deliveries.length,
    recordsOnLog: records.length,
    validOnLog: onLog.length,
    identities: expected.size,
    workers: workers.length,
    cacheSize: o.cacheSize,
    partitions: settings.partitions,
    producers: sentBy,
    codecsOnLog,
    transactions,
    nearLimit: { valueBytes: NEAR_LIMIT_BYTES, partition: nearLimit!.partition, offset: nearLimit!.offset, dlq: nearLimitResult.dlq.map((d) => d.reason) },
    faults: {
      redisFlushes: faults.redisFlushes,
      flushedAt: `${faults.flushedAtCommitted}/${planned}`,
      backlogAtFlush: faults.backlogAtFlush,
      rebuiltAfterMs: restore!.rebuiltAfterMs,
      promotes: faults.promotes,
      replaysKilledInPause: faults.replaysKilled,
      killedAt: `${faults.killedAtCommitted}/${planned}`,
      foldsResumedAfterMs: killedReplay!.resumedAfterMs,
    },
    packets: { compared: expected.size, missing: diff.missing.length, extra: diff.extra.length, different: diff.different.length },
    finalVerify: { verified: finalVerify!.verified, mismatches: finalVerify!.mismatches, compared: finalVerify!.verify?.compared ?? 0 },
    seconds,
  };
  return {
    report,
    diff,
    abortedWouldChangePackets,
    identities: expected.size,
    unknownRecords,
    countMismatches,
    abortedOnLog,
    codecsOnLog,
    codecsSent,
    nearLimit: nearLimitResult,
    restore: restore!,
    backlogAtFlush: faults.backlogAtFlush,
    killedReplay: killedReplay!,
    finalVerify: finalVerify!,
  };
}
