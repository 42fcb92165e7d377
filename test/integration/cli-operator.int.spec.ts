/**
 * The mufold process as an operator meets it (bin/mufold.js, built in dist/):
 * endpoints that refuse, stay silent or reject the password end the command
 * with one line naming them, in time; a topic that does not exist stops a
 * replay; a closed stdout ends quietly; /readyz tells clients names and
 * states only. Kafka and Redis are the shared ones (KAFKA_BROKERS, REDIS_URL).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { awaitTopicLeaders } from "../../src/adapters/kafka/topics.js";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { simulate } from "../../producers/simulation.js";
import { observationToPy, canonicalJson, utilityProject } from "../../src/core/index.js";
import { conformanceCases } from "../support/conformance.js";
import { BIN, dropPrefix, expectedPackets, quietLog, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { REPO_ROOT } from "../support/reference.js";

const settings = testSettings();
const dir = mkdtempSync(join(tmpdir(), "mufold-operator-"));
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run bin/mufold.js; `closeStdout` closes the reading end of its stdout before it writes. */
function mufold(args: string[], env: Record<string, string | undefined> = {}, opts: { closeStdout?: boolean; killAfterMs?: number } = {}): Promise<Run> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: REPO_ROOT, env: { ...process.env, MUFOLD_LOG_LEVEL: "info", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  if (opts.closeStdout) child.stdout.destroy();
  else child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const killer = setTimeout(() => child.kill("SIGKILL"), opts.killAfterMs ?? 60_000);
  return new Promise((resolve) => {
    child.on("close", (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

const lines = (text: string) => text.split("\n").filter((l) => l !== "");
/** The fatal JSON log line of fold, serve or replay (the last line on stderr). */
const fatal = (r: Run) => JSON.parse(lines(r.stderr).at(-1)!) as { level: string; command: string; exitCode: number; msg: string };

/** A TCP server that accepts connections and never says a word. */
async function silentServer(): Promise<{ port: number; connections(): number; close(): Promise<void> }> {
  const sockets: Socket[] = [];
  const server: Server = createServer((s) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => sockets.length,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

const observationsFile = join(dir, "observations.jsonl");
const observations = [...simulate({ agents: 3, observationsPerAgent: 8, duplicateRate: 0, conflictRate: 0, seed: 21 })].map((d) => d.observation);
writeFileSync(observationsFile, observations.map((o) => canonicalJson(observationToPy(o))).join("\n") + "\n");

describe("unreachable endpoints at start: one line naming them, within the connect timeout", () => {
  it("refused: read (Redis) and produce (Kafka) give up within the 10 s default", async () => {
    const [read, produce] = await Promise.all([
      mufold(["read", "--list"], { REDIS_URL: "redis://127.0.0.1:1" }),
      mufold(["produce", "--input", observationsFile], { KAFKA_BROKERS: "127.0.0.1:1" }),
    ]);
    expect(read.code).toBe(1);
    expect(read.stderr).toBe("mufold read: cannot reach Redis at redis://127.0.0.1:1 within 10000 ms: connect ECONNREFUSED 127.0.0.1:1\n");
    expect(produce.code).toBe(1);
    expect(lines(produce.stderr)).toHaveLength(1);
    expect(produce.stderr).toMatch(/^mufold produce: cannot reach Kafka at 127\.0\.0\.1:1( within 10000 ms)?: .*ECONNREFUSED/);
  });

  it("silent (accepts, never answers): the same, after --connect-timeout-ms", async () => {
    const silent = await silentServer();
    cleanups.push(() => silent.close());
    const [read, produce] = await Promise.all([
      mufold(["read", "--list", "--connect-timeout-ms", "1500"], { REDIS_URL: `redis://127.0.0.1:${silent.port}` }),
      mufold(["produce", "--input", observationsFile], { KAFKA_BROKERS: `127.0.0.1:${silent.port}`, MUFOLD_CONNECT_TIMEOUT_MS: "1500" }),
    ]);
    expect(read).toMatchObject({ code: 1, stderr: `mufold read: cannot reach Redis at redis://127.0.0.1:${silent.port} within 1500 ms: no answer\n` });
    expect(produce).toMatchObject({ code: 1, stderr: `mufold produce: cannot reach Kafka at 127.0.0.1:${silent.port} within 1500 ms: no answer\n` });
  });

  it("fold and replay report it as one JSON log line", async () => {
    // The replay's topic exists: only Redis is missing.
    const topic = `mufold-replay.${randomBytes(4).toString("hex")}`;
    const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test" }).admin();
    await admin.connect();
    await admin.createTopics({ waitForLeaders: false, topics: [{ topic, numPartitions: 1 }] });
    await awaitTopicLeaders(admin, [{ topic, partitions: 1 }]);
    cleanups.push(async () => {
      await admin.deleteTopics({ topics: [topic] });
      await admin.disconnect();
    });
    const [fold, replay] = await Promise.all([
      mufold(["fold", "--connect-timeout-ms", "1500"], { KAFKA_BROKERS: "127.0.0.1:1" }),
      mufold(["replay", "--connect-timeout-ms", "1500"], { REDIS_URL: "redis://127.0.0.1:1", MUFOLD_TOPIC: topic }),
    ]);
    expect(fold.code).toBe(1);
    expect(lines(fold.stderr)).toHaveLength(1);
    expect(fatal(fold)).toMatchObject({ level: "fatal", command: "fold", exitCode: 1 });
    expect(fatal(fold).msg).toMatch(/^cannot reach Kafka at 127\.0\.0\.1:1/);
    expect(replay.code).toBe(1);
    expect(fatal(replay)).toMatchObject({ level: "fatal", command: "replay", exitCode: 1, msg: "cannot reach Redis at redis://127.0.0.1:1 within 1500 ms: connect ECONNREFUSED 127.0.0.1:1" });
  });
});

describe("a wrong Redis password", () => {
  const user = `mufold-cli-${randomBytes(4).toString("hex")}`;
  const wrong = "wr@ng:pa%ss-sekrit";
  let admin: Redis;
  let url: string;
  beforeAll(async () => {
    admin = new Redis(settings.redisUrl);
    await admin.call("ACL", "SETUSER", user, "on", ">the-right-one", "~*", "+@all");
    const base = new URL(settings.redisUrl);
    url = `redis://${user}:${encodeURIComponent(wrong)}@${base.host}`;
  });
  afterAll(async () => {
    await admin.call("ACL", "DELUSER", user);
    await admin.quit();
  });

  it("fails fast with one line, without the password, for read, fold and serve", async () => {
    const [read, fold, serve] = await Promise.all([
      mufold(["read", "--list"], { REDIS_URL: url }),
      mufold(["fold"], { REDIS_URL: url, MUFOLD_TOPIC: settings.topic }),
      mufold(["serve", "--port", "0"], { REDIS_URL: url }, { killAfterMs: 15_000 }),
    ]);
    expect(read.code).toBe(2);
    expect(read.stderr).toMatch(new RegExp(`^mufold read: Redis at redis://${user}:\\*\\*\\*@[^ ]+ refused the credentials: WRONGPASS[^\\n]*\\n$`));
    expect(fold.code).toBe(2);
    expect(fatal(fold).msg).toMatch(/refused the credentials: WRONGPASS/);
    expect(serve.code).toBe(2);
    expect(fatal(serve)).toMatchObject({ level: "fatal", command: "serve", exitCode: 2 });
    expect(fatal(serve).msg).toMatch(/refused the credentials: WRONGPASS/);
    for (const r of [read, fold, serve]) expect(r.stderr).not.toContain("sekrit");
  });
});

describe("replay of a topic that does not exist", () => {
  it("says so in one line, exit 2, and does not create it", async () => {
    const topic = `mufold-missing.${randomBytes(4).toString("hex")}`;
    const r = await mufold(["replay", "--verify"], { MUFOLD_TOPIC: topic, MUFOLD_PREFIX: settings.prefix });
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(fatal(r).msg).toBe(`topic "${topic}" does not exist on Kafka at ${settings.brokers.join(",")}: nothing to replay (check --topic / MUFOLD_TOPIC)`);
    const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test" }).admin();
    await admin.connect();
    try {
      expect(await admin.listTopics()).not.toContain(topic);
    } finally {
      await admin.disconnect();
    }
  });
});

describe("read and a closed stdout", () => {
  it("produce sends, read prints the packet by identity and by scope, and a closed stdout ends quietly", async () => {
    cleanups.push(() => dropPrefix(settings));
    const env = { KAFKA_BROKERS: settings.brokers.join(","), MUFOLD_TOPIC: settings.topic, MUFOLD_PREFIX: settings.prefix, MUFOLD_PARTITIONS: "4" };
    const produced = await mufold(["produce", "--input", observationsFile], env);
    expect(produced.stderr).toBe("");
    expect(JSON.parse(produced.stdout)).toEqual({ invalid: 0, sent: observations.length, topic: settings.topic });
    const worker = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => worker.stop());
    await waitCaughtUp(settings);

    const expected = expectedPackets(observations);
    const [identity, packet] = [...expected][0]!;
    const byId = await mufold(["read", "--identity", identity, "--validate"], env);
    expect(byId).toMatchObject({ code: 0, stdout: packet + "\n", stderr: "" });
    const { scope, retrieval_snapshot_ref, policy_snapshot_ref } = JSON.parse(packet) as { scope: Record<string, string>; retrieval_snapshot_ref: string; policy_snapshot_ref: string };
    const byScope = await mufold(
      ["read", "--agent", scope.agent_id!, "--project", scope.project_id!, "--corpus", scope.corpus_id!, "--surface", scope.surface_id!, "--retrieval", retrieval_snapshot_ref, "--policy", policy_snapshot_ref],
      env,
    );
    expect(byScope.stdout).toBe(packet + "\n");

    const closed = await mufold(["read", "--identity", identity], env, { closeStdout: true });
    expect(closed).toMatchObject({ code: 141, stderr: "" });
    const unknown = await mufold(["read", "--identity", `mur_${"0".repeat(64)}`], env);
    expect(unknown).toMatchObject({ code: 3, stdout: "", stderr: `mufold read: no projection for identity mur_${"0".repeat(64)}\n` });
  });

  it("reward-memory utility-project with its stdout closed: exit 141, no EPIPE stack", async () => {
    const biggest = conformanceCases()
      .map((c) => JSON.stringify(c.input))
      .sort((a, b) => utilityProject(b).stdout.length - utilityProject(a).stdout.length)[0]!;
    const input = join(dir, "big.json");
    writeFileSync(input, biggest);
    const r = await mufold(["reward-memory", "utility-project", "--input", input], {}, { closeStdout: true });
    expect(r).toMatchObject({ code: 141, stderr: "" });
  });
});

describe("serve with Redis down", () => {
  it("/readyz answers 503 with check names and states only; the reason goes to the log", async () => {
    const child = spawn(process.execPath, [BIN, "serve", "--port", "0"], { cwd: REPO_ROOT, env: { ...process.env, REDIS_URL: "redis://127.0.0.1:1", MUFOLD_LOG_LEVEL: "info" } });
    let stderr = "";
    const exited = new Promise<number | null>((r) => child.on("close", r));
    cleanups.push(async () => {
      child.kill("SIGKILL");
      await exited;
    });
    const port = await new Promise<number>((resolve, reject) => {
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
        const serving = lines(stderr).map((l) => JSON.parse(l) as { msg: string; port?: number }).find((l) => l.msg === "serving");
        if (serving?.port !== undefined) resolve(serving.port);
      });
      void exited.then(() => reject(new Error(`serve exited: ${stderr}`)));
    });
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    const body = await res.text();
    expect(res.status).toBe(503);
    expect(JSON.parse(body)).toEqual({ error: "not ready: redis", reason: "not_ready", failing: ["redis"], checks: { redis: "failing" } });
    for (const leak of ["ECONNREFUSED", "127.0.0.1:1", "connection", "Redis"]) expect(body).not.toContain(leak);
    // The detail is logged for the operator.
    await expect.poll(() => lines(stderr).some((l) => l.includes('"msg":"not ready"') && l.includes('"check":"redis"'))).toBe(true);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});

describe("start-up checks in a real process", () => {
  it("fold --http-port abc exits 2 at once, checked as serve checks its port, without connecting anywhere", async () => {
    const silent = await silentServer();
    cleanups.push(() => silent.close());
    const env = { KAFKA_BROKERS: `127.0.0.1:${silent.port}`, REDIS_URL: `redis://127.0.0.1:${silent.port}` };
    const [fold, serve] = await Promise.all([
      mufold(["fold", "--http-port", "abc"], env, { killAfterMs: 10_000 }),
      mufold(["serve", "--http-port", "abc"], env, { killAfterMs: 10_000 }),
    ]);
    for (const r of [fold, serve]) {
      expect(r.code).toBe(2);
      expect(fatal(r).msg).toBe('invalid setting httpPort (--http-port / MUFOLD_HTTP_PORT) = "abc": must be a port number from 0 to 65535');
    }
    expect(silent.connections()).toBe(0);
  });

  it("demo --help and --version answer without connecting anywhere", async () => {
    const silent = await silentServer();
    cleanups.push(() => silent.close());
    const env = { KAFKA_BROKERS: `127.0.0.1:${silent.port}`, REDIS_URL: `redis://127.0.0.1:${silent.port}` };
    const help = await mufold(["demo", "--help"], env, { killAfterMs: 10_000 });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: mufold demo /);
    const version = await mufold(["--version"], env);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
    expect(silent.connections()).toBe(0);
  });
});
