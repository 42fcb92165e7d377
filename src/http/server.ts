/**
 * The read-only HTTP API over the projections (node:http, no framework).
 *
 *   GET /v1/projections/{identity}                       the packet, exactly the stored bytes
 *   GET /v1/projections?agent_id=&project_id=&corpus_id=&surface_id=
 *       &retrieval_snapshot_ref=&policy_snapshot_ref=[&reducer_version=]
 *                                                        the same, identity computed with identityOf
 *       both also with as_of_offset=P:O[,P:O…] or as_of_time=ISO8601: the packet as of that point
 *   GET /v1/projections/{identity}/explain[?as_of_offset=…|?as_of_time=…]
 *                                                        every delivery explained (canonical JSON)
 *   GET /v1/projections/{identity}/subjects/{subject_id} one subject object (canonical JSON)
 *   GET /v1/identities?limit=&cursor=                    identities in sorted order, paged
 *   GET /metrics   Prometheus text      GET /healthz   process up      GET /readyz   every readiness check passes
 *
 * Projections, explanations and subjects carry `ETag: "<sha256 hex of the body>"`
 * and answer 304 to a matching If-None-Match. Errors are JSON `{"error", "reason"}`. The
 * live generation is read on every request, so a promoted replay is served at
 * once. HEAD is answered like GET without a body; other methods get 405.
 *
 * The routes are in ./routes (one module each, table in ./router.ts); this
 * module parses the request, turns errors into replies, writes the response,
 * counts it, and listens and closes.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { DEFAULT_REDUCER_VERSION } from "../core/index.js";
import type { Logger } from "../observability/log.js";
import type { ProjectionReader } from "../client/readback.js";
import { httpMetrics } from "./http-metrics.js";
import { projectionSource } from "./projection-source.js";
import { Readiness, type ReadinessCheck } from "./readiness.js";
import { errorReply, HttpError, jsonReply, type Reply } from "./reply.js";
import { dispatch, matchRoute, type MatchedRoute, type RouteDeps } from "./router.js";
import { readinessLogger } from "./routes/health.js";

export interface HttpServerOptions {
  reader: ProjectionReader;
  /** Served at GET /metrics (404 without one); the server adds its own `mufold_http_*` metrics to it. */
  registry?: Registry;
  /** Checks behind GET /readyz: a Readiness, or name → async check. None registered means ready. */
  readiness?: Readiness | Record<string, ReadinessCheck>;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  log?: Logger;
  /** reducer_version for by-scope lookups that do not name one (default memory_utility_reducer_v0). */
  reducerVersion?: string;
  /** A Redis call slower than this answers 503 store_unavailable (default 5000 ms). */
  storeTimeoutMs?: number;
  /** On close, in-flight requests get this long before their connections are cut (default 5000 ms). */
  closeGraceMs?: number;
}

export interface HttpServerHandle {
  readonly port: number;
  readonly host: string;
  readonly readiness: Readiness;
  readonly server: Server;
  /** Stop accepting, let in-flight requests finish (bounded by closeGraceMs), close every connection. */
  close(): Promise<void>;
}

export async function startHttpServer(options: HttpServerOptions): Promise<HttpServerHandle> {
  const { registry, log } = options;
  const host = options.host ?? "127.0.0.1";
  const closeGraceMs = options.closeGraceMs ?? 5_000;
  const readiness = options.readiness instanceof Readiness ? options.readiness : new Readiness(options.readiness ?? {});
  const metrics = registry === undefined ? undefined : httpMetrics(registry);
  const deps: RouteDeps = {
    source: projectionSource(options.reader, { storeTimeoutMs: options.storeTimeoutMs ?? 5_000, log }),
    reducerVersion: options.reducerVersion ?? DEFAULT_REDUCER_VERSION,
    registry,
    readiness,
    logReadiness: readinessLogger(log),
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    req.resume(); // a GET body, if any, is ignored
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const query = new URLSearchParams(q < 0 ? "" : url.slice(q + 1));
    let matched: MatchedRoute = { route: "unknown", params: [] };
    let reply: Reply;
    try {
      if (!path.startsWith("/")) throw new HttpError(400, "bad_request", "the request target must be a path");
      matched = matchRoute(path);
      reply = await dispatch(req.method, matched.route, { query, params: matched.params, headers: req.headers }, deps);
    } catch (err) {
      if (err instanceof HttpError) {
        reply = errorReply(err);
      } else {
        log?.error("request failed", { method: req.method, path, error: err });
        reply = jsonReply(500, { error: "internal error", reason: "internal" });
      }
    }
    const headers: Record<string, string> = { "x-content-type-options": "nosniff", ...reply.headers };
    if (reply.status !== 304) headers["content-length"] = String(reply.body.length);
    res.writeHead(reply.status, headers);
    res.end(req.method === "HEAD" || reply.status === 304 ? undefined : reply.body);
    const seconds = (performance.now() - started) / 1000;
    metrics?.observe(matched.route, req.method, reply.status, seconds);
    log?.debug("request", { method: req.method, path, route: matched.route, status: reply.status, ms: Math.round(seconds * 1000 * 10) / 10 });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error) => {
      log?.error("response failed", { error });
      res.destroy();
    });
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once("error", onError);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", onError);
      resolve();
    });
  });
  server.on("error", (error) => log?.error("http server error", { error }));
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  return {
    port,
    host,
    readiness,
    server,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), closeGraceMs);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      })),
  };
}
