/**
 * Checks of the Redis server that holds the projections, at fold start and in
 * `mufold setup` (docs/operations.md, "Redis: persistence, eviction, setup"):
 *
 * - Eviction. Under an evicting `maxmemory-policy` Redis deletes keys when
 *   memory runs out, and a deleted part of an identity is a wrong or lost
 *   projection that nothing reports. The fold refuses to start unless the
 *   operator says so (`allowEvictingPolicy`). `noeviction` and the `volatile-*`
 *   policies are accepted: those evict only keys with a TTL, and mufold sets
 *   none, so when memory runs out they refuse writes (OOM) like `noeviction`.
 *   Any other policy (`allkeys-*`, or one this code does not know) is evicting.
 * - Persistence. Without AOF or RDB a restart loses every projection: one
 *   warning line. AOF is read from INFO persistence (`aof_enabled`). INFO
 *   shows no RDB save points, only what past saves did, so they are read with
 *   `CONFIG GET save` when the caller may (`configGet`: setup, as an admin);
 *   the fold's role has no CONFIG (it would also read secrets), so for the fold
 *   RDB is "unknown" and an AOF that is off is enough for the warning.
 *
 * Everything is read from INFO, which the fold role has; on a cluster, on every master.
 */
import { RedisPermissionError, classifyRedisError } from "./errors.js";
import type { Redis } from "ioredis";
import { SETTINGS } from "../../config/settings.js";
import { MufoldError } from "../../errors.js";
import type { Logger } from "../../observability/log.js";
import { masterNodes, type RedisClient } from "./connect.js";
import { nodeName } from "./functions.js";

/** The policies that never delete a key without a TTL, i.e. never a key of mufold's. */
export const NON_EVICTING_POLICIES: ReadonlySet<string> = new Set(["noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"]);

/** RDB save points: configured, none, or not visible to this user. */
export type RdbState = "on" | "off" | "unknown";

export interface RedisNodeState {
  node: string;
  maxmemoryPolicy: string;
  aof: boolean;
  rdb: RdbState;
}

export interface ServerCheckOptions {
  /** Fold even under an evicting policy (one warning line instead of the refusal). */
  allowEvictingPolicy: boolean;
  /** Read RDB save points with CONFIG GET (setup, as an admin); without it RDB is "unknown". */
  configGet?: boolean;
}

/** The `field:value` lines of an INFO reply. */
export function parseInfo(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon > 0 && !line.startsWith("#")) out.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return out;
}

async function info(node: Redis, section: string): Promise<Map<string, string>> {
  try {
    return parseInfo(await node.info(section));
  } catch (err) {
    const typed = classifyRedisError(err);
    if (typed instanceof RedisPermissionError) {
      throw new RedisPermissionError(`cannot check Redis at ${nodeName(node)} (INFO ${section}): this user may not run INFO (grant it +info, as infra/redis-acl/roles.acl does)`, { cause: err });
    }
    throw typed;
  }
}

async function rdbState(node: Redis, configGet: boolean): Promise<RdbState> {
  if (!configGet) return "unknown";
  try {
    const [, save] = (await node.call("CONFIG", "GET", "save")) as string[];
    if (save === undefined) return "unknown";
    return save.trim() === "" ? "off" : "on";
  } catch {
    return "unknown"; // CONFIG refused or renamed (managed Redis): say so rather than guess
  }
}

/** maxmemory-policy and persistence of every master (or the one node). */
export async function inspectRedisServer(redis: RedisClient, options: { configGet?: boolean } = {}): Promise<RedisNodeState[]> {
  const nodes = await masterNodes(redis);
  return Promise.all(
    nodes.map(async (node) => {
      const memory = await info(node, "memory");
      const persistence = await info(node, "persistence");
      const policy = memory.get("maxmemory_policy");
      if (policy === undefined) throw new MufoldError(`Redis at ${nodeName(node)} does not report maxmemory_policy in INFO memory`);
      return { node: nodeName(node), maxmemoryPolicy: policy, aof: persistence.get("aof_enabled") === "1", rdb: await rdbState(node, options.configGet === true) };
    }),
  );
}

/**
 * Refuse an evicting maxmemory-policy (unless allowed: then warn), and warn
 * once when a master persists nothing. Returns what it found.
 */
export async function checkRedisServer(redis: RedisClient, options: ServerCheckOptions, log: Logger): Promise<RedisNodeState[]> {
  const nodes = await inspectRedisServer(redis, options);
  const override = `--${SETTINGS.allowEvictingPolicy.flag} (${SETTINGS.allowEvictingPolicy.env}=true)`;
  const evicting = nodes.filter((n) => !NON_EVICTING_POLICIES.has(n.maxmemoryPolicy));
  if (evicting.length > 0) {
    const where = evicting.map((n) => `${n.node} has maxmemory-policy ${n.maxmemoryPolicy}`).join(", ");
    if (!options.allowEvictingPolicy) {
      throw new MufoldError(
        `Redis may evict mufold's keys (${where}): an evicted key silently loses or corrupts projection state. ` +
          `Set maxmemory-policy noeviction (or a volatile-* policy: mufold sets no TTL), or pass ${override} to run anyway`,
      );
    }
    log.warn(`Redis may evict mufold's keys (${where}); running anyway (${override}): evicted keys lose projection state silently, only \`mufold replay --verify\` finds it`, {
      nodes: evicting,
    });
  }
  const unpersisted = nodes.filter((n) => !n.aof && n.rdb !== "on");
  if (unpersisted.length > 0) {
    const where = unpersisted.map((n) => n.node).join(", ");
    const msg = unpersisted.some((n) => n.rdb === "off")
      ? `Redis persists nothing on ${where} (no AOF, no RDB save points): a restart loses every projection until \`mufold replay --promote\` rebuilds them (docs/operations.md)`
      : `Redis AOF is off on ${where} and its RDB save points were not checked (CONFIG GET, an admin's command): unless RDB snapshots are on, a restart loses every projection (\`mufold setup\` as an admin checks both; docs/operations.md)`;
    log.warn(msg, { nodes: unpersisted });
  }
  return nodes;
}
