/**
 * How long mufold takes to give up, or to let go, where the tests only check
 * that it does (durations are not asserted in tests):
 *   - a command facing an unreachable Redis or Kafka (refused, or a listener
 *     that never answers), against its --connect-timeout-ms;
 *   - a replay interrupted (SIGINT) inside its promote pause, until it exits;
 *   - a replay SIGKILLed inside its pause, until the folds commit again (the lease);
 *   - a replay meeting an undecodable batch, until it fails;
 *   - a fold whose Redis stays down past the outage tolerance (3 s here), until it gives up;
 *   - the HTTP server's close() with an idle keep-alive connection open (a check that hangs), until it resolves.
 * Prints a markdown table.
 *
 *   npm run build && npx tsx bench/deadlines.bench.ts [--lease-seconds 4]
 *
 * Needs KAFKA_BROKERS / REDIS_URL (defaults 127.0.0.1).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:net";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { FoldWorker } from "../consumers/fold/fold-worker.js";
import { Readiness } from "../src/http/readiness.js";
import { startHttpServer } from "../src/http/server.js";
import { ProjectionReader } from "../src/client/readback.js";
import { runReplay } from "../consumers/replay/replay.js";
import { ensureSetup } from "../src/adapters/redis/functions.js";
import { PrivateRedis } from "../test/support/private-redis.js";
import { observationRecord } from "../src/client/producer.js";
import { produce } from "../producers/produce.js";
import { simulate } from "../producers/simulation.js";
import { createKafka } from "../src/adapters/kafka/client.js";
import type { Settings } from "../src/config/settings.js";
import { settingsEnv } from "../consumers/fold/fold-process.js";
import { pausedMember } from "../test/support/group-members.js";
import { produceRawBatch } from "../test/support/kafka-raw.js";
import { BIN, dropPrefix, quietLog, spawnWorker, stopWorker, testSettings, waitCaughtUp } from "../test/support/pipeline.js";
import { encodeRecords, lz4StoredFrame, recordBatch } from "../test/support/record-batch.js";
import { until } from "../test/support/wait.js";

const { values } = parseArgs({ options: { "lease-seconds": { type: "string", default: "4" } } });
const LEASE_SECONDS = Number(values["lease-seconds"]);
const rows: [string, string, string][] = [];

/** Run `mufold …` and return its exit code and wall time. */
function timed(args: string[], env: Record<string, string>): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, MUFOLD_LOG_LEVEL: "silent", ...env }, stdio: "ignore" });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, ms: Date.now() - started })));
}

async function silentServer(): Promise<{ server: Server; port: number }> {
  const server = createServer(() => undefined); // accepts, never answers
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, port: (server.address() as { port: number }).port };
}

async function unreachable(): Promise<void> {
  const silent = await silentServer();
  const cases: [string, string[], Record<string, string>, string][] = [
    ["read, Redis refused", ["read", "--list"], { REDIS_URL: "redis://127.0.0.1:1" }, "10,000 (default)"],
    ["produce, Kafka refused", ["produce", "--input", "/dev/null"], { KAFKA_BROKERS: "127.0.0.1:1" }, "10,000 (default)"],
    ["read, Redis silent", ["read", "--list", "--connect-timeout-ms", "1500"], { REDIS_URL: `redis://127.0.0.1:${silent.port}` }, "1,500"],
    ["produce, Kafka silent", ["produce", "--input", "/dev/null", "--connect-timeout-ms", "1500"], { KAFKA_BROKERS: `127.0.0.1:${silent.port}` }, "1,500"],
  ];
  for (const [what, args, env, deadline] of cases) {
    const r = await timed(args, env);
    rows.push([`${what} (exit ${r.code})`, `${r.ms} ms`, `--connect-timeout-ms ${deadline}`]);
  }
  silent.server.close();
}

function spawnReplay(settings: Settings): { child: ChildProcess; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [BIN, "replay", "--promote"], {
    env: { ...process.env, ...settingsEnv(settings), MUFOLD_PAUSE_LEASE_SECONDS: String(LEASE_SECONDS), MUFOLD_LOG_LEVEL: "silent" },
    stdio: "ignore",
  });
  return { child, exited: new Promise((r) => child.once("exit", (code) => r(code))) };
}

async function members(settings: Settings): Promise<number> {
  const admin = createKafka({ brokers: settings.brokers, clientId: "bench-members" }).admin();
  await admin.connect();
  try {
    return (await admin.describeGroups([settings.group])).groups[0]?.members.length ?? 0;
  } finally {
    await admin.disconnect();
  }
}

/** A fold, a member that never acknowledges pauses, and a replay --promote caught inside its pause. */
async function replayInsidePause(settings: Settings, redis: Redis, seed: number) {
  const observations = [...simulate({ agents: 6, observationsPerAgent: 25, scopesPerAgent: 2, snapshotEvery: 10, seed })].map((d) => d.observation);
  await produce(settings, observations.map(observationRecord));
  const worker = spawnWorker(settings, { MUFOLD_PAUSE_LEASE_SECONDS: String(LEASE_SECONDS) });
  await waitCaughtUp(settings);
  const zombie = await pausedMember(settings, "bench-zombie");
  await until("the paused member to join", async () => (await members(settings)) === 2);
  const replay = spawnReplay(settings);
  await until("the promote to pause the fleet", async () => (await redis.hget(`${settings.prefix}:control`, "paused")) === "1");
  return { worker, zombie, replay };
}

async function replays(): Promise<void> {
  // SIGINT inside the pause: until the process has exited (it releases the pause first).
  {
    const settings = testSettings({ partitions: 3 });
    const redis = new Redis(settings.redisUrl);
    const { worker, zombie, replay } = await replayInsidePause(settings, redis, 201);
    const sent = Date.now();
    replay.child.kill("SIGINT");
    const code = await replay.exited;
    rows.push([`replay --promote, SIGINT inside the pause (exit ${code})`, `${Date.now() - sent} ms`, "at once"]);
    await zombie.disconnect();
    await stopWorker(worker);
    await redis.quit();
    await dropPrefix(settings);
  }
  // SIGKILL inside the pause: until the group has committed records produced after the kill (the lease runs out).
  {
    const settings = testSettings({ partitions: 3 });
    const redis = new Redis(settings.redisUrl);
    const { worker, zombie, replay } = await replayInsidePause(settings, redis, 202);
    replay.child.kill("SIGKILL");
    await replay.exited;
    const killed = Date.now();
    await zombie.disconnect();
    const more = [...simulate({ agents: 3, observationsPerAgent: 10, seed: 203, startTime: "2026-11-20T00:00:00Z" })].map((d) => d.observation);
    await produce(settings, more.map(observationRecord));
    await waitCaughtUp(settings, 60_000);
    rows.push(["replay --promote SIGKILLed inside the pause: folds committing again", `${Date.now() - killed} ms`, `lease ${LEASE_SECONDS} s`]);
    await stopWorker(worker);
    await redis.quit();
    await dropPrefix(settings);
  }
  // An undecodable batch: until the replay fails with the cause (its stall deadline is an hour).
  {
    const settings = testSettings({ partitions: 1 });
    const observations = [...simulate({ agents: 2, observationsPerAgent: 10, seed: 204 })].map((d) => d.observation);
    await produce(settings, observations.map(observationRecord));
    const records = observations.slice(0, 2).map((o) => ({ key: String(observationRecord(o).key), value: String(observationRecord(o).value), headers: { schema: "memory_utility_observation_v0" } }));
    await produceRawBatch(settings.brokers, settings.topic, 0, recordBatch({ codec: 3, count: 2, payload: lz4StoredFrame(encodeRecords(records), { corruptChecksum: true }) }));
    const started = Date.now();
    const failed = await runReplay(settings, { verify: false, promote: false, stallSeconds: 3_600 }, quietLog).then(
      () => "no error",
      (e: Error) => e.message.slice(0, 40),
    );
    rows.push([`replay on an undecodable batch ("${failed}…")`, `${Date.now() - started} ms`, "stall deadline 3,600 s"]);
    await dropPrefix(settings);
  }
}

/** A fold on a private Redis that goes down: from the stop until the fold gives up (tolerance 3 s). */
async function outageTolerance(): Promise<void> {
  const redis = await PrivateRedis.start();
  const settings = testSettings({ partitions: 1, redisUrl: redis.url, outageToleranceSeconds: 3 });
  await ensureSetup(settings);
  const worker = await FoldWorker.start(settings, quietLog);
  await redis.down();
  const stopped = Date.now();
  await produce(settings, [...simulate({ agents: 2, observationsPerAgent: 5, seed: 205 })].map((d) => observationRecord(d.observation)));
  const error = (await worker.crashed) as Error;
  rows.push([`fold with Redis down ("${error.message.slice(0, 40)}…")`, `${Date.now() - stopped} ms`, "outage tolerance 3 s"]);
  await worker.stop();
  await redis.remove();
}

async function httpClose(): Promise<void> {
  const redis = new Redis(testSettings().redisUrl);
  const server = await startHttpServer({
    reader: new ProjectionReader(redis, testSettings().prefix),
    readiness: new Readiness({ slow: () => new Promise(() => undefined) }, 200),
    port: 0,
  });
  await (await fetch(`http://127.0.0.1:${server.port}/readyz`)).text(); // leaves an idle keep-alive connection
  const started = Date.now();
  await server.close();
  rows.push(["HTTP server close() with an idle keep-alive connection", `${Date.now() - started} ms`, "Node's keep-alive timeout 5 s"]);
  await redis.quit();
}

await unreachable();
await replays();
await outageTolerance();
await httpClose();
console.log("| case | took | deadline / lease |\n|---|---|---|");
for (const [what, took, bound] of rows) console.log(`| ${what} | ${took} | ${bound} |`);
process.exit(0);
