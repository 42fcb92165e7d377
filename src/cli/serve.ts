/**
 * `mufold serve [--port 8080] [--host 127.0.0.1]`: the read-only HTTP API
 * (src/http/server.ts) over the live generation in Redis, with /metrics,
 * /healthz and /readyz (check "redis"). Runs until SIGTERM/SIGINT, then stops
 * accepting, lets in-flight requests finish and closes Redis.
 */
import { parseArgs } from "node:util";
import { resolveSettings, settingFlags } from "../config.js";
import { MufoldError } from "../errors.js";
import { createLogger } from "../log.js";
import { createRegistry } from "../metrics.js";
import { connectRedis, redisClientSettings, type RedisClient } from "../adapters/redis/connect.js";
import { ProjectionReader } from "../readback.js";
import { Readiness } from "../http/readiness.js";
import { startHttpServer } from "../http/server.js";

const DEFAULT_PORT = 8080;
const DEFAULT_HOST = "127.0.0.1";

function parsePort(raw: string, source: string): number {
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 0 && port <= 65535)) throw new MufoldError(`invalid ${source} = ${JSON.stringify(raw)}: must be a port number from 0 to 65535`);
  return port;
}

/** Passes when the client is connected and Redis answers PING. */
export function redisReadiness(redis: RedisClient): () => Promise<void> {
  return async () => {
    if (redis.status !== "ready") throw new Error(`Redis connection is ${redis.status}`);
    const pong = await redis.ping();
    if (pong !== "PONG") throw new Error(`Redis answered PING with ${JSON.stringify(pong)}`);
  };
}

export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { ...settingFlags(), port: { type: "string" }, host: { type: "string" } },
    allowPositionals: false,
  });
  const settings = resolveSettings(values as Record<string, string | boolean | undefined>);
  const port =
    values.port !== undefined
      ? parsePort(values.port, "--port")
      : process.env.MUFOLD_HTTP_PORT !== undefined
        ? parsePort(process.env.MUFOLD_HTTP_PORT, "MUFOLD_HTTP_PORT")
        : DEFAULT_PORT;
  const host = values.host ?? process.env.MUFOLD_HTTP_HOST ?? DEFAULT_HOST;
  if (host.trim() === "") throw new MufoldError("invalid --host: empty");

  const log = createLogger({ service: "mufold" }).child({ component: "http" });
  const redis = connectRedis(redisClientSettings(settings));
  // Without a listener ioredis prints every reconnect failure; log them, at most one line per 10 s.
  let lastRedisError = 0;
  redis.on("error", (error: unknown) => {
    if (Date.now() - lastRedisError < 10_000) return;
    lastRedisError = Date.now();
    log.warn("Redis connection error", { error });
  });

  const readiness = new Readiness().register("redis", redisReadiness(redis));
  let server;
  try {
    server = await startHttpServer({
      reader: new ProjectionReader(redis, settings.prefix),
      registry: createRegistry(),
      readiness,
      port,
      host,
      log,
      reducerVersion: settings.reducerVersion,
    });
  } catch (err) {
    await redis.quit().catch(() => redis.disconnect());
    const code = (err as { code?: string }).code;
    if (code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL" || code === "ENOTFOUND") {
      throw new MufoldError(`cannot listen on ${host}:${port}: ${(err as Error).message}`);
    }
    throw err;
  }
  log.info("serving", { host: server.host, port: server.port, prefix: settings.prefix });

  const http = server;
  return new Promise<number>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      log.info("stopping: finishing in-flight requests", { signal });
      void http
        .close()
        .catch((error) => log.warn("http close failed", { error }))
        .then(() => redis.quit().catch(() => redis.disconnect()))
        .then(() => {
          log.info("stopped");
          resolve(0);
        });
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
}
