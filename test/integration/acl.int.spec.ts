/**
 * The least-privilege Redis ACL roles of infra/redis-acl/roles.acl (shown in
 * docs/security.md), on the real Redis: after `mufold setup` as the default
 * user (an admin) loaded the functions, the fold and a replay --verify run as
 * the fold user, a replay --promote as the replay user (the fold's rules and
 * SCAN), and produce exactly the reducer's packets; the reader user reads
 * them, without INFO, and cannot write anything; none can leave the key
 * prefix, the fold user cannot list key names (SCAN, KEYS) and can neither
 * load nor run Lua of its own, and a function it calls runs with its rights.
 * Every test creates its own users (unique names) and deletes them after.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Redis } from "ioredis";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { runReplay } from "../../consumers/replay/replay.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { RedisAuthError, connectRedis, openRedis, readerClientSettings, redisClientSettings, type RedisClient } from "../../src/adapters/redis/connect.js";
import { APPLY_FUNCTION, ensureSetup, librarySource } from "../../src/adapters/redis/functions.js";
import { resolveSettings, type Settings } from "../../src/config/settings.js";
import { controlKey, identityKeys, indexKey } from "../../src/adapters/redis/keys.js";
import { ProjectionReader } from "../../src/client/readback.js";
import { comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { PrivateRedis } from "../support/private-redis.js";

const ROLES_FILE = new URL("../../infra/redis-acl/roles.acl", import.meta.url);

/** The rule lists of roles.acl, by role, with the prefix filled in. */
function roles(prefix: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const line of readFileSync(ROLES_FILE, "utf8").split("\n")) {
    const m = /^([a-z0-9.-]+):\s+(.+)$/.exec(line.trim());
    if (m !== null) out[m[1]!] = m[2]!.replaceAll("{prefix}", prefix).split(/\s+/);
  }
  return out;
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

/** Run a command as one user and return its error message ("" if it succeeded). */
async function denial(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "";
  } catch (err) {
    return (err as Error).message;
  }
}

/** The rules every user gets on this Redis besides its role's: CLIENT SETINFO on 7.2 and later. */
async function versionRules(admin: Redis, r: Record<string, string[]>): Promise<string[]> {
  const info = String(await admin.info("server"));
  const [major, minor] = (/redis_version:(\d+)\.(\d+)/.exec(info) ?? []).slice(1).map(Number);
  const newer = (major ?? 0) > 7 || ((major ?? 0) === 7 && (minor ?? 0) >= 2);
  return newer ? r["redis-7.2"]! : [];
}

/** As docs/security.md says: reset, on, the password's SHA-256, then the rules. Deleted after the test. */
async function createUser(admin: Redis, user: string, password: string, rules: string[]): Promise<void> {
  cleanups.push(() => admin.call("ACL", "DELUSER", user));
  const hash = createHash("sha256").update(password).digest("hex");
  await admin.call("ACL", "SETUSER", user, "reset", "on", `#${hash}`, ...rules);
}

/** A Redis URL with a user's credentials. */
function withUser(url: string, user: string, password?: string): string {
  const u = new URL(url);
  u.username = encodeURIComponent(user);
  u.password = password === undefined ? "" : encodeURIComponent(password);
  return u.toString();
}

interface AclEnv {
  admin: Redis;
  base: Settings;
  foldUser: string;
  replayUser: string;
  readerUser: string;
  foldPassword: string;
  replayPassword: string;
  readerPassword: string;
  /** redisUrl with a user's credentials. */
  urlFor(user: string, password?: string): string;
}

async function aclEnv(): Promise<AclEnv> {
  const base = testSettings();
  if (/\+cluster:/.test(base.redisUrl)) throw new Error("acl.int.spec.ts needs a one-node Redis (REDIS_URL redis:// or rediss://)");
  const admin = new Redis(base.redisUrl);
  cleanups.push(() => admin.quit());
  const id = randomBytes(4).toString("hex");
  const env: AclEnv = {
    admin,
    base,
    foldUser: `mufold-test-fold-${id}`,
    replayUser: `mufold-test-replay-${id}`,
    readerUser: `mufold-test-reader-${id}`,
    foldPassword: randomBytes(16).toString("hex"),
    replayPassword: randomBytes(16).toString("hex"),
    readerPassword: randomBytes(16).toString("hex"),
    urlFor: (user, password) => withUser(base.redisUrl, user, password),
  };
  const r = roles(base.prefix);
  const extra = await versionRules(admin, r);
  await createUser(admin, env.foldUser, env.foldPassword, [...r.fold!, ...extra]);
  // The replay user: the fold's rules and the replay's (SCAN).
  await createUser(admin, env.replayUser, env.replayPassword, [...r.fold!, ...r.replay!, ...extra]);
  await createUser(admin, env.readerUser, env.readerPassword, [...r.reader!, ...extra]);
  cleanups.push(() => dropPrefix(base));
  // `mufold setup` as the default user, the admin: the fold role cannot load the functions.
  await ensureSetup(base);
  return env;
}

function workload(seed: number) {
  return [...simulate({ agents: 6, observationsPerAgent: 30, duplicateRate: 0.15, conflictRate: 0.03, snapshotEvery: 15, seed })].map((d) => d.observation);
}

/** ACL LOG entries (denials) of the given users. */
async function aclDenials(admin: Redis, users: string[]): Promise<Record<string, string>[]> {
  const raw = (await admin.call("ACL", "LOG", "1000")) as unknown[][];
  const entries = raw.map((flat) => {
    const e: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) e[String(flat[i])] = String(flat[i + 1]);
    return e;
  });
  return entries.filter((e) => users.includes(e.username ?? "")).map((e) => ({ username: e.username!, reason: e.reason!, object: e.object! }));
}

/** Every key name SCAN finds for a pattern. */
async function scanAll(redis: Redis, match: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", match, "COUNT", 1000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return found;
}

describe("least-privilege Redis ACL users (infra/redis-acl/roles.acl)", () => {
  it("the fold and a replay --verify run as the fold user, a replay --promote as the replay user; the reader user reads; writes, other prefixes and listing key names are refused", async () => {
    const env = await aclEnv();
    const { admin, base } = env;
    const fold: Settings = { ...base, redisUrl: env.urlFor(env.foldUser, env.foldPassword) };
    const replay: Settings = { ...base, redisUrl: env.urlFor(env.replayUser, env.replayPassword) };
    const read: Settings = { ...base, redisUrl: env.urlFor(env.readerUser, env.readerPassword) };
    const observations = workload(31);
    const expected = expectedPackets(observations);

    await produce(fold, observations.map(observationRecord));
    const worker = await FoldWorker.start(fold, quietLog);
    cleanups.push(() => worker.stop());
    await waitCaughtUp(fold);
    expect(comparePackets(await readAllPackets(read), expected)).toEqual({ missing: [], extra: [], different: [] });

    // Replay --verify (no promote) as the fold user: it rebuilds, compares and drops its shadow generation without SCAN.
    const verified = await runReplay(fold, { verify: true, promote: false }, quietLog);
    expect(verified).toMatchObject({ promoted: false, mismatches: 0, verified: true });
    expect(verified.verify?.compared).toBe(expected.size);
    expect(await admin.exists(indexKey(base.prefix, verified.rebuiltGeneration!))).toBe(0);

    // Replay --verify --promote as the replay user while the worker runs (it acknowledges the pause).
    const summary = await runReplay(replay, { verify: true, promote: true, dropAfterSeconds: 0 }, quietLog);
    expect(summary).toMatchObject({ promoted: true, mismatches: 0, verified: true });
    // Generation numbers are never reused: the rebuild gets a new, higher one.
    expect(summary.rebuiltGeneration).toBeGreaterThan(summary.liveGeneration!);
    expect(summary.verify?.compared).toBe(expected.size);
    // The old generation, found by SCAN, was dropped.
    expect(await admin.exists(indexKey(base.prefix, summary.liveGeneration!))).toBe(0);
    await waitCaughtUp(fold);
    expect(comparePackets(await readAllPackets(read), expected)).toEqual({ missing: [], extra: [], different: [] });
    await worker.stop();
    cleanups.pop();

    // The reader: the packet through ProjectionReader (HMGET control, FCALL_RO), the index (SSCAN),
    // on a reader's connection (no INFO ready check: the role has no INFO). ioredis would warn on
    // stderr if its ready check were refused.
    const warned = vi.spyOn(console, "warn");
    const reader = connectRedis(readerClientSettings(read));
    cleanups.push(() => reader.quit());
    const projections = new ProjectionReader(reader, base.prefix);
    const [identity, packet] = [...expected][0]!;
    expect(await projections.read(identity)).toBe(packet);
    expect((await projections.identities()).length).toBe(expected.size);
    expect(await reader.hget(controlKey(base.prefix), "generation")).toBe(String(summary.rebuiltGeneration));
    expect(warned).not.toHaveBeenCalled();

    // So far nothing was denied: the handshake (AUTH, the fold's INFO ready check, CLIENT SETINFO on 7.2+), the fold's
    // start checks (FUNCTION LIST, INFO memory and persistence) and every command of the fold, the replays and the reader
    // are in the roles; the fold's has no SCAN, so neither the fold nor a replay without --promote sent one.
    expect(await aclDenials(admin, [env.foldUser, env.replayUser, env.readerUser])).toEqual([]);

    // Every write attempt of the reader fails with NOPERM, and changes nothing.
    const keys = identityKeys(base.prefix, 2, identity);
    const writes: [string, Promise<unknown>][] = [
      ["HSET on a part", reader.hset(keys[2]!, "x", "y")],
      ["HSET on the control hash", reader.hset(controlKey(base.prefix), "generation", "1")],
      ["SET", reader.set(`${base.prefix}:x`, "y")],
      [`FCALL ${APPLY_FUNCTION}`, reader.call("FCALL", APPLY_FUNCTION, keys.length, ...keys, "0", "0")],
      ["DEL", reader.del(keys[0]!)],
      ["UNLINK", reader.unlink(indexKey(base.prefix, 2))],
      ["SADD", reader.sadd(indexKey(base.prefix, 2), "mur_x")],
      ["XADD", reader.xadd(`${base.prefix}:g2:changes`, "*", "a", "b")],
      ["FUNCTION LOAD", reader.call("FUNCTION", "LOAD", "REPLACE", librarySource())],
      ["FUNCTION DELETE", reader.call("FUNCTION", "DELETE", "mufold_v1")],
      ["FLUSHALL", reader.flushall()],
      ["CONFIG SET", reader.call("CONFIG", "SET", "maxmemory", "1")],
      ["reading outside the prefix", reader.hget(`not-${base.prefix}:x`, "a")],
      // INFO shows every tenant's key counts: not for readers.
      ["INFO", reader.info()],
      ["INFO keyspace", reader.info("keyspace")],
    ];
    // Every attempt gets its handler at once (a refusal that lands while an earlier one is awaited is not unhandled).
    const writeDenials = writes.map(([what, attempt]) => [what, denial(attempt)] as const);
    for (const [what, refused] of writeDenials) expect(await refused, what).toMatch(/^NOPERM /);

    // The fold user cannot leave its prefix, nor run commands mufold does not use.
    const writer = connectRedis(fold.redisUrl);
    cleanups.push(() => writer.quit());
    const outside = identityKeys(`not-${base.prefix}`, 2, identity);
    cleanups.push(() => admin.del(...outside, `not-${base.prefix}:x`));
    const escapes: [string, Promise<unknown>][] = [
      ["HSET outside the prefix", writer.hset(`not-${base.prefix}:x`, "a", "b")],
      [`FCALL ${APPLY_FUNCTION} on keys outside the prefix`, writer.call("FCALL", APPLY_FUNCTION, outside.length, ...outside, "0", "0")],
      ["FCALL_RO on keys outside the prefix", writer.call("FCALL_RO", "mufold_read_v1", outside.length, ...outside)],
      ["SET (not a command mufold uses)", writer.set(`${base.prefix}:x`, "y")],
      // No listing of key names: SCAN and KEYS show every key of the database, whatever the pattern.
      ["KEYS", writer.keys("*")],
      ["KEYS in its prefix", writer.keys(`${base.prefix}:*`)],
      ["SCAN", writer.scan("0")],
      ["SCAN MATCH in its prefix", writer.scan("0", "MATCH", `${base.prefix}:*`, "COUNT", 1000)],
      ["FLUSHALL", writer.flushall()],
      ["CONFIG GET", writer.call("CONFIG", "GET", "requirepass")],
      ["ACL SETUSER", writer.call("ACL", "SETUSER", env.foldUser, "+@all")],
      // No Lua of its own: only `mufold setup` (an admin) loads functions, so no spin loop can block Redis.
      ["FUNCTION LOAD", writer.call("FUNCTION", "LOAD", "REPLACE", librarySource())],
      ["FUNCTION LOAD of a spin loop", writer.call("FUNCTION", "LOAD", "#!lua name=spin\nredis.register_function('spin', function() while true do end end)")],
      ["FUNCTION DELETE", writer.call("FUNCTION", "DELETE", "mufold_v1")],
      ["FUNCTION FLUSH", writer.call("FUNCTION", "FLUSH")],
      ["FUNCTION RESTORE", writer.call("FUNCTION", "RESTORE", "x")],
      ["EVAL of a spin loop", writer.call("EVAL", "while true do end", "0")],
      ["SCRIPT LOAD", writer.call("SCRIPT", "LOAD", "while true do end")],
    ];
    const escapeDenials = escapes.map(([what, attempt]) => [what, denial(attempt)] as const);
    for (const [what, refused] of escapeDenials) expect(await refused, what).toMatch(/^NOPERM /);
    expect(await admin.exists(...outside, `not-${base.prefix}:x`)).toBe(0);
    expect(((await admin.call("FUNCTION", "LIST", "LIBRARYNAME", "spin")) as unknown[]).length).toBe(0);

    // Why the fold has no SCAN: the replay user's, with its key pattern, still lists another tenant's key names.
    const foreign = `other-tenant-${randomBytes(4).toString("hex")}:customer:42`;
    cleanups.push(() => admin.del(foreign));
    await admin.set(foreign, "x");
    const scanner = new Redis(replay.redisUrl);
    cleanups.push(() => scanner.quit());
    expect(await scanAll(scanner, `${foreign.split(":")[0]}:*`)).toEqual([foreign]);

    // Nothing changed.
    expect(comparePackets(await readAllPackets(read), expected)).toEqual({ missing: [], extra: [], different: [] });
  });

  it("a function the fold user calls runs with the fold user's rights: the role's keys and commands are the boundary", async () => {
    // A Redis of this test's own: the probe library must not sit beside mufold's on the shared one.
    const server = await PrivateRedis.start();
    cleanups.push(() => server.remove());
    const admin = new Redis(server.url);
    cleanups.push(() => admin.quit());
    const prefix = `mufold-test:${randomBytes(4).toString("hex")}`;
    const r = roles(prefix);
    const user = `mufold-test-fold-${randomBytes(4).toString("hex")}`;
    const password = randomBytes(16).toString("hex");
    await createUser(admin, user, password, [...r.fold!, ...(await versionRules(admin, r))]);
    // Loaded by the admin, as `mufold setup` loads mufold's: a write to a key named in ARGV (not declared), and a SCAN.
    await admin.call(
      "FUNCTION",
      "LOAD",
      "REPLACE",
      [
        "#!lua name=acl_probe",
        "redis.register_function('acl_probe_hset', function(keys, args) return redis.call('HSET', args[1], 'f', 'v') end)",
        "redis.register_function('acl_probe_scan', function(keys, args) return redis.call('SCAN', '0') end)",
      ].join("\n"),
    );
    const fold = new Redis(withUser(server.url, user, password));
    cleanups.push(() => fold.quit());
    const declared = `${prefix}:probe`;

    expect(await fold.call("FCALL", "acl_probe_hset", 1, declared, `${prefix}:inside`)).toBe(1);
    expect(await denial(fold.call("FCALL", "acl_probe_hset", 1, declared, `not-${prefix}:outside`))).toMatch(/can't access at least one of the keys|No permissions to access a key/);
    expect(await denial(fold.call("FCALL", "acl_probe_scan", 0))).toMatch(/can't run this command or subcommand|no permissions to run the 'scan' command/);
    expect(await admin.exists(`${prefix}:inside`, `not-${prefix}:outside`)).toBe(1);
    expect(await admin.exists(`not-${prefix}:outside`)).toBe(0);
    // Redis logged both refusals as the fold user's, from inside the function.
    const log = (await admin.call("ACL", "LOG")) as unknown[][];
    const entries = log.map((flat) => Object.fromEntries(Array.from({ length: flat.length / 2 }, (_, i) => [String(flat[2 * i]), String(flat[2 * i + 1])])));
    expect(entries.map((e) => [e.username, e.context, e.reason, e.object]).sort()).toEqual([
      [user, "lua", "command", "scan"],
      [user, "lua", "key", `not-${prefix}:outside`],
    ]);
    // The same call by the admin writes the outside key: the refusal was the caller's ACL, not the function.
    expect(await admin.call("FCALL", "acl_probe_hset", 1, declared, `not-${prefix}:outside`)).toBe(1);
  });

  it("a password from REDIS_PASSWORD_FILE with the user in REDIS_URL connects as that user", async () => {
    const env = await aclEnv();
    const dir = mkdtempSync(join(tmpdir(), "mufold-acl-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "redis-password");
    writeFileSync(file, `${env.readerPassword}\n`, { mode: 0o600 });
    const settings = resolveSettings({}, { REDIS_URL: env.urlFor(env.readerUser), REDIS_PASSWORD_FILE: file, MUFOLD_PREFIX: env.base.prefix });
    expect(settings.redisUrl).not.toContain(env.readerPassword);
    const redis: RedisClient = connectRedis(readerClientSettings(settings));
    cleanups.push(() => redis.quit());
    expect(await redis.ping()).toBe("PONG");
    expect(await redis.hget(controlKey(env.base.prefix), "generation")).toBeNull();
    expect(await denial(redis.hset(controlKey(env.base.prefix), "generation", "1"))).toMatch(/^NOPERM /);

    // A wrong password fails at AUTH, and the error does not contain it.
    writeFileSync(file, "not-the-password\n");
    const wrongSettings = resolveSettings({}, { REDIS_URL: env.urlFor(env.readerUser), REDIS_PASSWORD_FILE: file });
    const wrong = connectRedis(redisClientSettings(wrongSettings));
    cleanups.push(async () => wrong.disconnect());
    const message = await denial(wrong.ping());
    expect(message).toMatch(/WRONGPASS|invalid username-password/);
    expect(message).not.toContain("not-the-password");
    // A reader's connection has no ready check, yet waiting for it still fails at AUTH (exit 2 for read and serve).
    const refused = await openRedis(readerClientSettings(wrongSettings), 5_000).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(RedisAuthError);
    expect((refused as Error).message).not.toContain("not-the-password");
  });
});
