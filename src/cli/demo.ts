/**
 * `mufold demo`: the main job end to end on this machine. Simulates agents,
 * sends a few malformed records raw, folds with two worker processes, waits
 * until they have caught up, replays with --verify and prints a table.
 * Exits 0 only if the replay found 0 mismatches.
 */
import { connectRedis, redisClientSettings } from "../adapters/redis/connect.js";
import { ensureSetup } from "../adapters/redis/functions.js";
import { resolveSettings, type Settings } from "../config/settings.js";
import { spawnFoldWorker, waitForGroup } from "../../consumers/fold/fold-process.js";
import { createLogger } from "../observability/log.js";
import { ProjectionReader } from "../client/readback.js";
import { runReplay } from "../../consumers/replay/replay.js";
import { runSimulation } from "./stream-commands.js";
import { progressBar } from "./progress.js";
import { commandFlags } from "./command.js";
import { preflight } from "./preflight.js";
import { DEMO } from "./specs.js";

export async function demoCommand(args: string[]): Promise<number> {
  const values = await commandFlags(DEMO, args);
  if (values === undefined) return 0;
  const run = Date.now().toString(36);
  const base = resolveSettings(values);
  const settings: Settings = {
    ...base,
    topic: `mufold-demo.${run}`,
    group: `mufold-demo.${run}`,
    prefix: `mufold-demo:${run}`,
  };
  const log = createLogger({ service: "mufold-demo" }, "warn");
  await preflight(settings, { kafka: true, redis: true });
  // What `mufold setup` does for Redis: the demo's folds and replay only check for the functions.
  await ensureSetup(settings);
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
  const env = { MUFOLD_LOG_LEVEL: process.env.MUFOLD_LOG_LEVEL ?? "warn" };
  const workers = [1, 2].map((i) => spawnFoldWorker(settings, { ...env, MUFOLD_CLIENT_ID: `mufold-demo-worker-${i}` }));
  let foldSeconds: number;
  try {
    const foldBar = progressBar("fold  ");
    await waitForGroup(settings, 300_000, (done, total) => foldBar.update(done, total, (Date.now() - foldStarted) / 1000));
    foldBar.done();
    foldSeconds = (Date.now() - foldStarted) / 1000;
    const bar = progressBar("replay");
    const replay = await runReplay(settings, { verify: true, promote: false, onProgress: (p) => bar.update(p.consumed, p.total, p.elapsedSeconds) }, log);
    bar.done();

    const redis = connectRedis(redisClientSettings(settings));
    const totals = { accepted: 0, duplicates: 0, conflicts: 0 };
    let identities = 0;
    try {
      const reader = new ProjectionReader(redis, settings.prefix, settings.reducerVersion, settings.topic);
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
