/**
 * Safe defaults on a shared cluster (issue 9), on the real broker and on
 * private redis-servers (their own ports, stopped after):
 *
 * - `mufold setup` creates the topics with the broker's default replication
 *   factor (CreateTopics with -1, KIP-464, through kafkajs's CreateTopics v3),
 *   and an explicit --replication-factor reaches the broker.
 * - An evicting maxmemory-policy (allkeys-lru) stops setup and the fold with
 *   one line naming the policy and the override; with the override they run
 *   and warn. A Redis that persists nothing gets one warning.
 * - The fold and the replay load no functions: on a fresh Redis they stop
 *   with "run `mufold setup`", setup loads them, another build's code is
 *   refused, and a store that finds them gone says so instead of reloading.
 *
 * Spawns bin/mufold.js: `npm run build` first.
 */
import { until } from "../support/wait.js";
import { settingsEnv } from "../../consumers/fold/fold-process.js";
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import kafkajs from "kafkajs";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { runReplay } from "../../consumers/replay/replay.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { createKafka, kafkaClientSettings } from "../../src/adapters/kafka/client.js";
import { topicRetention } from "../../src/adapters/kafka/topics.js";
import { connectRedis } from "../../src/adapters/redis/connect.js";
import { FunctionsMissingError } from "../../src/adapters/redis/errors.js";
import { LIBRARY_NAME, CONTROL_LIBRARY_NAME, ensureSetup, librarySource, libraries } from "../../src/adapters/redis/functions.js";
import { RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import type { Settings } from "../../src/config/settings.js";
import type { Logger } from "../../src/observability/log.js";
import { ProjectionReader } from "../../src/client/readback.js";
import { PrivateRedis } from "../support/private-redis.js";
import { BIN, comparePackets, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

/** Run bin/mufold.js with these settings in its environment; resolves with its exit code and output. */
function mufold(args: string[], settings: Settings, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const base = { ...process.env };
  delete base.MUFOLD_PROPOSALS_TOPIC;
  delete base.MUFOLD_REPLICATION_FACTOR;
  delete base.MUFOLD_ALLOW_EVICTING_POLICY;
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...base, ...settingsEnv(settings), MUFOLD_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

/** The JSON log lines of a command's stderr. */
const jsonLines = (stderr: string) =>
  stderr
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as { level: string; msg: string; exitCode?: number });

function capturingLog(lines: { level: string; msg: string }[]): Logger {
  const at = (level: string) => (msg: string) => void lines.push({ level, msg });
  const log: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: () => log };
  return log;
}

async function privateRedis(args: string[]): Promise<{ server: PrivateRedis; admin: Redis }> {
  const server = await PrivateRedis.start(args);
  cleanups.push(() => server.remove());
  const admin = new Redis(server.url);
  cleanups.push(() => admin.quit());
  return { server, admin };
}

/** The names of the libraries a Redis holds. */
async function libraryNames(admin: Redis): Promise<string[]> {
  const reply = (await admin.call("FUNCTION", "LIST")) as unknown[][];
  return reply.map((lib) => String(lib[lib.indexOf("library_name") + 1])).sort();
}

function workload(seed: number) {
  return [...simulate({ agents: 4, observationsPerAgent: 20, duplicateRate: 0.1, conflictRate: 0.02, snapshotEvery: 10, seed })].map((d) => d.observation);
}

function kafkaAdmin(settings: Settings) {
  const admin = createKafka(kafkaClientSettings(settings, "-test")).admin();
  cleanups.push(() => admin.disconnect());
  return admin;
}

describe("topics: replication factor", () => {
  it("mufold setup creates the topics with the broker's default replication factor; an explicit one reaches the broker", async () => {
    const settings = testSettings();
    const admin = kafkaAdmin(settings);
    await admin.connect();
    const dlq = `${settings.topic}.dlq`;
    cleanups.push(() => admin.deleteTopics({ topics: [settings.topic, dlq] }));

    const first = await mufold(["setup"], settings);
    expect(first.stderr).not.toContain('"level":"fatal"');
    expect(first.code).toBe(0);
    const summary = JSON.parse(first.stdout) as { topics: { created: string[]; existing: string[]; replicationFactor: unknown }; redis: { libraries: string[] } };
    expect(summary.topics).toEqual({ created: [settings.topic, dlq], existing: [], replicationFactor: "broker" });
    expect(summary.redis.libraries).toEqual([LIBRARY_NAME, CONTROL_LIBRARY_NAME]);

    // What the broker would choose: its default.replication.factor (describeConfigs on a broker).
    const cluster = await admin.describeCluster();
    const config = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: kafkajs.ConfigResourceTypes.BROKER, name: String(cluster.brokers[0]!.nodeId), configNames: ["default.replication.factor"] }],
    });
    const brokerDefault = Number(config.resources[0]!.configEntries.find((e) => e.configName === "default.replication.factor")!.configValue);
    expect(brokerDefault).toBeGreaterThanOrEqual(1);
    const metadata = await admin.fetchTopicMetadata({ topics: [settings.topic, dlq] });
    for (const topic of metadata.topics) {
      expect(topic.partitions, topic.name).toHaveLength(settings.partitions);
      for (const p of topic.partitions) expect(p.replicas, `${topic.name}[${p.partitionId}]`).toHaveLength(brokerDefault);
    }
    expect(await topicRetention(admin, settings.topic)).toEqual({ retentionMs: "-1", retentionBytes: "-1" });

    // Idempotent: the second run creates nothing.
    const again = await mufold(["setup"], settings);
    expect(again.code).toBe(0);
    expect((JSON.parse(again.stdout) as typeof summary).topics).toEqual({ created: [], existing: [settings.topic, dlq], replicationFactor: "broker" });

    // More replicas than brokers: the broker refuses, so the number did reach it; nothing is created.
    const other = testSettings();
    const tooMany = cluster.brokers.length + 1;
    const refused = await mufold(["setup", "--replication-factor", String(tooMany)], other);
    cleanups.push(() => admin.deleteTopics({ topics: [other.topic, `${other.topic}.dlq`] }));
    expect(refused.code).toBe(2);
    const [fatal] = jsonLines(refused.stderr).filter((l) => l.level === "fatal");
    expect(fatal!.msg).toContain(`the broker refused to create ${other.topic} (${other.partitions} partitions, replication factor ${tooMany})`);
    expect(fatal!.msg).toContain("INVALID_REPLICATION_FACTOR");
    expect((await admin.listTopics()).filter((t) => t.startsWith(other.topic))).toEqual([]);
  });
});

describe("Redis maxmemory-policy and persistence", () => {
  it("allkeys-lru: setup and the fold refuse it, naming the policy and the override; with the override they run and warn", async () => {
    const { admin } = await privateRedis(["--maxmemory-policy", "allkeys-lru", "--appendonly", "no"]);
    expect(await admin.info("persistence")).toContain("aof_enabled:0");
    const settings = testSettings({ redisUrl: `redis://127.0.0.1:${admin.options.port}` });
    const override = "--allow-evicting-policy (MUFOLD_ALLOW_EVICTING_POLICY=true)";

    // Setup refuses before it loads anything.
    const setup = await mufold(["setup", "--skip-topics"], settings);
    expect(setup.code).toBe(2);
    const setupLines = jsonLines(setup.stderr);
    expect(setupLines).toHaveLength(1);
    expect(setupLines[0]).toMatchObject({ level: "fatal", exitCode: 2 });
    expect(setupLines[0]!.msg).toContain(`127.0.0.1:${admin.options.port} has maxmemory-policy allkeys-lru`);
    expect(setupLines[0]!.msg).toContain(override);
    expect(await libraryNames(admin)).toEqual([]);

    // The fold (the functions loaded, as an admin would have with the override) refuses too: one line, exit 2.
    await ensureSetup(settings);
    const observations = workload(91);
    await produce(settings, observations.map(observationRecord));
    const fold = await mufold(["fold"], settings);
    expect(fold.code).toBe(2);
    const foldLines = jsonLines(fold.stderr);
    expect(foldLines).toHaveLength(1);
    expect(foldLines[0]).toMatchObject({ level: "fatal", command: "fold", exitCode: 2 });
    expect(foldLines[0]!.msg).toContain("maxmemory-policy allkeys-lru");
    expect(foldLines[0]!.msg).toContain(override);

    // With the override the fold starts, warns (the policy; no persistence), and folds.
    const lines: { level: string; msg: string }[] = [];
    const worker = await FoldWorker.start({ ...settings, allowEvictingPolicy: true }, capturingLog(lines));
    cleanups.push(() => worker.stop());
    const warnings = lines.filter((l) => l.level === "warn").map((l) => l.msg);
    expect(warnings.filter((m) => m.includes("maxmemory-policy allkeys-lru") && m.includes("running anyway"))).toHaveLength(1);
    // The fold may not CONFIG GET: it cannot see RDB save points, and says so.
    expect(warnings.filter((m) => m.includes("AOF is off") && m.includes("RDB save points were not checked"))).toHaveLength(1);
    await waitCaughtUp(settings);
    expect(comparePackets(await readAllPackets(settings), expectedPackets(observations))).toEqual({ missing: [], extra: [], different: [] });
    await worker.stop();
    cleanups.pop();

    // Setup with the override runs; as an admin it reads CONFIG GET save and reports no persistence at all.
    const allowed = await mufold(["setup", "--skip-topics", "--allow-evicting-policy"], settings);
    expect(allowed.code).toBe(0);
    expect(JSON.parse(allowed.stdout)).toMatchObject({ redis: { masters: [{ maxmemoryPolicy: "allkeys-lru", aof: false, rdb: "off" }] }, topics: null });
    const allowedWarnings = jsonLines(allowed.stderr).map((l) => [l.level, l.msg] as const);
    expect(allowedWarnings).toHaveLength(2);
    expect(allowedWarnings[0]![1]).toContain("running anyway");
    expect(allowedWarnings[1]![1]).toContain("persists nothing");

    // noeviction and AOF on: setup is silent.
    await admin.config("SET", "maxmemory-policy", "noeviction");
    await admin.config("SET", "appendonly", "yes");
    await until("AOF on", async () => (await admin.info("persistence")).includes("aof_enabled:1"), 30_000);
    const quiet = await mufold(["setup", "--skip-topics"], settings);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe("");
    expect(JSON.parse(quiet.stdout)).toMatchObject({ redis: { masters: [{ maxmemoryPolicy: "noeviction", aof: true }] } });
  });
});

describe("the Redis functions are loaded by mufold setup only", () => {
  it("the fold and the replay refuse a Redis without them ('run `mufold setup`'); setup loads them; another build's code is refused; a lost library is not reloaded", async () => {
    const { admin } = await privateRedis([]);
    const settings = testSettings({ redisUrl: `redis://127.0.0.1:${admin.options.port}` });
    const observations = workload(92);
    await produce(settings, observations.map(observationRecord));

    // The fold waits for setup within the outage tolerance (not ready meanwhile), then gives up naming it.
    const impatient = { ...settings, outageToleranceSeconds: 1 };
    await expect(FoldWorker.start(impatient, quietLog)).rejects.toThrow(new RegExp(`has no function library ${LIBRARY_NAME}: run \`mufold setup\`.*\\(waited 1s, MUFOLD_OUTAGE_TOLERANCE_SECONDS`));
    await expect(runReplay(settings, { verify: true, promote: false }, quietLog)).rejects.toThrow(/run `mufold setup`/);
    const fold = await mufold(["fold"], impatient);
    expect(fold.code).toBe(2);
    expect(jsonLines(fold.stderr)).toEqual([
      expect.objectContaining({ level: "error", msg: expect.stringMatching(/^waiting for `mufold setup`/) }),
      expect.objectContaining({ level: "fatal", command: "fold", msg: expect.stringMatching(/run `mufold setup`/) }),
    ]);
    expect(await libraryNames(admin)).toEqual([]); // none of them loaded anything

    const setup = await mufold(["setup", "--skip-topics"], settings);
    expect(setup.code).toBe(0);
    expect(await libraryNames(admin)).toEqual([CONTROL_LIBRARY_NAME, LIBRARY_NAME].sort());
    for (const { name, source } of libraries()) {
      const [lib] = (await admin.call("FUNCTION", "LIST", "LIBRARYNAME", name, "WITHCODE")) as unknown[][];
      expect(lib![lib!.indexOf("library_code") + 1]).toBe(source);
    }

    const worker = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => worker.stop());
    await waitCaughtUp(settings);
    const expected = expectedPackets(observations);
    expect(comparePackets(await readAllPackets(settings), expected)).toEqual({ missing: [], extra: [], different: [] });
    await worker.stop();
    cleanups.pop();

    // Redis loses the libraries: a read says to run setup, and loads nothing.
    await admin.function("FLUSH");
    const client = connectRedis(settings.redisUrl);
    cleanups.push(() => client.quit());
    const reader = new ProjectionReader(client, settings.prefix);
    const [identity] = [...expected.keys()];
    const lost = await reader.read(identity!).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(FunctionsMissingError);
    expect((lost as FunctionsMissingError).retriable).toBe(true);
    expect((lost as Error).message).toMatch(/Redis has no function mufold_read_v1: run `mufold setup`/);
    expect(await libraryNames(admin)).toEqual([]);
    // The fold's own store calls (apply) fail the same way.
    await expect(new RedisIdentityStore(client, settings.prefix).apply(1, identity!, 0, new Map([["w:t:0", 1n]]), [])).rejects.toThrow(/Redis has no function mufold_apply_v4: run `mufold setup`/);

    // Another build's code under the same name is refused at start.
    await ensureSetup(settings);
    await admin.call("FUNCTION", "LOAD", "REPLACE", `${librarySource()}\n-- another build\n`);
    await expect(FoldWorker.start(impatient, quietLog)).rejects.toThrow(new RegExp(`the function library ${LIBRARY_NAME} on Redis at .* is not the one this mufold ships.*run \`mufold setup\``));
  });
});
