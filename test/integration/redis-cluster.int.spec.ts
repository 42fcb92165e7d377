/**
 * The pipeline on a local 3-master Redis Cluster (infra/redis-cluster, started
 * here): fold, read back, replay --verify and replay --promote after losing
 * every key, with byte-equal packets, keys spread over the masters, and no
 * CROSSSLOT (nor MOVED/ASK redirection) anywhere.
 */
import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Cluster } from "ioredis";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { runReplay } from "../../consumers/replay/replay.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { connectRedis, isCluster, masterNodes } from "../../src/adapters/redis/connect.js";
import { parseClusterUrl } from "../../src/config/redis-url.js";
import { FunctionsMissingError } from "../../src/adapters/redis/errors.js";
import { LIBRARY_NAME, ensureSetup, loadFunctions } from "../../src/adapters/redis/functions.js";
import { RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import { dropPrefix, prefixKeys } from "../../src/adapters/redis/keyspace.js";
import { resolveSettings } from "../../src/config/settings.js";
import { changesKey, identityKeys } from "../../src/adapters/redis/keys.js";
import { ProjectionReader } from "../../src/client/readback.js";
import { comparePackets, expectedPackets, quietLog, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { until } from "../support/wait.js";
import {
  connectCluster,
  dropClusterPrefix,
  errorStats,
  nodeName,
  ownerOf,
  readAllClusterPackets,
  restartClusterNode,
  startRedisCluster,
  stopRedisCluster,
} from "../support/redis-cluster.js";

/** Error replies that would mean a call named keys of several slots, or went to the wrong node. */
const ROUTING_ERRORS = ["CROSSSLOT", "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN"];

describe("cluster URLs", () => {
  it("redis+cluster:// is a valid redisUrl and parses into seeds and credentials", () => {
    const url = "redis+cluster://127.0.0.1:7100,127.0.0.1:7101,127.0.0.1:7102";
    expect(resolveSettings({}, { REDIS_URL: url }).redisUrl).toBe(url);
    expect(parseClusterUrl(url)).toEqual({
      tls: false,
      seeds: [
        { host: "127.0.0.1", port: 7100 },
        { host: "127.0.0.1", port: 7101 },
        { host: "127.0.0.1", port: 7102 },
      ],
      username: undefined,
      password: undefined,
    });
    expect(parseClusterUrl("rediss+cluster://app:p%40ss%2Cw@redis-a:6380,redis-b:6380/")).toEqual({
      tls: true,
      seeds: [
        { host: "redis-a", port: 6380 },
        { host: "redis-b", port: 6380 },
      ],
      username: "app",
      password: "p@ss,w",
    });
    expect(resolveSettings({}, { REDIS_URL: "redis://127.0.0.1:6379/5" }).redisUrl).toBe("redis://127.0.0.1:6379/5");
    for (const bad of ["redis+cluster://", "redis+cluster://127.0.0.1", "redis+cluster://a:1,,b:2", "redis+cluster://a:1/3", "http://x"]) {
      expect(() => resolveSettings({}, { REDIS_URL: bad }), bad).toThrow(/invalid setting redisUrl/);
    }
  });
});

describe("Redis Cluster (3 masters, no replicas)", () => {
  let url: string;
  let admin: Cluster;
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    url = await startRedisCluster();
    admin = connectCluster(url);
    // Count error replies from here on only.
    for (const node of await masterNodes(admin)) await node.config("RESETSTAT");
  });

  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
  });

  afterAll(async () => {
    await admin?.quit().catch(() => undefined);
    await stopRedisCluster();
  });

  it("folds, reads back, verifies and promotes byte for byte, with identities on every master", async () => {
    const settings = testSettings({ redisUrl: url });
    cleanups.push(() => dropClusterPrefix(settings));
    const observations = [...simulate({ agents: 12, observationsPerAgent: 30, snapshotEvery: 12, duplicateRate: 0.15, conflictRate: 0.03, seed: 41 })].map((d) => d.observation);
    const expected = expectedPackets(observations);
    expect(expected.size).toBeGreaterThan(20);

    await ensureSetup(settings); // `mufold setup`: the fold only checks for the libraries
    await produce(settings, observations.map(observationRecord));
    const worker = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => worker.stop());
    await waitCaughtUp(settings);

    // connectRedis gives a Cluster for this URL, and the packets are the reducer's bytes.
    const client = connectRedis(url);
    cleanups.push(() => client.quit());
    expect(isCluster(client)).toBe(true);
    const packets = await readAllClusterPackets(settings);
    expect(comparePackets(packets, expected)).toEqual({ missing: [], extra: [], different: [] });

    // The identities really are spread: every master holds some, and each identity's ten keys sit in one slot on its owner.
    const reader = new ProjectionReader(client, settings.prefix);
    const generation = await reader.generation();
    // The change feed: its stream is in another slot than the control hash, so each batch's entries go just
    // before its seal. Every identity's last entry is its stored version.
    const lastVersion = new Map<string, string>();
    for (const [, flat] of await client.xrange(changesKey(settings.prefix, generation), "-", "+")) lastVersion.set(flat[1]!, flat[3]!);
    expect(lastVersion.size).toBe(expected.size);
    for (const id of expected.keys()) expect(lastVersion.get(id), id).toBe((await reader.store.meta(generation, id)).v);
    const masters = await masterNodes(admin);
    expect(masters).toHaveLength(3);
    const perMaster = new Map<string, number>();
    for (const node of masters) {
      let count = 0;
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", `${settings.prefix}:g${generation}:{mur_*}:m`, "COUNT", 1000);
        count += keys.length;
        cursor = next;
      } while (cursor !== "0");
      perMaster.set(nodeName(node), count);
    }
    expect([...perMaster.values()].reduce((a, b) => a + b, 0)).toBe(expected.size);
    expect([...perMaster.values()].filter((n) => n > 0).length, JSON.stringify([...perMaster])).toBe(3);
    const owners = new Set<string>();
    for (const id of [...expected.keys()].slice(0, 12)) {
      const keys = identityKeys(settings.prefix, generation, id);
      const slots = new Set(await Promise.all(keys.map((k) => admin.cluster("KEYSLOT", k))));
      expect(slots.size).toBe(1);
      const owner = await ownerOf(admin, keys[0]!);
      owners.add(owner);
      const node = masters.find((n) => nodeName(n) === owner)!;
      expect(await node.exists(...keys.slice(0, 2))).toBe(2); // meta and delivery records live on the owner
    }
    expect(owners.size).toBeGreaterThan(1);

    // replay --verify: every identity compared, byte-equal.
    const verified = await runReplay(settings, { verify: true, promote: false }, quietLog);
    expect(verified.verify!.compared).toBe(expected.size);
    expect(verified.verify!.notComparable).toBe(0);
    expect(verified.mismatches).toBe(0);

    // A master that lost the library (restart without persistence, FUNCTION FLUSH): reads there say to run
    // `mufold setup` (nothing reloads Lua but setup), and after it every master has the library again.
    const [firstId] = [...expected.keys()];
    const firstOwner = await ownerOf(admin, identityKeys(settings.prefix, generation, firstId!)[0]!);
    const flushed = masters.find((n) => nodeName(n) === firstOwner)!;
    await flushed.function("FLUSH");
    await expect(new ProjectionReader(client, settings.prefix).read(firstId!)).rejects.toBeInstanceOf(FunctionsMissingError);
    await ensureSetup(settings);
    expect(await new ProjectionReader(client, settings.prefix).read(firstId!)).toBe(expected.get(firstId!));
    for (const node of masters) {
      const libs = (await node.function("LIST", "LIBRARYNAME", LIBRARY_NAME)) as unknown[];
      expect(libs, nodeName(node)).toHaveLength(1);
    }

    // Lose every key of the prefix on every master: the running fold finds no generation and rebuilds one from
    // the log by itself. (A promote planned against "no generation" would race that rebuild, and be refused.)
    expect(await dropPrefix(client, settings.prefix)).toBeGreaterThan(expected.size * 2);
    expect(await prefixKeys(client, settings.prefix)).toEqual([]);
    await until("the running fold rebuilt every packet after the loss", async () => isDeepStrictEqual(await readAllClusterPackets(settings).catch(() => null), packets), 120_000, 200);
    // replay --promote on a cluster: a new generation rebuilt beside the live one, promoted, byte for byte.
    const promoted = await runReplay(settings, { verify: false, promote: true, dropAfterSeconds: 0 }, quietLog);
    expect(promoted.promoted).toBe(true);
    expect(promoted.identities).toBe(expected.size);
    expect(await readAllClusterPackets(settings)).toEqual(packets);

    // The live worker goes on writing on the promoted generation.
    const more = [...simulate({ agents: 4, observationsPerAgent: 10, seed: 42, startTime: "2026-11-20T00:00:00Z" })].map((d) => d.observation);
    await produce(settings, more.map(observationRecord));
    await waitCaughtUp(settings);
    expect(comparePackets(await readAllClusterPackets(settings), expectedPackets([...observations, ...more]))).toEqual({ missing: [], extra: [], different: [] });

    // No call named keys of several slots, and none had to be redirected.
    const stats = await errorStats(admin);
    for (const [node, errors] of Object.entries(stats)) {
      for (const name of ROUTING_ERRORS) expect(errors[name] ?? 0, `${name} replies on ${node}: ${JSON.stringify(errors)}`).toBe(0);
    }
  });

  it("after a master restarts empty, the same client reaches it again, and setup restores the library there", async () => {
    const settings = testSettings({ redisUrl: url });
    cleanups.push(() => dropClusterPrefix(settings));
    const client = connectRedis(url);
    cleanups.push(() => client.quit());
    const store = new RedisIdentityStore(client, settings.prefix);
    expect(store.indexKeepsListings).toBe(false); // the index's node is not the identities': the fold lists again
    await loadFunctions(client);
    const ids = Array.from({ length: 30 }, (_, i) => `mur_${createHash("sha256").update(String(i)).digest("hex")}`);
    for (const id of ids) expect(await store.apply(1, id, 0, new Map([["w:t:0", 1n]]), [])).toBe(1);
    const owners = await Promise.all(ids.map((id) => ownerOf(admin, store.keys(1, id)[0]!)));
    const victim = owners[0]!;
    const port = Number(victim.split(":")[1]);

    await restartClusterNode(port);

    // Reads route to the restarted master again (following MOVED, re-adding the node); it lost the library,
    // which only `mufold setup` loads.
    const victimId = ids[owners.indexOf(victim)]!;
    await expect(store.read(1, victimId)).rejects.toBeInstanceOf(FunctionsMissingError);
    await ensureSetup(settings);
    const reads = await Promise.all(ids.map((id) => store.read(1, id)));
    const metas = await Promise.all(ids.map((id) => store.meta(1, id)));
    expect(reads.every((r) => r === null)).toBe(true); // applied with no parts: no packet yet, but no error either
    ids.forEach((_, i) => expect(metas[i]!.v, `${ids[i]} on ${owners[i]}`).toBe(owners[i] === victim ? undefined : "1"));
    for (const node of await masterNodes(client)) {
      expect((await node.function("LIST", "LIBRARYNAME", LIBRARY_NAME)) as unknown[], nodeName(node)).toHaveLength(1);
    }
    expect((await masterNodes(client)).map(nodeName).sort()).toEqual((await masterNodes(admin)).map(nodeName).sort());
  });
});
