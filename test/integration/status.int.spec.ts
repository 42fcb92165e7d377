/**
 * `mufold status` as an operator runs it (bin/mufold.js, built in dist/:
 * `npm run build` first), with the fold stopped between looks, through the
 * states a test can make without the fold healing anything:
 * no topic, nothing folded, folded, behind the log's end, a replay being
 * built, Redis gone back in time (a prefix snapshot restored), Redis lost,
 * and (on a private Redis, never the shared one) no function libraries.
 * Every expected number is computed here from the offsets read from Kafka.
 */
import { spawn } from "node:child_process";
import { Redis } from "ioredis";
import type { Admin } from "kafkajs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { settingsEnv } from "../../consumers/fold/fold-process.js";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { RedisControlStore } from "../../src/adapters/redis/control-store.js";
import type { StatusReport } from "../../src/cli/status.js";
import type { Settings } from "../../src/config/settings.js";
import type { Observation } from "../../src/core/index.js";
import { PrivateRedis } from "../support/private-redis.js";
import { BIN, comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { restorePrefix, snapshotPrefix } from "../support/redis-snapshot.js";

const settings = testSettings({ partitions: 3 });
let admin: Admin;
let redis: Redis;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test-status" }).admin();
  await admin.connect();
  redis = new Redis(settings.redisUrl);
});
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});
afterAll(async () => {
  await dropPrefix(settings).catch(() => undefined);
  await redis.quit();
  await admin.disconnect();
});

function mufoldStatus(s: Settings, args: string[] = ["--json"]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, "status", ...args], { env: { ...process.env, ...settingsEnv(s) }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise((resolve) =>
    child.on("close", (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** `mufold status --json`: exit 0 and one JSON object, whatever the state. */
async function status(s: Settings = settings): Promise<StatusReport> {
  const r = await mufoldStatus(s);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
  return JSON.parse(r.stdout) as StatusReport;
}

async function ends(): Promise<Map<number, number>> {
  return new Map((await admin.fetchTopicOffsets(settings.topic)).map((o) => [o.partition, Number(o.high)]));
}

/** The rows status must print, from offsets read here. */
function rows(marks: Map<number, number> | null, committed: Map<number, number> | null, end: Map<number, number>): StatusReport["partitions"] {
  return [...end]
    .sort(([a], [b]) => a - b)
    .map(([partition, e]) => {
      const mark = marks?.get(partition) ?? null;
      const c = committed?.get(partition) ?? null;
      return { topic: settings.topic, partition, mark, committed: c, end: e, behind_log: Math.max(0, (c ?? 0) - (mark ?? 0)), lag: e - (mark ?? 0) };
    });
}

function workload(seed: number, perAgent: number, startTime?: string): Observation[] {
  return [...simulate({ agents: 3, observationsPerAgent: perAgent, scopesPerAgent: 2, duplicateRate: 0.1, conflictRate: 0.02, seed, ...(startTime ? { startTime } : {}) })].map((d) => d.observation);
}

async function foldAll(): Promise<void> {
  const worker = await FoldWorker.start(settings, quietLog);
  try {
    await waitCaughtUp(settings);
  } finally {
    await worker.stop();
  }
}

// One deployment walked through its states in order: each test starts from where the previous one left it.
describe("mufold status --json", () => {
  const first = workload(431, 20);
  const later = workload(432, 15, "2026-11-23T00:00:00Z");
  let folded: Map<number, number>;
  let live: number;
  let snapshot: Awaited<ReturnType<typeof snapshotPrefix>>;

  it("no topic yet: waiting_for_setup, naming the topic", async () => {
    const s = await status();
    expect(s).toMatchObject({ state: "waiting_for_setup", functions_loaded: true, generation: null, partitions: [], behind_log: 0, lag: 0, building: [] });
    expect(s.cause).toBe(`topic ${settings.topic} does not exist: run \`mufold setup\``);
    expect((await admin.listTopics()).includes(settings.topic)).toBe(false); // status created nothing
  });

  it("records but nothing folded: rebuilding (no live generation yet), everything lagging", async () => {
    await produce(settings, first.map(observationRecord));
    const end = await ends();
    const s = await status();
    expect(s).toMatchObject({ state: "rebuilding", generation: null, reducer_version: null, paused: false, building: [] });
    expect(s.cause).toBe("no live generation yet: nothing has been folded (a fold creates one when it starts)");
    expect(s.partitions).toEqual(rows(null, null, end));
    expect(s.lag).toBe(first.length);
  });

  it("folded: ready, every mark at the committed offset and the end; then records not folded yet show as lag only", async () => {
    await foldAll();
    folded = await ends();
    expect(comparePackets(await readAllPackets(settings), expectedPackets(first))).toEqual({ missing: [], extra: [], different: [] });
    live = Number(await redis.hget(`${settings.prefix}:control`, "generation"));
    const s = await status();
    expect(s).toMatchObject({ state: "ready", functions_loaded: true, generation: live, reducer_version: settings.reducerVersion, paused: false, building: [], behind_log: 0, lag: 0 });
    expect(s.partitions).toEqual(rows(folded, folded, folded));
    snapshot = await snapshotPrefix(redis, settings.prefix);

    await produce(settings, later.map(observationRecord));
    const end = await ends();
    const lagging = await status();
    expect(lagging.state).toBe("ready");
    expect(lagging.partitions).toEqual(rows(folded, folded, end));
    expect(lagging.lag).toBe(later.length);

    // The table for people says the same.
    const table = await mufoldStatus(settings, []);
    expect(table.code).toBe(0);
    expect(table.stdout.split("\n")[0]).toBe("mufold status: ready");
    for (const p of lagging.partitions) expect(table.stdout).toMatch(new RegExp(`\\n  ${settings.topic.replace(/\./g, "\\.")}:${p.partition} +${p.mark!.toLocaleString("en-US")} +`));
  });

  it("a replay being built is listed", async () => {
    const store = new RedisControlStore(redis, settings.prefix);
    const building = await store.allocateGeneration(settings.reducerVersion, "status-test-token", 60_000);
    cleanups.push(() => store.forgetGeneration(building));
    const s = await status();
    expect(s.building).toEqual([building]);
    expect(s.generation).toBe(live);
  });

  it("Redis gone back in time: behind_log, each partition behind by the records folded since the snapshot", async () => {
    await foldAll();
    const committed = await ends();
    await restorePrefix(redis, snapshot);
    expect(comparePackets(await readAllPackets(settings), expectedPackets(first))).toEqual({ missing: [], extra: [], different: [] });
    const s = await status();
    expect(s.state).toBe("behind_log");
    expect(s.generation).toBe(live);
    expect(s.partitions).toEqual(rows(folded, committed, committed));
    expect(s.behind_log).toBe(later.length);
    const behind = rows(folded, committed, committed).filter((r) => r.behind_log > 0);
    expect(behind.length).toBeGreaterThan(0);
    expect(s.cause).toBe(
      `${later.length} records committed but not folded: ` +
        behind.map((r) => `partition ${r.partition} is ${r.behind_log} records behind the group's committed offset ${r.committed} (mark ${r.mark})`).join("; "),
    );
  });

  it("Redis lost: rebuilding (no live generation while the group has committed offsets)", async () => {
    const committed = await ends();
    await dropPrefix(settings);
    const s = await status();
    expect(s).toMatchObject({ state: "rebuilding", generation: null, behind_log: later.length + first.length });
    expect(s.cause).toBe(`no live generation while group ${settings.group} has committed offsets: Redis lost the projections, which are rebuilt from offset 0`);
    expect(s.partitions).toEqual(rows(null, committed, committed));
  });

  it("no function libraries (a private Redis, never set up): waiting_for_setup; what only the functions tell is null", async () => {
    const empty = await PrivateRedis.start();
    cleanups.push(() => empty.remove());
    const s = await status({ ...settings, redisUrl: empty.url });
    expect(s).toMatchObject({ state: "waiting_for_setup", functions_loaded: false, generation: null, reducer_version: null, paused: null, building: null });
    expect(s.cause).toBe(`Redis at ${new URL(empty.url).host} has no function library mufold_v1: run \`mufold setup\` (as a Redis admin) to load mufold's function libraries`);
    // Kafka is still read: the group's committed offsets and the log's end.
    const committed = await ends();
    expect(s.partitions).toEqual(rows(null, committed, committed));
  });
});
