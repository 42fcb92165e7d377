/**
 * `mufold serve [--port 8080] [--host 127.0.0.1]`: the read-only HTTP API
 * (src/http/server.ts) over the live generation in Redis, with /metrics,
 * /healthz and /readyz (check "redis"). Starts while Redis is unreachable
 * (not ready until it answers) but stops at once if Redis refuses the
 * credentials. Runs until SIGTERM/SIGINT, then stops accepting, lets
 * in-flight requests finish and closes Redis.
 */
import { resolveSettings } from "../config/settings.js";
import { MufoldError } from "../errors.js";
import { createLogger } from "../observability/log.js";
import { createRegistry } from "../observability/metrics.js";
import { RedisAuthError, connectRedis, isAuthFailure, readerClientSettings, type RedisClient } from "../adapters/redis/connect.js";
import { redactRedisUrl } from "../config/redis-url.js";
import { ProjectionReader } from "../client/readback.js";
import { Readiness } from "../http/readiness.js";
import { startHttpServer } from "../http/server.js";
import { commandFlags } from "./command.js";
import { SERVE } from "./specs.js";
import { listenAddress } from "./values.js";
import { packageVersion } from "./version.js";

const DEFAULT_PORT = 8080;

/** serve's flags for two settings (SERVE in specs.ts declares them). */
export const SERVE_ALIASES = { httpPort: "port", httpHost: "host" } as const;

/** Passes when the client is connected and Redis answers PING. */
export function redisReadiness(redis: RedisClient): () => Promise<void> {
  return async () => {
    if (redis.status !== "ready") throw new Error(`Redis connection is ${redis.status}`);
    const pong = await redis.ping();
    if (pong !== "PONG") throw new Error(`Redis answered PING with ${JSON.stringify(pong)}`);
  };
}

/** Resolves when Redis refuses the credentials before the client was ever ready. */
function credentialsRefused(redis: RedisClient, endpoint: string): Promise<RedisAuthError> {
  return new Promise((resolve) => {
    const onError = (err: Error) => {
      if (!isAuthFailure(err)) return;
      off();
      resolve(new RedisAuthError(`Redis at ${endpoint} refused the credentials: ${err.message}`));
    };
    const off = () => {
      redis.off("error", onError);
      redis.off("node error", onError);
      redis.off("ready", off);
    };
    redis.on("error", onError);
    redis.on("node error", onError);
    redis.once("ready", off);
  });
}

export async function serveCommand(args: string[]): Promise<number> {
  const values = await commandFlags(SERVE, args);
  if (values === undefined) return 0;
  // --port and --host are serve's own names of the httpPort and httpHost settings: one check for fold and serve.
  const settings = resolveSettings(values, process.env, { aliases: SERVE_ALIASES });
  const { port, host } = listenAddress(settings, DEFAULT_PORT)!;
  const log = createLogger({ service: "mufold" }, settings.logLevel).child({ component: "http" });
  const redis = connectRedis(readerClientSettings(settings));
  const refused = credentialsRefused(redis, redactRedisUrl(settings.redisUrl));
  // Without a listener ioredis prints every reconnect failure; log them, at most one line per 10 s.
  let lastRedisError = 0;
  redis.on("error", (error: unknown) => {
    if (isAuthFailure(error) || Date.now() - lastRedisError < 10_000) return;
    lastRedisError = Date.now();
    log.warn("Redis connection error", { error });
  });

  const readiness = new Readiness().register("redis", redisReadiness(redis));
  let server;
  try {
    server = await startHttpServer({
      reader: new ProjectionReader(redis, settings.prefix, settings.reducerVersion, settings.topic),
      registry: createRegistry({ build: { version: packageVersion(), reducerVersion: settings.reducerVersion } }),
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
  return new Promise<number>((resolve, reject) => {
    const shutdown = async () => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      await http.close().catch((error) => log.warn("http close failed", { error }));
      await redis.quit().catch(() => redis.disconnect());
    };
    const onSignal = (signal: NodeJS.Signals) => {
      log.info("stopping: finishing in-flight requests", { signal });
      void shutdown().then(() => {
        log.info("stopped");
        resolve(0);
      });
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
    void refused.then((err) => {
      redis.disconnect();
      void shutdown().then(() => reject(err));
    });
  });
}
