/**
 * Integration-test helpers for the local Redis Cluster (infra/redis-cluster):
 * start and stop it, and read or drop a test prefix through a Cluster client.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Cluster, Redis } from "ioredis";
import { connectRedis, isCluster, masterNodes } from "../../src/adapters/redis/connect.js";
import { dropPrefix } from "../../src/adapters/redis/keyspace.js";
import type { Settings } from "../../src/config/settings.js";
import { ProjectionReader } from "../../src/client/readback.js";

const run = promisify(execFile);
const SCRIPTS = fileURLToPath(new URL("../../infra/redis-cluster/", import.meta.url));

/** Start (or reuse) the 3-master cluster; returns its redis+cluster:// URL (the script's last line). */
export async function startRedisCluster(): Promise<string> {
  const { stdout } = await run("bash", [`${SCRIPTS}start.sh`], { timeout: 600_000 });
  const url = stdout.trim().split("\n").pop() ?? "";
  if (!url.startsWith("redis+cluster://")) throw new Error(`infra/redis-cluster/start.sh printed no cluster URL:\n${stdout}`);
  return url;
}

export async function stopRedisCluster(): Promise<void> {
  await run("bash", [`${SCRIPTS}stop.sh`], { timeout: 120_000 });
}

/**
 * Kill one master of the local cluster (SIGKILL, by its pid file) and bring it
 * back with start.sh: it rejoins with its slots (nodes.conf) but no data and
 * no function library, as after a crash without persistence.
 */
export async function restartClusterNode(port: number): Promise<void> {
  // The run directory as infra/redis-cluster/common.sh names it: suffixed unless the base port is the default.
  const base = process.env.MUFOLD_REDIS_CLUSTER_PORT ?? "7100";
  const run = base === "7100" ? "redis-cluster" : `redis-cluster-${base}`;
  const pidfile = fileURLToPath(new URL(`../../.cache/run/${run}/${port}/redis.pid`, import.meta.url));
  const pid = Number((await readFile(pidfile, "utf8")).trim());
  process.kill(pid, "SIGKILL");
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await startRedisCluster();
}

/** A Cluster client (connectRedis of a cluster URL). */
export function connectCluster(url: string): Cluster {
  const client = connectRedis(url);
  if (!isCluster(client)) throw new Error(`${url} did not give a Cluster client`);
  return client;
}

export async function withCluster<T>(url: string, fn: (cluster: Cluster) => Promise<T>): Promise<T> {
  const cluster = connectCluster(url);
  try {
    return await fn(cluster);
  } finally {
    await cluster.quit().catch(() => undefined);
  }
}

/** Every packet of the current generation, read with ProjectionReader over the cluster. */
export function readAllClusterPackets(settings: Settings): Promise<Map<string, string>> {
  return withCluster(settings.redisUrl, async (cluster) => {
    const reader = new ProjectionReader(cluster, settings.prefix);
    const ids = await reader.identities();
    const packets = await Promise.all(ids.map((id) => reader.read(id)));
    return new Map(ids.map((id, i) => [id, packets[i] ?? "<missing>"]));
  });
}

/** Remove every key of the test prefix on every master. */
export function dropClusterPrefix(settings: Settings): Promise<number> {
  return withCluster(settings.redisUrl, (cluster) => dropPrefix(cluster, settings.prefix));
}

/** The master node ("host:port") that serves a key's slot, from CLUSTER KEYSLOT and CLUSTER SLOTS. */
export async function ownerOf(cluster: Cluster, key: string): Promise<string> {
  const slot = Number(await cluster.cluster("KEYSLOT", key));
  const range = (await cluster.cluster("SLOTS")).find(([from, to]) => slot >= from && slot <= to);
  const master = range?.[2];
  if (master === undefined) throw new Error(`slot ${slot} of ${key} is not served`);
  return `${master[0]}:${master[1]}`;
}

export function nodeName(node: Redis): string {
  return `${node.options.host ?? "?"}:${String(node.options.port ?? "?")}`;
}

/** INFO errorstats of every master, as { "host:port": { CROSSSLOT: n, … } }. */
export async function errorStats(cluster: Cluster): Promise<Record<string, Record<string, number>>> {
  const out: Record<string, Record<string, number>> = {};
  for (const node of await masterNodes(cluster)) {
    const info = String(await node.info("errorstats"));
    const stats: Record<string, number> = {};
    for (const m of info.matchAll(/^errorstat_([^:]+):count=(\d+)/gm)) stats[m[1]!] = Number(m[2]);
    out[nodeName(node)] = stats;
  }
  return out;
}
