/**
 * Safe defaults on a shared cluster, least privilege (issue 9), without
 * services: the replicationFactor and allowEvictingPolicy settings, the
 * topic creation request, the Redis server checks against fake INFO replies,
 * the functions no longer being loaded by the store, the readers' connection
 * without INFO, the ACL roles, and `mufold setup --help`.
 */
import { readFileSync } from "node:fs";
import type { Admin } from "kafkajs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ensureTopics } from "../../src/adapters/kafka/topics.js";
import { redisClientPlan, readerClientSettings, type RedisClient } from "../../src/adapters/redis/connect.js";
import { FunctionsMissingError } from "../../src/adapters/redis/errors.js";
import { checkRedisServer, parseInfo } from "../../src/adapters/redis/server-checks.js";
import { RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import { configReceipt } from "../../src/cli/config-explain.js";
import { main } from "../../src/cli/main.js";
import { resolveSettings, resolveSettingsWithSources, settingFlags } from "../../src/config/settings.js";
import { MufoldError } from "../../src/errors.js";
import type { Logger } from "../../src/observability/log.js";
import type { PyObject } from "../../src/core/pyvalue.js";

afterEach(() => vi.restoreAllMocks());

describe("setting replicationFactor (--replication-factor / MUFOLD_REPLICATION_FACTOR)", () => {
  it("defaults to the broker's default, takes a number from a flag or the environment, the flag winning", () => {
    expect(resolveSettings({}, {}).replicationFactor).toBe("broker");
    expect(resolveSettings({}, { MUFOLD_REPLICATION_FACTOR: "3" }).replicationFactor).toBe(3);
    expect(resolveSettings({}, { MUFOLD_REPLICATION_FACTOR: " Broker " }).replicationFactor).toBe("broker");
    expect(resolveSettings({ "replication-factor": "2" }, { MUFOLD_REPLICATION_FACTOR: "3" }).replicationFactor).toBe(2);
    expect(settingFlags()["replication-factor"]).toEqual({ type: "string" });
  });

  it.each(["0", "-1", "1.5", "three", "", "32768"])("refuses %j, naming the setting", (value) => {
    expect(() => resolveSettings({}, { MUFOLD_REPLICATION_FACTOR: value })).toThrow(
      /invalid setting replicationFactor \(--replication-factor \/ MUFOLD_REPLICATION_FACTOR\) = .*: must be broker .* or an integer from 1 to 32767/,
    );
  });
});

describe("setting allowEvictingPolicy (--allow-evicting-policy / MUFOLD_ALLOW_EVICTING_POLICY)", () => {
  it("is off by default, a boolean flag, and on from the environment", () => {
    expect(resolveSettings({}, {}).allowEvictingPolicy).toBe(false);
    expect(resolveSettings({}, { MUFOLD_ALLOW_EVICTING_POLICY: "true" }).allowEvictingPolicy).toBe(true);
    expect(resolveSettings({ "allow-evicting-policy": true }, {}).allowEvictingPolicy).toBe(true);
    expect(settingFlags()["allow-evicting-policy"]).toEqual({ type: "boolean" });
    expect(() => resolveSettings({}, { MUFOLD_ALLOW_EVICTING_POLICY: "yes" })).toThrow(/allowEvictingPolicy \(--allow-evicting-policy \/ MUFOLD_ALLOW_EVICTING_POLICY\) = "yes": must be true, false, 1 or 0/);
  });
});

describe("the two settings are shown", () => {
  it("by mufold config explain, with their sources", () => {
    const receipt = configReceipt(resolveSettingsWithSources({ "allow-evicting-policy": true }, { MUFOLD_REPLICATION_FACTOR: "3" }));
    const settings = receipt.settings as Record<string, PyObject>;
    expect(settings.replicationFactor).toEqual({ source: "env", value: 3 });
    expect(settings.allowEvictingPolicy).toEqual({ source: "flag", value: true });
    const defaults = configReceipt(resolveSettingsWithSources({}, {})).settings as Record<string, PyObject>;
    expect(defaults.replicationFactor).toEqual({ source: "default", value: "broker" });
    expect(defaults.allowEvictingPolicy).toEqual({ source: "default", value: false });
  });

  it("in the settings table (docs/operations.md)", () => {
    const readme = readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8");
    expect(readme).toMatch(/^\| `--replication-factor` \| `MUFOLD_REPLICATION_FACTOR` \| `broker` \| .*min\.insync\.replicas=2.* \|$/m);
    expect(readme).toMatch(/^\| `--allow-evicting-policy` \| `MUFOLD_ALLOW_EVICTING_POLICY` \| `false` \| .* \|$/m);
  });
});

/** An Admin that knows some topics and records what it is asked to create. */
function fakeAdmin(existing: string[]) {
  const requests: { topics: { topic: string; numPartitions?: number; replicationFactor?: number; configEntries?: unknown[] }[] }[] = [];
  const admin = {
    listTopics: async () => existing,
    createTopics: async (request: (typeof requests)[number]) => {
      requests.push(request);
      return true;
    },
    fetchTopicMetadata: async ({ topics }: { topics: string[] }) => ({ topics: topics.map((name) => led(name, 8)) }),
  } as unknown as Admin;
  return { admin, requests };
}

/** Metadata of a topic whose partitions all have a leader (node 1). */
function led(name: string, partitions: number) {
  return { name, partitions: Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, leader: 1, partitionErrorCode: 0, replicas: [1], isr: [1] })) };
}

/** An Admin that creates any topic and answers metadata requests with `answer`; `asked()` counts them. */
function metadataAdmin(answer: (asked: number) => unknown) {
  let asked = 0;
  const admin = {
    listTopics: async () => [],
    createTopics: async () => true,
    fetchTopicMetadata: async () => answer(asked++),
  } as unknown as Admin;
  return { admin, asked: () => asked };
}

/** A broker error as kafkajs raises it from a metadata answer. */
function brokerError(type: string): Error {
  return Object.assign(new Error(`the broker said ${type}`), { name: "KafkaJSProtocolError", type, retriable: true });
}

describe("ensureTopics", () => {
  it("asks for the broker's default replication factor (-1, KIP-464) unless one is given, and creates only what is missing", async () => {
    const { admin, requests } = fakeAdmin(["exists"]);
    const created = await ensureTopics(admin, [
      { topic: "exists", partitions: 3 },
      { topic: "plain", partitions: 3 },
      { topic: "broker", partitions: 4, replicationFactor: "broker" },
      { topic: "three", partitions: 5, replicationFactor: 3 },
    ]);
    expect(created).toEqual(["plain", "broker", "three"]);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.topics.map((t) => [t.topic, t.numPartitions, t.replicationFactor])).toEqual([
      ["plain", 3, -1],
      ["broker", 4, -1],
      ["three", 5, 3],
    ]);
    // Never a hard-coded 1.
    expect(requests[0]!.topics.every((t) => t.replicationFactor !== 1)).toBe(true);
  });

  it("names the topic, what was asked and the broker's answer when the broker refuses", async () => {
    const refusal = Object.assign(new Error("Topic creation errors"), {
      name: "KafkaJSAggregateError",
      errors: [Object.assign(new Error("Replication-factor is invalid"), { topic: "t", type: "INVALID_REPLICATION_FACTOR" })],
    });
    const admin = { listTopics: async () => [], createTopics: async () => Promise.reject(refusal) } as unknown as Admin;
    await expect(ensureTopics(admin, [{ topic: "t", partitions: 2, replicationFactor: 5 }])).rejects.toThrow(
      new MufoldError("the broker refused to create t (2 partitions, replication factor 5): Replication-factor is invalid [INVALID_REPLICATION_FACTOR]"),
    );
  });

  it("waits until the broker's metadata shows every partition led: a KRaft broker may not know a topic it just created", async () => {
    const answers: (() => unknown)[] = [
      () => Promise.reject(brokerError("UNKNOWN_TOPIC_OR_PARTITION")),
      () => Promise.reject(brokerError("LEADER_NOT_AVAILABLE")),
      () => ({ topics: [led("t", 1)] }), // fewer partitions than asked
      () => ({ topics: [{ ...led("t", 3), partitions: led("t", 3).partitions.map((p) => ({ ...p, leader: p.partitionId === 2 ? -1 : 1 })) }] }),
      () => ({ topics: [led("t", 3)] }),
    ];
    const { admin, asked } = metadataAdmin((n) => answers[n]!());
    expect(await ensureTopics(admin, [{ topic: "t", partitions: 3 }])).toEqual(["t"]);
    expect(asked()).toBe(5);
  });

  it("fails past the wait naming the topic and the broker's last answer; any other metadata error fails at once", async () => {
    const never = metadataAdmin(() => Promise.reject(brokerError("UNKNOWN_TOPIC_OR_PARTITION")));
    const late = await ensureTopics(never.admin, [{ topic: "t", partitions: 1 }], 250).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(MufoldError);
    expect((late as MufoldError).retriable).toBe(true);
    expect((late as Error).message).toBe(
      "created t, but the broker's metadata did not show them ready within 250 ms: the broker said UNKNOWN_TOPIC_OR_PARTITION [UNKNOWN_TOPIC_OR_PARTITION]",
    );
    expect(never.asked()).toBeGreaterThan(1);

    const denied = brokerError("TOPIC_AUTHORIZATION_FAILED");
    const refusing = metadataAdmin(() => Promise.reject(denied));
    await expect(ensureTopics(refusing.admin, [{ topic: "t", partitions: 1 }])).rejects.toBe(denied);
    expect(refusing.asked()).toBe(1);
  });

  it("sends nothing when every topic exists", async () => {
    const { admin, requests } = fakeAdmin(["a", "b"]);
    expect(await ensureTopics(admin, [{ topic: "a", partitions: 1 }, { topic: "b", partitions: 1 }])).toEqual([]);
    expect(requests).toEqual([]);
  });
});

/** A one-node client whose INFO and CONFIG GET answer what a test says. */
function fakeRedis(info: { policy: string; aof: boolean }, config: "refused" | string = "refused"): RedisClient {
  return {
    isCluster: false,
    options: { host: "redis.test", port: 6399 },
    info: async (section: string) =>
      section === "memory" ? `# Memory\r\nused_memory:100\r\nmaxmemory_policy:${info.policy}\r\n` : `# Persistence\r\nloading:0\r\naof_enabled:${info.aof ? 1 : 0}\r\nrdb_saves:0\r\n`,
    call: async (...args: string[]) => {
      if (args.join(" ") !== "CONFIG GET save") throw new Error(`unexpected ${args.join(" ")}`);
      if (config === "refused") throw new Error("NOPERM User x has no permissions to run the 'config|get' command");
      return ["save", config];
    },
  } as unknown as RedisClient;
}

function capturingLog(lines: { level: string; msg: string }[]): Logger {
  const at = (level: string) => (msg: string) => void lines.push({ level, msg });
  const log: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: () => log };
  return log;
}

describe("Redis server checks (maxmemory-policy, persistence)", () => {
  it("parses INFO's field:value lines", () => {
    expect(parseInfo("# Memory\r\nmaxmemory_policy:allkeys-lru\r\nx:a:b\r\n\r\n")).toEqual(new Map([["maxmemory_policy", "allkeys-lru"], ["x", "a:b"]]));
  });

  it.each(["allkeys-lru", "allkeys-lfu", "allkeys-random", "some-future-policy"])("refuses %s, naming the node, the policy and the override", async (policy) => {
    const lines: { level: string; msg: string }[] = [];
    const refused = checkRedisServer(fakeRedis({ policy, aof: true }), { allowEvictingPolicy: false }, capturingLog(lines));
    await expect(refused).rejects.toThrow(MufoldError);
    await expect(refused).rejects.toThrow(`redis.test:6399 has maxmemory-policy ${policy}`);
    await expect(refused).rejects.toThrow("--allow-evicting-policy (MUFOLD_ALLOW_EVICTING_POLICY=true)");
    expect(lines).toEqual([]);
  });

  it.each(["noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"])("accepts %s (mufold sets no TTL) without a word", async (policy) => {
    const lines: { level: string; msg: string }[] = [];
    const nodes = await checkRedisServer(fakeRedis({ policy, aof: true }), { allowEvictingPolicy: false }, capturingLog(lines));
    expect(nodes).toEqual([{ node: "redis.test:6399", maxmemoryPolicy: policy, aof: true, rdb: "unknown" }]);
    expect(lines).toEqual([]);
  });

  it("with the override, starts with one warning naming the policy", async () => {
    const lines: { level: string; msg: string }[] = [];
    await checkRedisServer(fakeRedis({ policy: "allkeys-lru", aof: true }), { allowEvictingPolicy: true }, capturingLog(lines));
    expect(lines).toHaveLength(1);
    expect(lines[0]!.level).toBe("warn");
    expect(lines[0]!.msg).toContain("redis.test:6399 has maxmemory-policy allkeys-lru");
  });

  it("warns once when neither AOF nor RDB is on; without CONFIG GET it says RDB could not be checked", async () => {
    const lines: { level: string; msg: string }[] = [];
    const log = capturingLog(lines);
    // The fold: no CONFIG GET at all (its role has none), AOF off.
    expect((await checkRedisServer(fakeRedis({ policy: "noeviction", aof: false }), { allowEvictingPolicy: false }, log))[0]!.rdb).toBe("unknown");
    // Setup as an admin: CONFIG GET save says no save points.
    expect((await checkRedisServer(fakeRedis({ policy: "noeviction", aof: false }, ""), { allowEvictingPolicy: false, configGet: true }, log))[0]!.rdb).toBe("off");
    // CONFIG refused (a managed Redis) falls back to unknown.
    expect((await checkRedisServer(fakeRedis({ policy: "noeviction", aof: false }, "refused"), { allowEvictingPolicy: false, configGet: true }, log))[0]!.rdb).toBe("unknown");
    expect(lines.map((l) => l.level)).toEqual(["warn", "warn", "warn"]);
    expect(lines[0]!.msg).toMatch(/AOF is off on redis\.test:6399 and its RDB save points were not checked/);
    expect(lines[1]!.msg).toMatch(/persists nothing on redis\.test:6399 \(no AOF, no RDB save points\)/);
  });

  it("is quiet when AOF is on, or RDB save points are configured", async () => {
    const lines: { level: string; msg: string }[] = [];
    await checkRedisServer(fakeRedis({ policy: "noeviction", aof: true }), { allowEvictingPolicy: false }, capturingLog(lines));
    const rdb = await checkRedisServer(fakeRedis({ policy: "noeviction", aof: false }, "3600 1 300 100"), { allowEvictingPolicy: false, configGet: true }, capturingLog(lines));
    expect(rdb[0]!.rdb).toBe("on");
    expect(lines).toEqual([]);
  });
});

describe("RedisIdentityStore without the functions", () => {
  it("raises a retriable FunctionsMissingError saying to run `mufold setup`, and loads nothing", async () => {
    const calls: unknown[][] = [];
    const redis = {
      isCluster: false,
      call: async (...args: unknown[]) => {
        calls.push(args);
        throw new Error("ERR Function not found");
      },
    } as unknown as RedisClient;
    const read = new RedisIdentityStore(redis, "p").read(1, `mur_${"0".repeat(64)}`);
    await expect(read).rejects.toBeInstanceOf(FunctionsMissingError);
    const err = (await read.catch((e: unknown) => e)) as FunctionsMissingError;
    expect(err.retriable).toBe(true);
    expect(err.message).toContain("Redis has no function mufold_read_v1");
    expect(err.message).toContain("run `mufold setup`");
    expect(calls.map((c) => c[0])).toEqual(["FCALL_RO"]); // no FUNCTION LOAD
  });

  it("passes other errors through unchanged", async () => {
    const redis = { isCluster: false, call: async () => Promise.reject(new Error("NOPERM no")) } as unknown as RedisClient;
    await expect(new RedisIdentityStore(redis, "p").read(1, `mur_${"0".repeat(64)}`)).rejects.toThrow(/^NOPERM no$/);
  });
});

describe("readers connect without INFO", () => {
  it("a reader's client has no ready check (INFO), one node or cluster; other clients keep ioredis's", () => {
    const settings = resolveSettings({}, {});
    expect(redisClientPlan(readerClientSettings(settings)).options).toMatchObject({ enableReadyCheck: false });
    const cluster = redisClientPlan(readerClientSettings(resolveSettings({}, { REDIS_URL: "redis+cluster://h1:7100,h2:7101" })));
    expect(cluster.kind === "cluster" && cluster.options.redisOptions?.enableReadyCheck).toBe(false);
    expect(redisClientPlan({ url: settings.redisUrl }).options).not.toHaveProperty("enableReadyCheck");
  });
});

/** The rules of one role of infra/redis-acl/roles.acl. */
function role(name: string): string[] {
  const text = readFileSync(new URL("../../infra/redis-acl/roles.acl", import.meta.url), "utf8");
  const line = new RegExp(`^${name}:\\s+(.+)$`, "m").exec(text);
  if (line === null) throw new Error(`no role ${name}`);
  return line[1]!.split(/\s+/);
}

describe("ACL roles (infra/redis-acl/roles.acl)", () => {
  it("the fold may not load Lua (FUNCTION LOAD, EVAL, SCRIPT), only list the libraries and call them", () => {
    const fold = role("fold");
    for (const grant of ["+function|load", "+function", "+@scripting", "+eval", "+evalsha", "+script", "+function|restore", "+@all", "allcommands"]) expect(fold).not.toContain(grant);
    expect(fold).toEqual(expect.arrayContaining(["+function|list", "+fcall", "+fcall_ro", "+info"]));
  });

  it("the reader has no INFO", () => {
    const reader = role("reader");
    expect(reader).not.toContain("+info");
    expect(reader.filter((r) => /^\+@/.test(r) || r === "allcommands")).toEqual([]);
    expect(reader).toContain("+fcall_ro");
  });
});

describe("mufold setup --help", () => {
  it("prints its usage on stdout and exits 0; mufold --help lists it", async () => {
    const out: string[] = [];
    vi.spyOn(process.stdout, "write").mockImplementation(((chunk: string | Uint8Array, ...rest: unknown[]) => {
      out.push(String(chunk));
      const cb = rest.find((r): r is () => void => typeof r === "function");
      if (cb) queueMicrotask(cb);
      return true;
    }) as typeof process.stdout.write);
    expect(await main(["setup", "--help"])).toBe(0);
    expect(out.join("")).toMatch(/^usage: mufold setup \[--skip-topics\] \[setting flags\]/);
    expect(out.join("")).toContain("--replication-factor / MUFOLD_REPLICATION_FACTOR [broker]");
    out.length = 0;
    expect(await main(["--help"])).toBe(0);
    expect(out.join("")).toContain("mufold setup [--skip-topics]");
  });
});
