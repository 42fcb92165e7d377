/**
 * The build's own Redis connection. Not auto-pipelined: ioredis would hold
 * every apply of a chunk until the whole chunk is planned (it flushes its
 * auto-pipeline on setImmediate), leaving Redis idle while the worker plans
 * and the worker idle while Redis applies. Written as they are planned, the
 * applies run in Redis while the next identities are planned; the build's
 * store (writerStore) groups them into few socket writes as the fold's does.
 */
import { Cluster, Redis } from "ioredis";
import { assertFcallRouting, redisClientPlan, redisClientSettings, type RedisClient } from "../../src/adapters/redis/connect.js";
import type { Settings } from "../../src/config/settings.js";

export function connectBuildRedis(settings: Settings): RedisClient {
  const plan = redisClientPlan({ ...redisClientSettings(settings), autoPipelining: false });
  if (plan.kind === "cluster") assertFcallRouting();
  const client = plan.kind === "node" ? new Redis(plan.url, plan.options) : new Cluster(plan.seeds, plan.options);
  client.on("error", () => undefined); // errors surface on the commands that fail, as with connectRedis
  return client;
}
