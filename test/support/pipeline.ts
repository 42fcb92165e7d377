/**
 * Integration-test helpers: every test gets its own topic, group and Redis
 * key prefix on the real broker and Redis, plus an oracle (the embedded
 * reducer) for what every packet must be.
 */
import { randomBytes } from "node:crypto";
import { spawn, type ChildProcess } from "node:child_process";
import { spawnFoldWorker, waitForGroup } from "../../consumers/fold/fold-process.js";
import { fileURLToPath } from "node:url";
import { connectRedis } from "../../src/adapters/redis/connect.js";
import { ensureSetup } from "../../src/adapters/redis/functions.js";
import { dropPrefix as dropKeys } from "../../src/adapters/redis/keyspace.js";
import { resolveSettings, type Settings } from "../../src/config/settings.js";
import { createLogger } from "../../src/observability/log.js";
import { expectedPackets } from "./oracle.js";

export { expectedPackets };
import { ProjectionReader } from "../../src/client/readback.js";

export const BIN = fileURLToPath(new URL("../../bin/mufold.js", import.meta.url));

/** Run the built `mufold` with these arguments and extra environment; resolves with its exit code and output. */
export function runMufold(args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

// The fold and the replay no longer load the Redis functions (`mufold setup` does, as an admin).
// Tests start them with FoldWorker.start, runReplay and spawnWorker on the shared Redis: load
// them once per test file, here, as the default user. Functions are server-wide, so this covers
// every prefix and database of REDIS_URL; a test on another Redis (a cluster) calls ensureSetup itself.
await ensureSetup(resolveSettings({}));

export function testSettings(overrides: Partial<Settings> = {}): Settings {
  const id = randomBytes(4).toString("hex");
  const base = resolveSettings({});
  return { ...base, topic: `mufold-test.${id}`, group: `mufold-test.${id}`, prefix: `mufold-test:${id}`, partitions: 4, ...overrides };
}

export const quietLog = createLogger({ test: true }, (process.env.MUFOLD_LOG_LEVEL as never) ?? "error");

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Wait until the group has committed every partition's end offset. */
export function waitCaughtUp(settings: Settings, timeoutMs = 120_000): Promise<void> {
  return waitForGroup(settings, timeoutMs);
}

export async function readAllPackets(settings: Settings): Promise<Map<string, string>> {
  // A reader's connection: no INFO ready check, which the reader ACL role does not allow.
  const redis = connectRedis({ url: settings.redisUrl, reader: true });
  try {
    const reader = new ProjectionReader(redis, settings.prefix);
    const out = new Map<string, string>();
    for (const id of await reader.identities()) out.set(id, (await reader.read(id)) ?? "<missing>");
    return out;
  } finally {
    await redis.quit();
  }
}

/** Assert the stored packets are exactly the expected ones (same identities, same bytes). */
export function comparePackets(actual: Map<string, string>, expected: Map<string, string>): { missing: string[]; extra: string[]; different: string[] } {
  const missing = [...expected.keys()].filter((k) => !actual.has(k));
  const extra = [...actual.keys()].filter((k) => !expected.has(k));
  const different = [...expected.keys()].filter((k) => actual.has(k) && actual.get(k) !== expected.get(k));
  return { missing, extra, different };
}

/** A fold worker in its own process (so it can be killed like a real one). */
export function spawnWorker(settings: Settings, extraEnv: Record<string, string> = {}): ChildProcess {
  return spawnFoldWorker(settings, extraEnv);
}

export async function stopWorker(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode; // already gone (a signal leaves exitCode null)
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  child.kill(signal);
  return exited;
}

/** Remove every Redis key under a test prefix. */
export async function dropPrefix(settings: Settings): Promise<void> {
  const redis = connectRedis(settings.redisUrl);
  try {
    await dropKeys(redis, settings.prefix);
  } finally {
    await redis.quit();
  }
}
