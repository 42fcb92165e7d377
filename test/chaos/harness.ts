/**
 * The fault harness: folds a workload while killing workers (SIGKILL),
 * restarting the Kafka broker, restarting Redis with its state lost (the folds
 * rebuild it by themselves once `mufold setup` has loaded the libraries again;
 * a blue/green replay --promote runs meanwhile), and scaling the
 * group 1 -> 3 -> 1. It ends by comparing every identity's packet with the pure
 * reducer over that identity's valid records read straight from the topic.
 * Bounded in time; it drives the project's own infra scripts.
 */
import { execFileSync } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { partitionOffsets } from "../../src/adapters/kafka/topics.js";
import { ensureSetup } from "../../src/adapters/redis/functions.js";
import { connectRedis } from "../../src/adapters/redis/connect.js";
import { until } from "../support/wait.js";
import type { Settings } from "../../src/config/settings.js";
import { runReplay } from "../../consumers/replay/replay.js";
import type { SourceRecord } from "../../src/fold/source-record.js";
import { openSender } from "../../producers/produce.js";
import { observationRecord } from "../../src/client/producer.js";
import { simulate } from "../../producers/simulation.js";
import type { Observation } from "../../src/core/index.js";
import { Prng } from "../../producers/simulation.js";
import { REPO_ROOT } from "../support/reference.js";
import { checkPast } from "../support/past-check.js";
import { comparePackets, expectedPackets, quietLog, readAllPackets, sleep, spawnWorker, stopWorker, waitCaughtUp } from "../support/pipeline.js";
import type { OutMessage } from "../../src/adapters/kafka/producer.js";

export interface ChaosOptions {
  agents: number;
  observationsPerAgent: number;
  snapshotEvery: number;
  kills: number;
  /** Extra records mixed in that are not valid observations (DLQ traffic). */
  hostile?: (rng: Prng, base: Observation) => OutMessage;
  hostileEvery?: number;
  brokerRestart: boolean;
  redisRestart: boolean;
  seed: number;
  timeLimitSeconds: number;
  log?: (line: string) => void;
}

export interface ChaosReport {
  observations: number;
  hostile: number;
  identities: number;
  kills: number;
  brokerRestarts: number;
  redisRestarts: number;
  promotes: number;
  scaleEvents: string[];
  mismatches: number;
  lost: number;
  doubled: number;
  missingIdentities: number;
  extraIdentities: number;
  /** Answers about the past checked after the faults (test/support/past-check.ts), and those that were wrong. */
  past: { identities: number; points: number; mismatches: string[] };
  seconds: number;
}

const infra = (script: string) => execFileSync("bash", [`${REPO_ROOT}/infra/${script}`], { stdio: ["ignore", "ignore", "inherit"] });

/** Every record of the topic, read straight from Kafka. */
export async function readTopic(settings: Settings): Promise<SourceRecord[]> {
  const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-chaos-reader" });
  const admin = kafka.admin();
  await admin.connect();
  const ends = await partitionOffsets(admin, settings.topic);
  await admin.disconnect();
  const want = new Map(ends.map((e) => [e.partition, e.high]));
  const seen = new Map<number, bigint>();
  const out: SourceRecord[] = [];
  const consumer = kafka.consumer({ groupId: `${settings.group}.audit.${Date.now()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic: settings.topic, fromBeginning: true });
  const done = () => [...want].every(([p, h]) => h === 0n || (seen.get(p) ?? 0n) >= h);
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        if (BigInt(m.offset) >= (want.get(batch.partition) ?? 0n)) continue;
        out.push({ topic: batch.topic, partition: batch.partition, offset: m.offset, key: m.key, value: m.value, headers: m.headers });
        seen.set(batch.partition, BigInt(m.offset) + 1n);
      }
    },
  });
  while (!done()) await sleep(100);
  await consumer.disconnect();
  return out;
}

/** A record's key, value and headers as one string, for records as produced and as read back alike. */
function recordSignature(key: unknown, value: unknown, headers: Record<string, unknown> | undefined): string {
  const text = (v: unknown) => (v === null || v === undefined ? "\u0001" : Buffer.isBuffer(v) ? v.toString("utf8") : String(v));
  const named = Object.keys(headers ?? {})
    .sort()
    .map((name) => `${name}=${text(headers![name])}`);
  return [text(key), text(value), ...named].join("\u0000");
}

function totalDeliveries(packet: string | undefined): number {
  if (packet === undefined) return 0;
  const p = JSON.parse(packet);
  return (p.accepted_observation_count ?? 0) + (p.duplicate_observation_count ?? 0) + (p.rejected_observation_count ?? 0);
}

export async function runChaos(settings: Settings, o: ChaosOptions): Promise<ChaosReport> {
  const log = o.log ?? (() => undefined);
  const started = Date.now();
  const deadline = started + o.timeLimitSeconds * 1000;
  const rng = new Prng(o.seed);
  const report: ChaosReport = {
    observations: 0, hostile: 0, identities: 0, kills: 0, brokerRestarts: 0, redisRestarts: 0, promotes: 0,
    scaleEvents: [], mismatches: 0, lost: 0, doubled: 0, missingIdentities: 0, extraIdentities: 0, past: { identities: 0, points: 0, mismatches: [] }, seconds: 0,
  };

  const messages: OutMessage[] = [];
  const generated: Observation[] = [];
  /** The valid records (key, value and headers: a hostile record may copy a valid one's value), to find them on the log. */
  const byRecord = new Map<string, Observation>();
  let i = 0;
  for (const d of simulate({ agents: o.agents, observationsPerAgent: o.observationsPerAgent, snapshotEvery: o.snapshotEvery, duplicateRate: 0.1, conflictRate: 0.01, seed: o.seed })) {
    const record = observationRecord(d.observation);
    messages.push(record);
    generated.push(d.observation);
    byRecord.set(recordSignature(record.key, record.value, record.headers), d.observation);
    report.observations++;
    if (o.hostile && o.hostileEvery && ++i % o.hostileEvery === 0) {
      messages.push(o.hostile(rng, d.observation));
      report.hostile++;
    }
  }
  log(`chaos: ${report.observations} observations + ${report.hostile} hostile records`);

  const workers: ChildProcess[] = [];
  const scale = async (n: number) => {
    while (workers.length < n) workers.push(spawnWorker(settings));
    while (workers.length > n) await stopWorker(workers.pop()!, "SIGTERM");
    report.scaleEvents.push(`${n}`);
    log(`chaos: scaled to ${n} worker(s)`);
  };
  const killOne = async () => {
    if (workers.length === 0) return;
    const k = rng.int(0, workers.length - 1);
    await stopWorker(workers[k]!, "SIGKILL");
    workers[k] = spawnWorker(settings);
    report.kills++;
  };

  // Produce in chunks while the faults run; the producer is idempotent and retries through a broker restart.
  const sender = await openSender(settings);
  let produced = 0;
  const chunks = 40;
  const chunkSize = Math.ceil(messages.length / chunks);
  const producing = (async () => {
    for (let c = 0; c < chunks; c++) {
      await sender.send(messages.slice(c * chunkSize, (c + 1) * chunkSize));
      produced = Math.min(messages.length, (c + 1) * chunkSize);
      await sleep(50);
    }
  })();

  try {
    await ensureSetup(settings); // as `mufold setup`: the workers only check for the Redis functions
    await scale(1);
    const plan: (() => Promise<void>)[] = [];
    for (let k = 0; k < o.kills; k++) plan.push(killOne);
    plan.splice(Math.floor(o.kills * 0.2), 0, () => scale(3));
    if (o.brokerRestart) {
      plan.splice(Math.floor(o.kills * 0.4), 0, async () => {
        log("chaos: restarting the Kafka broker");
        infra("kafka/stop.sh");
        infra("kafka/start.sh");
        report.brokerRestarts++;
      });
    }
    if (o.redisRestart) {
      plan.splice(Math.floor(o.kills * 0.6), 0, async () => {
        log("chaos: restarting Redis (state lost): the folds wait for setup and rebuild by themselves; then a blue/green replay --promote under load");
        infra("redis/stop.sh");
        infra("redis/start.sh");
        report.redisRestarts++;
        // The restart lost the functions too: an operator runs `mufold setup`; nothing else. The folds make a new
        // generation and rebuild it from the log by themselves.
        await ensureSetup(settings);
        const rebuilt = connectRedis(settings.redisUrl);
        try {
          await until("the folds to make a new live generation", async () => (await rebuilt.hget(`${settings.prefix}:control`, "generation")) !== null, 60_000);
        } finally {
          await rebuilt.quit();
        }
        // A blue/green rebuild under load, beside the live generation the folds are rebuilding.
        const summary = await runReplay(settings, { verify: false, promote: true, dropAfterSeconds: 0 }, quietLog);
        if (!summary.promoted) throw new Error("replay did not promote");
        report.promotes++;
      });
    }
    plan.splice(Math.floor(o.kills * 0.8), 0, () => scale(1));
    // Spread the faults over the fold's progress, so they hit it at every stage.
    const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-chaos-progress" }).admin();
    await admin.connect();
    let folded = 0;
    const progress = async () => {
      try {
        const offsets = await admin.fetchOffsets({ groupId: settings.group, topics: [settings.topic] });
        folded = (offsets[0]?.partitions ?? []).reduce((a, p) => a + Math.max(0, Number(p.offset)), 0);
      } catch {
        /* the broker may be restarting */
      }
      return folded / messages.length;
    };
    try {
      for (let k = 0; k < plan.length; k++) {
        const target = (k + 1) / (plan.length + 2);
        const stepDeadline = Date.now() + 30_000 + rng.int(0, 500);
        while ((await progress()) < target && Date.now() < stepDeadline) await sleep(100);
        if (Date.now() > deadline) throw new Error("chaos: time limit reached during faults");
        await sleep(rng.int(0, 400));
        await plan[k]!();
      }
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    await producing;
    log(`chaos: produced ${produced}; waiting for the fold to catch up`);
    await waitCaughtUp(settings, Math.max(30_000, deadline - Date.now()));
  } finally {
    await sender.close().catch(() => undefined);
    for (const w of workers) await stopWorker(w, "SIGTERM");
  }

  // What the packets must be comes from what the generator meant to be valid, not from the fold's decision;
  // the topic must hold exactly what was produced (an idempotent producer: no record lost or doubled).
  const records = await readTopic(settings);
  if (records.length !== messages.length) throw new Error(`chaos: the topic holds ${records.length} records, ${messages.length} were produced`);
  const expected = expectedPackets(generated, settings.reducerVersion);
  const actual = await readAllPackets(settings);
  const diff = comparePackets(actual, expected);
  report.identities = expected.size;
  report.missingIdentities = diff.missing.length;
  report.extraIdentities = diff.extra.length;
  report.mismatches = diff.missing.length + diff.extra.length + diff.different.length;
  for (const id of [...diff.different, ...diff.missing]) {
    const want = totalDeliveries(expected.get(id));
    const got = totalDeliveries(actual.get(id));
    if (got < want) report.lost += want - got;
    if (got > want) report.doubled += got - want;
  }
  // The past of identities drawn at random: explain and as-of reads over the records where the log has them.
  const placed = records.flatMap((r) => {
    const observation = byRecord.get(recordSignature(r.key, r.value, r.headers));
    return observation === undefined ? [] : [{ observation, partition: r.partition, offset: BigInt(r.offset) }];
  });
  report.past = await checkPast(settings, placed, { identities: 20, pointsPerIdentity: 3, seed: o.seed });
  report.seconds = (Date.now() - started) / 1000;
  return report;
}
