/**
 * The HTTP readback API over real HTTP, on projections folded from a real
 * broker into a real Redis: exact bytes, ETags, by-scope lookup, subjects,
 * paging, errors, metrics and readiness.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { canonicalJson, parsePyJson, type Observation, type PyObject } from "../../src/core/index.js";
import { ifNoneMatchHits } from "../../src/http/etag.js";
import { etagOf } from "../../src/core/digest.js";
import { Readiness } from "../../src/http/readiness.js";
import { startHttpServer, type HttpServerHandle } from "../../src/http/server.js";
import { redisReadiness } from "../../src/cli/serve.js";
import { createFoldMetrics, type FoldMetrics } from "../../src/observability/metrics.js";
import { ProjectionReader } from "../../src/client/readback.js";
import type { Settings } from "../../src/config/settings.js";
import { dropPrefix, expectedPackets, quietLog, testSettings, waitCaughtUp } from "../support/pipeline.js";

const FOLD_METRICS = [
  "mufold_records_consumed_total",
  "mufold_deliveries_applied_total",
  "mufold_duplicates_skipped_total",
  "mufold_conflicting_deliveries_total",
  "mufold_dead_letters_total",
  "mufold_cas_retries_total",
  "mufold_batch_seconds",
  "mufold_apply_seconds",
  "mufold_consumer_lag",
  "mufold_identities_cached",
  "mufold_identity_cache_bytes",
];

let settings: Settings;
let observations: Observation[];
let expected: Map<string, string>;
let redis: Redis;
let metrics: FoldMetrics;
let http: HttpServerHandle;
let base: string;
const cleanups: (() => Promise<unknown>)[] = [];

const get = (path: string, init: RequestInit = {}) => fetch(`${base}${path}`, init);

beforeAll(async () => {
  settings = testSettings();
  cleanups.push(() => dropPrefix(settings));
  observations = [...simulate({ agents: 8, observationsPerAgent: 40, duplicateRate: 0.15, conflictRate: 0.05, snapshotEvery: 10, seed: 21 })].map((d) => d.observation);
  expected = expectedPackets(observations);
  await produce(settings, observations.map(observationRecord));
  const worker = await FoldWorker.start(settings, quietLog);
  try {
    await waitCaughtUp(settings);
  } finally {
    await worker.stop();
  }
  redis = new Redis(settings.redisUrl);
  cleanups.push(() => redis.quit());
  metrics = createFoldMetrics();
  http = await startHttpServer({
    reader: new ProjectionReader(redis, settings.prefix),
    registry: metrics.registry,
    readiness: { redis: redisReadiness(redis) },
    port: 0,
    log: quietLog,
  });
  cleanups.push(() => http.close());
  base = `http://127.0.0.1:${http.port}`;
});

afterAll(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

describe("HTTP readback API", () => {
  it("serves every identity's packet byte for byte, with a sha256 ETag and 304 on If-None-Match", async () => {
    expect(expected.size).toBeGreaterThan(20);
    for (const [identity, packet] of expected) {
      const res = await get(`/v1/projections/${identity}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
      const body = Buffer.from(await res.arrayBuffer());
      expect(body.equals(Buffer.from(packet, "utf8"))).toBe(true);
      const etag = res.headers.get("etag");
      expect(etag).toBe(etagOf(packet));
      expect(etag).toMatch(/^"[0-9a-f]{64}"$/);

      const again = await get(`/v1/projections/${identity}`, { headers: { "if-none-match": etag! } });
      expect(again.status).toBe(304);
      expect(again.headers.get("etag")).toBe(etag);
      expect((await again.arrayBuffer()).byteLength).toBe(0);
    }
  });

  it("If-None-Match: *, lists, weak tags; a stale tag gets the packet", async () => {
    const [identity, packet] = [...expected][0]!;
    const etag = etagOf(packet);
    const status = async (inm: string) => (await get(`/v1/projections/${identity}`, { headers: { "if-none-match": inm } })).status;
    expect(await status("*")).toBe(304);
    expect(await status(`"nope", ${etag}`)).toBe(304);
    expect(await status(`W/${etag}`)).toBe(304);
    expect(await status(`"${"0".repeat(64)}"`)).toBe(200);
    expect(ifNoneMatchHits([`"a"`, etag], etag)).toBe(true);
    expect(ifNoneMatchHits(`"a,b", "c"`, etag)).toBe(false);
  });

  it("HEAD answers like GET without a body", async () => {
    const [identity, packet] = [...expected][0]!;
    const res = await get(`/v1/projections/${identity}`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe(etagOf(packet));
    expect(res.headers.get("content-length")).toBe(String(Buffer.byteLength(packet)));
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });

  it("by-scope lookup returns the same bytes as by-identity", async () => {
    let checked = 0;
    for (const [identity, packet] of [...expected].slice(0, 15)) {
      const p = parsePyJson(packet) as PyObject;
      const scope = p.scope as Record<string, string>;
      const q = new URLSearchParams({ ...scope, retrieval_snapshot_ref: String(p.retrieval_snapshot_ref), policy_snapshot_ref: String(p.policy_snapshot_ref) });
      const res = await get(`/v1/projections?${q}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-mufold-identity")).toBe(identity);
      expect(res.headers.get("etag")).toBe(etagOf(packet));
      expect(await res.text()).toBe(packet);
      q.set("reducer_version", "memory_utility_reducer_v0");
      expect(await (await get(`/v1/projections?${q}`)).text()).toBe(packet);
      checked++;
    }
    expect(checked).toBe(15);
  });

  it("by-scope lookup: 400 naming a missing or invalid parameter, 404 for a scope nothing was folded for", async () => {
    const [, packet] = [...expected][0]!;
    const p = parsePyJson(packet) as PyObject;
    const full: Record<string, string> = {
      ...(p.scope as Record<string, string>),
      retrieval_snapshot_ref: String(p.retrieval_snapshot_ref),
      policy_snapshot_ref: String(p.policy_snapshot_ref),
    };
    for (const name of ["agent_id", "project_id", "corpus_id", "surface_id", "retrieval_snapshot_ref", "policy_snapshot_ref"]) {
      const q = new URLSearchParams(full);
      q.delete(name);
      const res = await get(`/v1/projections?${q}`);
      expect(res.status).toBe(400);
      const body = (await res.json()) as Record<string, string>;
      expect(body).toMatchObject({ reason: "missing_parameter", parameter: name });
      expect(body.error).toContain(name);
    }
    for (const [name, value] of [["policy_snapshot_ref", "bad ref"], ["agent_id", "-x"], ["reducer_version", "a/b"], ["corpus_id", "x".repeat(201)]] as const) {
      const q = new URLSearchParams({ ...full, [name]: value });
      const res = await get(`/v1/projections?${q}`);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ reason: "invalid_parameter", parameter: name });
    }
    const twice = await get(`/v1/projections?${new URLSearchParams(full)}&agent_id=other`);
    expect(twice.status).toBe(400);
    const unknown = await get(`/v1/projections?${new URLSearchParams({ ...full, policy_snapshot_ref: "policy:never-seen" })}`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ reason: "unknown_identity" });
  });

  it("serves each subject as canonical JSON with its own ETag; 404 for an unknown subject", async () => {
    let served = 0;
    for (const [identity, packet] of [...expected].slice(0, 10)) {
      const parsed = parsePyJson(packet) as PyObject;
      for (const subject of (parsed.subjects as PyObject[]).slice(0, 3)) {
        const bytes = canonicalJson(subject);
        expect(packet).toContain(bytes);
        const res = await get(`/v1/projections/${identity}/subjects/${encodeURIComponent(String(subject.subject_id))}`);
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
        expect(res.headers.get("etag")).toBe(etagOf(bytes));
        expect(await res.text()).toBe(bytes);
        const cached = await get(`/v1/projections/${identity}/subjects/${encodeURIComponent(String(subject.subject_id))}`, { headers: { "if-none-match": etagOf(bytes) } });
        expect(cached.status).toBe(304);
        served++;
      }
    }
    expect(served).toBeGreaterThan(5);
    const [identity] = [...expected][0]!;
    const missing = await get(`/v1/projections/${identity}/subjects/subject:none`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ reason: "unknown_subject" });
    expect((await get(`/v1/projections/${identity}/subjects/${encodeURIComponent("bad id")}`)).status).toBe(400);
    expect((await get(`/v1/projections/mur_${"0".repeat(64)}/subjects/subject:none`)).status).toBe(404);
  });

  it("pages through every identity exactly once, in sorted order", async () => {
    const all = [...expected.keys()].sort();
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: Response = await get(`/v1/identities?limit=7${cursor === null ? "" : `&cursor=${cursor}`}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { identities: string[]; next_cursor: string | null };
      expect(body.identities.length).toBeLessThanOrEqual(7);
      seen.push(...body.identities);
      cursor = body.next_cursor;
      pages++;
    } while (cursor !== null && pages < 1000);
    expect(seen).toEqual(all);
    expect(pages).toBe(Math.ceil(all.length / 7));

    const first = (await (await get("/v1/identities")).json()) as { identities: string[]; next_cursor: string | null };
    expect(first.identities).toEqual(all.slice(0, 100));
    const big = (await (await get("/v1/identities?limit=1000")).json()) as { identities: string[]; next_cursor: string | null };
    expect(big).toMatchObject({ identities: all, next_cursor: null });
    for (const bad of ["limit=0", "limit=1001", "limit=abc", "limit=1.5", "limit=-1", "cursor=nope", "limit=1&limit=2"]) {
      const res = await get(`/v1/identities?${bad}`);
      expect(res.status, bad).toBe(400);
      expect(await res.json()).toMatchObject({ reason: "invalid_parameter" });
    }
  });

  it("400 for a malformed identity, 404 for an unknown one or an unknown route, 405 for other methods", async () => {
    for (const bad of ["mur_xyz", `mur_${"A".repeat(64)}`, `mur_${"0".repeat(63)}`, "nope", `mur_${"0".repeat(64)}%2F`, "%E0%A4%A"]) {
      const res = await get(`/v1/projections/${bad}`);
      expect(res.status, bad).toBe(400);
      const body = (await res.json()) as Record<string, string>;
      expect(typeof body.error).toBe("string");
      expect(typeof body.reason).toBe("string");
    }
    const unknown = await get(`/v1/projections/mur_${"0".repeat(64)}`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ reason: "unknown_identity" });
    for (const path of ["/", "/v1", "/v2/projections", "/v1/projections/a/b", "/metricsx"]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(await res.json()).toMatchObject({ reason: "not_found" });
    }
    const [identity] = [...expected][0]!;
    for (const method of ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"]) {
      const res = await get(`/v1/projections/${identity}`, { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow")).toBe("GET, HEAD");
      expect(await res.json()).toMatchObject({ reason: "method_not_allowed" });
    }
    expect((await get("/metrics", { method: "POST", body: "x" })).status).toBe(405);
  });

  it("reads the live generation on every request (a promoted generation is served at once)", async () => {
    const control = `${settings.prefix}:control`;
    const generation = await redis.hget(control, "generation");
    const [identity] = [...expected][0]!;
    try {
      await redis.hset(control, "generation", "9999");
      expect((await get(`/v1/projections/${identity}`)).status).toBe(404);
      await redis.hdel(control, "generation");
      const none = await get(`/v1/projections/${identity}`);
      expect(none.status).toBe(503);
      expect(await none.json()).toMatchObject({ reason: "no_generation" });
    } finally {
      await redis.hset(control, "generation", generation!);
    }
    expect((await get(`/v1/projections/${identity}`)).status).toBe(200);
  });

  it("/metrics exposes the fold metrics, process metrics and HTTP metrics; /healthz is up", async () => {
    metrics.recordsConsumed.inc(observations.length);
    metrics.deadLetters.inc({ reason: "value_not_json" });
    const res = await get("/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    for (const name of FOLD_METRICS) expect(text).toContain(`# TYPE ${name} `);
    expect(text).toContain(`mufold_records_consumed_total ${observations.length}`);
    expect(text).toContain('mufold_dead_letters_total{reason="value_not_json"} 1');
    expect(text).toContain("process_cpu_user_seconds_total");
    expect(text).toMatch(/mufold_http_requests_total\{route="projection",method="GET",code="200"\} \d+/);
    const health = await get("/healthz");
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
  });

  it("/readyz is 200 while every check passes, 503 naming the failing ones", async () => {
    const own = new Redis(settings.redisUrl);
    const server = await startHttpServer({
      reader: new ProjectionReader(own, settings.prefix),
      readiness: { redis: redisReadiness(own), kafka: async () => true },
      port: 0,
      log: quietLog,
      storeTimeoutMs: 1_000,
    });
    try {
      const url = `http://127.0.0.1:${server.port}`;
      await own.ping();
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: "ready", checks: { redis: "ok", kafka: "ok" } });

      server.readiness.register("group", async () => {
        throw new Error("not a member of the group");
      });
      const failing = await fetch(`${url}/readyz`);
      expect(failing.status).toBe(503);
      expect(await failing.json()).toMatchObject({ reason: "not_ready", failing: ["group"] });
      server.readiness.unregister("group");

      own.disconnect();
      const down = await fetch(`${url}/readyz`);
      expect(down.status).toBe(503);
      const body = (await down.json()) as { reason: string; failing: string[]; checks: Record<string, string> };
      expect(body).toMatchObject({ reason: "not_ready", failing: ["redis"] });
      expect(body.checks.kafka).toBe("ok");
      const [identity] = [...expected][0]!;
      const read = await fetch(`${url}/v1/projections/${identity}`);
      expect(read.status).toBe(503);
      expect(await read.json()).toMatchObject({ reason: "store_unavailable" });
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    } finally {
      await server.close();
      own.disconnect();
    }
  });
});

describe("startHttpServer", () => {
  it("a check that hangs fails on its timeout; close() ends open keep-alive connections", async () => {
    const own = new Redis(settings.redisUrl);
    const server = await startHttpServer({
      reader: new ProjectionReader(own, settings.prefix),
      readiness: new Readiness({ slow: () => new Promise(() => undefined) }, 200),
      port: 0,
    });
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/readyz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { checks: Record<string, string> };
      // The check's name and state only: its detail ("timed out after 200 ms") goes to the log, not to HTTP clients.
      expect(body.checks.slow).toBe("failing");
      expect(JSON.stringify(body)).not.toContain("timed out");
    } finally {
      // close() resolves with fetch's keep-alive connection still open (how long it takes: bench/deadlines.bench.ts),
      // and the server then serves nothing.
      const port = server.port;
      await server.close();
      await expect(fetch(`http://127.0.0.1:${port}/readyz`)).rejects.toThrow();
      await own.quit();
    }
  });
});
