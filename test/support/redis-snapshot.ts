/**
 * A Redis that goes back in time, for tests: a point-in-time copy of every key
 * under one prefix (DUMP, in one script so it is one instant, as an RDB or a
 * replica is), and its restore (every key under the prefix removed, the
 * copies RESTOREd with their TTLs). It works on the shared Redis without
 * touching other tests' prefixes; a test that needs a real RDB file uses
 * PrivateRedis.
 */
import type { Redis } from "ioredis";

export interface PrefixSnapshot {
  readonly prefix: string;
  readonly keys: ReadonlyMap<string, { dump: Buffer; ttlMs: number }>;
}

async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    out.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return out;
}

/** Copy every key under `prefix` at one instant (one script: nothing runs between its reads). */
export async function snapshotPrefix(redis: Redis, prefix: string): Promise<PrefixSnapshot> {
  const script = `local out = {}
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
  out[#out + 1] = k; out[#out + 1] = redis.call('DUMP', k); out[#out + 1] = redis.call('PTTL', k)
end
return out`;
  const flat = (await redis.callBuffer("EVAL", script, 0, `${prefix}:*`)) as (Buffer | number)[];
  const keys = new Map<string, { dump: Buffer; ttlMs: number }>();
  for (let i = 0; i + 2 < flat.length; i += 3) keys.set(String(flat[i]), { dump: flat[i + 1] as Buffer, ttlMs: Number(flat[i + 2]) });
  return { prefix, keys };
}

/** Put the prefix back exactly as the snapshot holds it: keys made since are removed, changed ones replaced. */
export async function restorePrefix(redis: Redis, snapshot: PrefixSnapshot): Promise<void> {
  const now = await keysUnder(redis, snapshot.prefix);
  const tx = redis.multi();
  for (const key of now) tx.unlink(key);
  for (const [key, { dump, ttlMs }] of snapshot.keys) tx.restore(key, ttlMs > 0 ? ttlMs : 0, dump, "REPLACE");
  const replies = (await tx.exec()) ?? [];
  for (const [err] of replies) if (err) throw err;
}
