/**
 * The read-only HTTP API over the projections (node:http, no framework).
 *
 *   GET /v1/projections/{identity}                       the packet, exactly the stored bytes
 *   GET /v1/projections?agent_id=&project_id=&corpus_id=&surface_id=
 *       &retrieval_snapshot_ref=&policy_snapshot_ref=[&reducer_version=]
 *                                                        the same, identity computed with identityOf
 *   GET /v1/projections/{identity}/subjects/{subject_id} one subject object (canonical JSON)
 *   GET /v1/identities?limit=&cursor=                    identities in sorted order, paged
 *   GET /metrics   Prometheus text      GET /healthz   process up      GET /readyz   every readiness check passes
 *
 * Projections and subjects carry `ETag: "<sha256 hex of the body>"` and answer
 * 304 to a matching If-None-Match. Errors are JSON `{"error", "reason"}`. The
 * live generation is read on every request, so a promoted replay is served at
 * once. HEAD is answered like GET without a body; other methods get 405.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, Histogram, type Registry } from "prom-client";
import { canonicalJson, isPyObject, parsePyJson, ContractError, DEFAULT_REDUCER_VERSION, IDENTITY_PATTERN, type PyObject } from "../core/index.js";
import { OPAQUE_REF_RE } from "../core/fields.js";
import { MufoldError } from "../errors.js";
import type { Logger } from "../observability/log.js";
import { identityOf, type ProjectionReader } from "../client/readback.js";
import { ifNoneMatchHits } from "./etag.js";
import { etagOf } from "../core/digest.js";
import { Readiness, type CheckResult, type ReadinessCheck } from "./readiness.js";

export const SCOPE_PARAMS = ["agent_id", "project_id", "corpus_id", "surface_id"] as const;
export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

const JSON_TYPE = "application/json; charset=utf-8";

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

/** An answer the handlers give by throwing: status + JSON `{"error", "reason", ...extra}`. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

interface Reply {
  status: number;
  body: Buffer;
  headers: Record<string, string>;
}

type Route = "projection" | "projection_by_scope" | "subject" | "identities" | "metrics" | "healthz" | "readyz" | "unknown";

interface HttpMetrics {
  requests: Counter<"route" | "method" | "code">;
  seconds: Histogram<"route">;
}

function httpMetrics(registry: Registry): HttpMetrics {
  const requests =
    (registry.getSingleMetric("mufold_http_requests_total") as Counter<"route" | "method" | "code"> | undefined) ??
    new Counter({
      name: "mufold_http_requests_total",
      help: "HTTP requests answered, by route, method and status code.",
      labelNames: ["route", "method", "code"] as const,
      registers: [registry],
    });
  const seconds =
    (registry.getSingleMetric("mufold_http_request_seconds") as Histogram<"route"> | undefined) ??
    new Histogram({
      name: "mufold_http_request_seconds",
      help: "Time to answer an HTTP request, by route.",
      labelNames: ["route"] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    });
  return { requests, seconds };
}

const jsonBody = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), "utf8");

function jsonReply(status: number, value: unknown, headers: Record<string, string> = {}): Reply {
  return { status, body: jsonBody(value), headers: { "content-type": JSON_TYPE, "cache-control": "no-store", ...headers } };
}

/** A cacheable representation: 200 with its ETag, or 304 when If-None-Match matches it. */
function taggedReply(req: IncomingMessage, body: Buffer): Reply {
  const etag = etagOf(body);
  const headers = { "content-type": JSON_TYPE, etag, "cache-control": "no-cache" };
  if (ifNoneMatchHits(req.headers["if-none-match"], etag)) return { status: 304, body: Buffer.alloc(0), headers };
  return { status: 200, body, headers };
}

function singleParam(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw new HttpError(400, "invalid_parameter", `query parameter ${name} is given more than once`, { parameter: name });
  return values[0];
}

function refParam(query: URLSearchParams, name: string, required: boolean): string | undefined {
  const value = singleParam(query, name);
  if (value === undefined || value === "") {
    if (!required) return undefined;
    throw new HttpError(400, "missing_parameter", `missing query parameter ${name}`, { parameter: name });
  }
  if (!OPAQUE_REF_RE.test(value)) {
    throw new HttpError(400, "invalid_parameter", `query parameter ${name} must match ${OPAQUE_REF_RE.source}`, { parameter: name });
  }
  return value;
}

function checkIdentity(identity: string): void {
  if (!IDENTITY_PATTERN.test(identity)) throw new HttpError(400, "malformed_identity", `identity must match ${IDENTITY_PATTERN.source}`);
}

/** First index whose identity sorts after `cursor` (ids are sorted by code unit, as Array.prototype.sort does). */
function firstAfter(sorted: readonly string[], cursor: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= cursor) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export async function startHttpServer(options: HttpServerOptions): Promise<HttpServerHandle> {
  const { reader, registry, log } = options;
  const host = options.host ?? "127.0.0.1";
  const storeTimeoutMs = options.storeTimeoutMs ?? 5_000;
  const closeGraceMs = options.closeGraceMs ?? 5_000;
  const reducerVersion = options.reducerVersion ?? DEFAULT_REDUCER_VERSION;
  const readiness = options.readiness instanceof Readiness ? options.readiness : new Readiness(options.readiness ?? {});
  const metrics = registry === undefined ? undefined : httpMetrics(registry);

  let lastFailures = "[]";
  /** Log why checks fail, once per change (probes come every few seconds). */
  function logReadiness(results: CheckResult[]): void {
    const failing = results.filter((r) => !r.ok).map((r) => ({ check: r.name, detail: r.detail ?? "failed" }));
    const key = JSON.stringify(failing);
    if (key === lastFailures) return;
    lastFailures = key;
    if (failing.length > 0) log?.warn("not ready", { failing });
    else log?.info("ready");
  }

  /** Settles like `call()`, or rejects once storeTimeoutMs has passed. */
  async function bounded<T>(what: string, call: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        call(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`${what}: no answer from Redis within ${storeTimeoutMs} ms`)), storeTimeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  function unavailable(what: string, error: unknown): HttpError {
    log?.warn("store unavailable", { what, error });
    return new HttpError(503, "store_unavailable", "the projection store is unavailable", {}, { "retry-after": "1" });
  }

  /** A Redis call: any failure is the store's (503), never the client's. */
  async function store<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await bounded(what, call);
    } catch (err) {
      throw unavailable(what, err);
    }
  }

  /** The live generation, read on every request (a promoted replay is served at once). */
  async function currentGeneration(): Promise<number> {
    try {
      return await bounded("generation", () => reader.generation());
    } catch (err) {
      // ProjectionReader.generation() throws a MufoldError when Redis answers but holds no generation.
      if (err instanceof MufoldError) {
        throw new HttpError(503, "no_generation", "nothing has been folded yet, or the state was lost (run `mufold replay --promote`)", {}, { "retry-after": "5" });
      }
      throw unavailable("generation", err);
    }
  }

  async function readPacket(identity: string): Promise<string> {
    const gen = await currentGeneration();
    const packet = await store("read", () => reader.read(identity, gen));
    if (packet === null) throw new HttpError(404, "unknown_identity", `no projection for identity ${identity}`, { identity });
    return packet;
  }

  const handlers: Record<Exclude<Route, "unknown">, (req: IncomingMessage, query: URLSearchParams, params: string[]) => Promise<Reply>> = {
    healthz: async () => jsonReply(200, { status: "ok" }),

    readyz: async () => {
      const { ready, results } = await readiness.run();
      // Names and states only: why a check fails (error text of Redis, hosts…) goes to the log, not to clients.
      const checks = Object.fromEntries(results.map((r) => [r.name, r.ok ? "ok" : "failing"]));
      logReadiness(results);
      if (ready) return jsonReply(200, { status: "ready", checks });
      const failing = results.filter((r) => !r.ok).map((r) => r.name);
      return jsonReply(503, { error: `not ready: ${failing.join(", ")}`, reason: "not_ready", failing, checks });
    },

    metrics: async () => {
      if (registry === undefined) throw new HttpError(404, "not_found", "metrics are not enabled");
      const text = await registry.metrics();
      return { status: 200, body: Buffer.from(text, "utf8"), headers: { "content-type": registry.contentType, "cache-control": "no-store" } };
    },

    projection: async (req, _query, [identity]) => {
      checkIdentity(identity!);
      return taggedReply(req, Buffer.from(await readPacket(identity!), "utf8"));
    },

    projection_by_scope: async (req, query) => {
      const scope: Record<string, string> = {};
      for (const name of SCOPE_PARAMS) scope[name] = refParam(query, name, true)!;
      const retrieval = refParam(query, "retrieval_snapshot_ref", true)!;
      const policy = refParam(query, "policy_snapshot_ref", true)!;
      const version = refParam(query, "reducer_version", false) ?? reducerVersion;
      let identity: string;
      try {
        identity = identityOf({
          scope: scope as { agent_id: string; project_id: string; corpus_id: string; surface_id: string },
          retrieval_snapshot_ref: retrieval,
          policy_snapshot_ref: policy,
          reducer_version: version,
        });
      } catch (err) {
        if (err instanceof ContractError) throw new HttpError(400, "invalid_parameter", err.message);
        throw err;
      }
      const reply = taggedReply(req, Buffer.from(await readPacket(identity), "utf8"));
      reply.headers["x-mufold-identity"] = identity;
      return reply;
    },

    subject: async (req, _query, [identity, subjectId]) => {
      checkIdentity(identity!);
      if (!OPAQUE_REF_RE.test(subjectId!)) throw new HttpError(400, "malformed_subject_id", `subject_id must match ${OPAQUE_REF_RE.source}`);
      const packet = parsePyJson(await readPacket(identity!));
      const subjects = isPyObject(packet) ? packet.subjects : undefined;
      const subject = Array.isArray(subjects) ? subjects.find((s): s is PyObject => isPyObject(s) && s.subject_id === subjectId) : undefined;
      if (subject === undefined) throw new HttpError(404, "unknown_subject", `identity ${identity} has no subject ${subjectId}`, { identity, subject_id: subjectId });
      return taggedReply(req, Buffer.from(canonicalJson(subject), "utf8"));
    },

    identities: async (_req, query) => {
      const rawLimit = singleParam(query, "limit");
      let limit = DEFAULT_PAGE;
      if (rawLimit !== undefined) {
        limit = /^\d{1,4}$/.test(rawLimit) ? Number(rawLimit) : NaN;
        if (!(limit >= 1 && limit <= MAX_PAGE)) throw new HttpError(400, "invalid_parameter", `limit must be an integer from 1 to ${MAX_PAGE}`, { parameter: "limit" });
      }
      const cursor = singleParam(query, "cursor");
      if (cursor !== undefined && cursor !== "" && !IDENTITY_PATTERN.test(cursor)) {
        throw new HttpError(400, "invalid_parameter", "cursor must be a next_cursor from a previous page", { parameter: "cursor" });
      }
      const gen = await currentGeneration();
      const sorted = await store("identities", () => reader.identities(gen));
      const start = cursor === undefined || cursor === "" ? 0 : firstAfter(sorted, cursor);
      const page = sorted.slice(start, start + limit);
      const more = start + limit < sorted.length;
      return jsonReply(200, { generation: gen, identities: page, next_cursor: more ? page[page.length - 1]! : null }, { "cache-control": "no-cache" });
    },
  };

  function route(path: string): { route: Route; params: string[] } {
    if (path === "/healthz") return { route: "healthz", params: [] };
    if (path === "/readyz") return { route: "readyz", params: [] };
    if (path === "/metrics") return { route: "metrics", params: [] };
    if (path === "/v1/identities") return { route: "identities", params: [] };
    if (path === "/v1/projections") return { route: "projection_by_scope", params: [] };
    const parts = path.split("/");
    // "", "v1", "projections", id[, "subjects", subject]
    if (parts.length >= 4 && parts[0] === "" && parts[1] === "v1" && parts[2] === "projections") {
      const decode = (s: string) => {
        try {
          return decodeURIComponent(s);
        } catch {
          throw new HttpError(400, "bad_request", "malformed percent-encoding in the path");
        }
      };
      if (parts.length === 4) return { route: "projection", params: [decode(parts[3]!)] };
      if (parts.length === 6 && parts[4] === "subjects") return { route: "subject", params: [decode(parts[3]!), decode(parts[5]!)] };
    }
    return { route: "unknown", params: [] };
  }

  async function answer(req: IncomingMessage, matched: { route: Route; params: string[] }, query: URLSearchParams): Promise<Reply> {
    if (matched.route === "unknown") throw new HttpError(404, "not_found", "no such route");
    if (req.method !== "GET" && req.method !== "HEAD") {
      throw new HttpError(405, "method_not_allowed", `method ${req.method ?? "?"} is not allowed: GET or HEAD`, {}, { allow: "GET, HEAD" });
    }
    return handlers[matched.route](req, query, matched.params);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    req.resume(); // a GET body, if any, is ignored
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const query = new URLSearchParams(q < 0 ? "" : url.slice(q + 1));
    let matched: { route: Route; params: string[] } = { route: "unknown", params: [] };
    let reply: Reply;
    try {
      if (!path.startsWith("/")) throw new HttpError(400, "bad_request", "the request target must be a path");
      matched = route(path);
      reply = await answer(req, matched, query);
    } catch (err) {
      if (err instanceof HttpError) {
        reply = jsonReply(err.status, { error: err.message, reason: err.reason, ...err.extra }, err.headers);
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
    metrics?.requests.inc({ route: matched.route, method: req.method === "HEAD" ? "HEAD" : req.method === "GET" ? "GET" : "other", code: String(reply.status) });
    metrics?.seconds.observe({ route: matched.route }, seconds);
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
