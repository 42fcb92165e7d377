/**
 * `mufold demo`: the main job end to end on this machine. Simulates agents,
 * sends a few malformed records raw, folds with two worker processes, waits
 * until they have caught up, replays with --verify and prints a table.
 * Exits 0 only if the replay found 0 mismatches.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createKafka, kafkaClientSettings } from "../adapters/kafka/client.js";
import { groupOffsets, partitionOffsets } from "../adapters/kafka/topics.js";
import { connectRedis, redisClientSettings } from "../adapters/redis/connect.js";
import { resolveSettings, type Settings } from "../config.js";
import { MufoldError } from "../errors.js";
import { createLogger } from "../log.js";
import { ProjectionReader } from "../readback.js";
import { runReplay } from "../../consumers/replay.js";
import { runSimulation } from "./stream-commands.js";
import { progressBar } from "./progress.js";

const BIN = fileURLToPath(new URL("../../../bin/mufold.js", import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function startWorker(settings: Settings, index: number): ChildProcess {
  const env = {
    ...process.env,
    KAFKA_BROKERS: settings.brokers.join(","),
    REDIS_URL: settings.redisUrl,
    MUFOLD_TOPIC: settings.topic,
    MUFOLD_GROUP: settings.group,
    MUFOLD_PREFIX: settings.prefix,
    MUFOLD_PARTITIONS: String(settings.partitions),
    MUFOLD_LOG_LEVEL: process.env.MUFOLD_LOG_LEVEL ?? "warn",
    MUFOLD_CLIENT_ID: `mufold-demo-worker-${index}`,
  };
  return spawn(process.execPath, [BIN, "fold"], { env, stdio: ["ignore", "ignore", "inherit"] });
}

async function waitCaughtUp(settings: Settings, timeoutMs: number): Promise<void> {
  const kafka = createKafka(kafkaClientSettings(settings, "-demo-watch"));
  const admin = kafka.admin();
  await admin.connect();
  const bar = progressBar("fold  ");
  const started = Date.now();
  try {
    const ends = await partitionOffsets(admin, settings.topic);
    const total = ends.reduce((a, e) => a + Number(e.high), 0);
    for (;;) {
      const committed = await groupOffsets(admin, settings.group, settings.topic);
      const done = ends.reduce((a, e) => {
        const c = committed.get(e.partition) ?? -1n;
        return a + (c > 0n ? Number(c) : 0);
      }, 0);
      bar.update(done, total, (Date.now() - started) / 1000);
      if (ends.every((e) => (committed.get(e.partition) ?? -1n) >= e.high || e.high === 0n)) break;
      if (Date.now() - started > timeoutMs) throw new MufoldError("fold workers did not catch up in time");
      await sleep(200);
    }
  } finally {
    bar.done();
    await admin.disconnect();
  }
}

export async function demoCommand(args: string[]): Promise<number> {
  const run = Date.now().toString(36);
  const base = resolveSettings({});
  const settings: Settings = {
    ...base,
    topic: args.includes("--topic") ? base.topic : `mufold-demo.${run}`,
    group: `mufold-demo.${run}`,
    prefix: `mufold-demo:${run}`,
  };
  const log = createLogger({ service: "mufold-demo" }, "warn");
  process.stderr.write(`demo: topic ${settings.topic}, Redis prefix ${settings.prefix}\n`);

  const produced = await runSimulation(settings, {
    agents: 50,
    observationsPerAgent: 200,
    duplicateRate: 0.1,
    conflictRate: 0.01,
    seed: 7,
    rate: 0,
    malformed: 8,
  });
  process.stderr.write(`demo: produced ${produced.produced} records (${produced.retries} retries, ${produced.conflicts} changed judgments, ${produced.malformed} malformed) in ${produced.seconds.toFixed(1)}s\n`);

  const foldStarted = Date.now();
  const workers = [startWorker(settings, 1), startWorker(settings, 2)];
  let foldSeconds: number;
  try {
    await waitCaughtUp(settings, 300_000);
    foldSeconds = (Date.now() - foldStarted) / 1000;
    const bar = progressBar("replay");
    const replay = await runReplay(settings, { verify: true, promote: false, onProgress: (p) => bar.update(p.consumed, p.total, p.elapsedSeconds) }, log);
    bar.done();

    const redis = connectRedis(redisClientSettings(settings));
    const totals = { accepted: 0, duplicates: 0, conflicts: 0 };
    let identities = 0;
    try {
      const reader = new ProjectionReader(redis, settings.prefix);
      for (const id of await reader.identities()) {
        const packet = JSON.parse((await reader.read(id)) ?? "null");
        if (packet === null) continue;
        identities++;
        totals.accepted += packet.accepted_observation_count;
        totals.duplicates += packet.duplicate_observation_count;
        totals.conflicts += packet.conflicting_observation_count;
      }
    } finally {
      await redis.quit();
    }
    const rows: [string, string | number][] = [
      ["identities", identities],
      ["deliveries (valid records)", replay.deliveries],
      ["accepted observations", totals.accepted],
      ["duplicate deliveries", totals.duplicates],
      ["conflicting observation ids", totals.conflicts],
      ["DLQ records", replay.dlq],
      ["identities verified byte-equal", replay.verify?.compared ?? 0],
      ["mismatches", replay.mismatches],
      ["produce observations/s", produced.perSecond],
      ["fold observations/s (2 workers, incl. group join)", Math.round(produced.produced / foldSeconds)],
      ["replay observations/s", replay.recordsPerSecond],
    ];
    const width = Math.max(...rows.map(([k]) => k.length));
    process.stdout.write("\n" + rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n") + "\n");
    const ok = replay.mismatches === 0 && (replay.verify?.compared ?? 0) > 0 && replay.verify?.notComparable === 0;
    process.stdout.write(ok ? "\nOK: the replay rebuilt every projection byte for byte.\n" : "\nFAILED: see mismatches above.\n");
    return ok ? 0 : 1;
  } finally {
    for (const w of workers) w.kill("SIGTERM");
    await Promise.all(workers.map((w) => new Promise((r) => (w.exitCode !== null ? r(null) : w.once("exit", r)))));
  }
}
