/** Redis connections from a URL (single node; cluster support lives beside it). */
import { Redis } from "ioredis";

export function connectRedis(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 20, enableAutoPipelining: true, lazyConnect: false });
}
