/**
 * Numbers from a Redis server's INFO, for the benches: one reader instead of
 * a regex per bench. A field INFO does not give is an error, never a zero.
 */
import { Redis } from "ioredis";

/** A numeric field of an INFO reply. */
export function infoNumber(info: string, field: string): number {
  const m = new RegExp(`^${field}:([\\d.]+)`, "m").exec(info);
  if (m === null) throw new Error(`Redis INFO has no ${field}`);
  return Number(m[1]);
}

/** One INFO section, from a connection of the caller's or from a connection opened (and closed) for it. */
export async function redisInfo(redis: Redis | string, section: string): Promise<string> {
  if (typeof redis !== "string") return redis.info(section);
  const r = new Redis(redis);
  try {
    return await r.info(section);
  } finally {
    await r.quit();
  }
}

/** used_cpu_user + used_cpu_sys of the server, in seconds. */
export async function redisCpuSeconds(redis: Redis | string): Promise<number> {
  const info = await redisInfo(redis, "cpu");
  return infoNumber(info, "used_cpu_user") + infoNumber(info, "used_cpu_sys");
}
