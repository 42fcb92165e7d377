/** Walking a prefix's keys on every master (SCAN per node), and deleting them all. */
import type { Redis, Cluster } from "ioredis";
import { masterNodes } from "./connect.js";

/** Every key matching `match` on every master (the order is unspecified). */
export async function scanKeys(redis: Redis | Cluster, match: string): Promise<string[]> {
  const out = new Set<string>();
  for (const node of await masterNodes(redis)) {
    let cursor = "0";
    do {
      const [next, batch] = await node.scan(cursor, "MATCH", match, "COUNT", 1000);
      for (const key of batch) out.add(key);
      cursor = next;
    } while (cursor !== "0");
  }
  return [...out];
}

/** Every key under `<prefix>:` (all generations, the control hash and its acks). */
export function prefixKeys(redis: Redis | Cluster, prefix: string): Promise<string[]> {
  return scanKeys(redis, `${prefix}:*`);
}

/**
 * Delete every key under `<prefix>:` on every master; returns how many were
 * removed. Keys are unlinked one by one through the client, which routes each
 * by its slot.
 */
export async function dropPrefix(redis: Redis | Cluster, prefix: string): Promise<number> {
  const keys = await prefixKeys(redis, prefix);
  let removed = 0;
  for (let i = 0; i < keys.length; i += 1000) {
    const counts = await Promise.all(keys.slice(i, i + 1000).map((k) => redis.unlink(k)));
    for (const n of counts) removed += n;
  }
  return removed;
}
