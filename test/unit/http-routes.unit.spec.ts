/**
 * The HTTP routes without a socket: each route is called with a request
 * context and fake dependencies (test/integration/http.int.spec.ts covers the
 * same answers over real HTTP, on a real Redis).
 */
import { describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { identityOf } from "../../src/client/readback.js";
import { etagOf } from "../../src/core/digest.js";
import { MufoldError } from "../../src/errors.js";
import type { Logger } from "../../src/observability/log.js";
import { httpMetrics } from "../../src/http/http-metrics.js";
import { projectionSource, type ProjectionSource } from "../../src/http/projection-source.js";
import { Readiness, type CheckResult } from "../../src/http/readiness.js";
import { errorReply, HttpError, type Reply } from "../../src/http/reply.js";
import type { RequestContext } from "../../src/http/request.js";
import { dispatch, matchRoute, type RouteDeps } from "../../src/http/router.js";
import { healthz, readinessLogger, readyz } from "../../src/http/routes/health.js";
import { identities, MAX_PAGE } from "../../src/http/routes/identities.js";
import { metrics } from "../../src/http/routes/metrics.js";
import { projection, projectionByScope } from "../../src/http/routes/projection.js";
import { subject } from "../../src/http/routes/subject.js";

const scope = { agent_id: "a1", project_id: "p1", corpus_id: "c1", surface_id: "s1" };
const ID = identityOf({ scope, retrieval_snapshot_ref: "r1", policy_snapshot_ref: "pol1" });
const PACKET = '{"subjects":[{"subject_id":"s1","b":2,"a":1}],"z":1}';
const IDS = Array.from({ length: 5 }, (_, i) => `mur_${String(i).repeat(64)}`);

const source: ProjectionSource = {
  generation: async () => 7,
  packet: async (identity) => {
    if (identity === ID) return PACKET;
    throw new HttpError(404, "unknown_identity", `no projection for identity ${identity}`, { identity });
  },
  identities: async () => IDS,
};

const ctx = (query: Record<string, string> | string = {}, params: string[] = [], headers: RequestContext["headers"] = {}): RequestContext => ({
  query: new URLSearchParams(query),
  params,
  headers,
});

/** The HttpError a route throws (fails the test when it answers instead). */
async function refusal(answer: Promise<Reply>): Promise<HttpError> {
  const err = await answer.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HttpError);
  return err as HttpError;
}

const text = (reply: Reply) => reply.body.toString("utf8");
const json = (reply: Reply) => JSON.parse(text(reply)) as Record<string, unknown>;

describe("router", () => {
  it("maps each path to its route and captures percent-decoded segments", () => {
    expect(matchRoute("/healthz")).toEqual({ route: "healthz", params: [] });
    expect(matchRoute("/readyz")).toEqual({ route: "readyz", params: [] });
    expect(matchRoute("/metrics")).toEqual({ route: "metrics", params: [] });
    expect(matchRoute("/v1/identities")).toEqual({ route: "identities", params: [] });
    expect(matchRoute("/v1/projections")).toEqual({ route: "projection_by_scope", params: [] });
    expect(matchRoute(`/v1/projections/${ID}`)).toEqual({ route: "projection", params: [ID] });
    expect(matchRoute("/v1/projections/a%3Ab/subjects/s%201")).toEqual({ route: "subject", params: ["a:b", "s 1"] });
    expect(matchRoute("/v1/projections/")).toEqual({ route: "projection", params: [""] });
    for (const path of ["/healthz/", "//healthz", "/v1/identities/", `/v1/projections/${ID}/other/s1`, `/v1/projections/${ID}/subjects/s1/x`]) {
      expect(matchRoute(path).route).toBe("unknown");
    }
  });

  it("malformed percent-encoding is a 400", () => {
    expect(() => matchRoute("/v1/projections/%ZZ")).toThrow(expect.objectContaining({ status: 400, reason: "bad_request" }));
  });

  it("dispatch: 404 for no route, 405 (with Allow) for a method other than GET or HEAD, else the route's answer", async () => {
    const deps = { source } as RouteDeps;
    expect(await refusal(dispatch("GET", "unknown", ctx(), deps))).toMatchObject({ status: 404, reason: "not_found" });
    expect(await refusal(dispatch("POST", "unknown", ctx(), deps))).toMatchObject({ status: 404 });
    const post = await refusal(dispatch("POST", "healthz", ctx(), deps));
    expect(post).toMatchObject({ status: 405, reason: "method_not_allowed", message: "method POST is not allowed: GET or HEAD", headers: { allow: "GET, HEAD" } });
    expect(text(await dispatch("HEAD", "healthz", ctx(), deps))).toBe('{"status":"ok"}');
    expect(text(await dispatch("GET", "projection", ctx({}, [ID]), deps))).toBe(PACKET);
  });
});

describe("replies", () => {
  it("an HttpError becomes a JSON error body with its extra fields and headers", () => {
    const reply = errorReply(new HttpError(503, "store_unavailable", "down", { x: 1 }, { "retry-after": "1" }));
    expect(reply.status).toBe(503);
    expect(text(reply)).toBe('{"error":"down","reason":"store_unavailable","x":1}');
    expect(reply.headers).toEqual({ "content-type": "application/json; charset=utf-8", "cache-control": "no-store", "retry-after": "1" });
  });
});

describe("projection routes", () => {
  const etag = etagOf(Buffer.from(PACKET, "utf8"));

  it("by identity: the stored bytes with their ETag, 304 on a matching If-None-Match", async () => {
    const ok = await projection(ctx({}, [ID]), { source });
    expect(ok.status).toBe(200);
    expect(text(ok)).toBe(PACKET);
    expect(ok.headers).toEqual({ "content-type": "application/json; charset=utf-8", etag, "cache-control": "no-cache" });
    const notModified = await projection(ctx({}, [ID], { "if-none-match": `W/${etag}` }), { source });
    expect(notModified.status).toBe(304);
    expect(notModified.body.length).toBe(0);
    expect(notModified.headers.etag).toBe(etag);
  });

  it("by identity: a malformed identity is a 400, an unknown one the source's 404", async () => {
    expect(await refusal(projection(ctx({}, ["nope"]), { source }))).toMatchObject({ status: 400, reason: "malformed_identity" });
    const other = identityOf({ scope, retrieval_snapshot_ref: "r2", policy_snapshot_ref: "pol1" });
    expect(await refusal(projection(ctx({}, [other]), { source }))).toMatchObject({ status: 404, reason: "unknown_identity" });
  });

  it("by scope: the identity is computed (default reducer_version) and echoed in X-Mufold-Identity", async () => {
    const query = { ...scope, retrieval_snapshot_ref: "r1", policy_snapshot_ref: "pol1" };
    const reply = await projectionByScope(ctx(query), { source, reducerVersion: "memory_utility_reducer_v0" });
    expect(text(reply)).toBe(PACKET);
    expect(reply.headers["x-mufold-identity"]).toBe(ID);
    const otherVersion = await refusal(projectionByScope(ctx(query), { source, reducerVersion: "v9" }));
    expect(otherVersion).toMatchObject({ status: 404, extra: { identity: identityOf({ scope, retrieval_snapshot_ref: "r1", policy_snapshot_ref: "pol1", reducer_version: "v9" }) } });
  });

  it("by scope: a missing, repeated or malformed parameter is a 400 naming it", async () => {
    const deps = { source, reducerVersion: "memory_utility_reducer_v0" };
    const full = { ...scope, retrieval_snapshot_ref: "r1", policy_snapshot_ref: "pol1" };
    expect(await refusal(projectionByScope(ctx({ ...full, agent_id: "" }), deps))).toMatchObject({ status: 400, reason: "missing_parameter", extra: { parameter: "agent_id" } });
    expect(await refusal(projectionByScope(ctx(`${new URLSearchParams(full)}&corpus_id=c2`), deps))).toMatchObject({ reason: "invalid_parameter", extra: { parameter: "corpus_id" } });
    expect(await refusal(projectionByScope(ctx({ ...full, project_id: "-x" }), deps))).toMatchObject({ reason: "invalid_parameter", extra: { parameter: "project_id" } });
  });
});

describe("subject route", () => {
  it("one subject as canonical JSON with its ETag; unknown or malformed subjects are refused", async () => {
    const reply = await subject(ctx({}, [ID, "s1"]), { source });
    expect(text(reply)).toBe('{"a":1,"b":2,"subject_id":"s1"}');
    expect(reply.headers.etag).toBe(etagOf(reply.body));
    expect(await refusal(subject(ctx({}, [ID, "s9"]), { source }))).toMatchObject({ status: 404, reason: "unknown_subject", extra: { identity: ID, subject_id: "s9" } });
    expect(await refusal(subject(ctx({}, [ID, "-bad"]), { source }))).toMatchObject({ status: 400, reason: "malformed_subject_id" });
  });
});

describe("identities route", () => {
  it("pages through the sorted identities with next_cursor", async () => {
    const first = json(await identities(ctx({ limit: "2" }), { source }));
    expect(first).toEqual({ generation: 7, identities: IDS.slice(0, 2), next_cursor: IDS[1] });
    const next = json(await identities(ctx({ limit: "2", cursor: IDS[1]! }), { source }));
    expect(next).toEqual({ generation: 7, identities: IDS.slice(2, 4), next_cursor: IDS[3] });
    const last = await identities(ctx({ cursor: IDS[3]! }), { source });
    expect(json(last)).toEqual({ generation: 7, identities: IDS.slice(4), next_cursor: null });
    expect(last.headers["cache-control"]).toBe("no-cache");
  });

  it("refuses a limit outside 1..MAX_PAGE, a repeated limit and a cursor that is no identity", async () => {
    for (const limit of ["0", String(MAX_PAGE + 1), "abc", "-1", "1.5"]) {
      expect(await refusal(identities(ctx({ limit }), { source }))).toMatchObject({ status: 400, extra: { parameter: "limit" } });
    }
    expect(await refusal(identities(ctx("limit=1&limit=2"), { source }))).toMatchObject({ reason: "invalid_parameter" });
    expect(await refusal(identities(ctx({ cursor: "zz" }), { source }))).toMatchObject({ extra: { parameter: "cursor" } });
  });
});

describe("health and metrics routes", () => {
  it("healthz is always ok; readyz names each check's state, and 503 lists the failing ones", async () => {
    expect(text(await healthz())).toBe('{"status":"ok"}');
    const seen: CheckResult[][] = [];
    const ready = await readyz(ctx(), { readiness: new Readiness({ redis: async () => true }), logReadiness: (r) => seen.push(r) });
    expect(ready.status).toBe(200);
    expect(text(ready)).toBe('{"status":"ready","checks":{"redis":"ok"}}');
    const failing = new Readiness({ a: async () => true, b: async () => false });
    const notReady = await readyz(ctx(), { readiness: failing, logReadiness: (r) => seen.push(r) });
    expect(notReady.status).toBe(503);
    expect(text(notReady)).toBe('{"error":"not ready: b","reason":"not_ready","failing":["b"],"checks":{"a":"ok","b":"failing"}}');
    expect(seen).toHaveLength(2);
  });

  it("readinessLogger logs a change of the failing checks once", () => {
    const lines: string[] = [];
    const log = { warn: (m: string) => lines.push(m), info: (m: string) => lines.push(m) } as unknown as Logger;
    const logReadiness = readinessLogger(log);
    const bad: CheckResult[] = [{ name: "redis", ok: false, detail: "down", ms: 1 }];
    const good: CheckResult[] = [{ name: "redis", ok: true, ms: 1 }];
    for (const results of [good, bad, bad, good, good]) logReadiness(results);
    expect(lines).toEqual(["not ready", "ready"]);
  });

  it("metrics: 404 without a registry, the exposition with one", async () => {
    expect(await refusal(metrics(ctx(), {}))).toMatchObject({ status: 404, reason: "not_found" });
    const registry = new Registry();
    httpMetrics(registry).observe("healthz", "PATCH", 405, 0.001);
    const reply = await metrics(ctx(), { registry });
    expect(reply.headers["content-type"]).toBe(registry.contentType);
    expect(text(reply)).toContain('mufold_http_requests_total{route="healthz",method="other",code="405"} 1');
  });
});

describe("projection source", () => {
  const reader = (over: Partial<Record<"generation" | "read" | "identities", () => Promise<unknown>>>) =>
    ({ generation: async () => 3, read: async () => PACKET, identities: async () => IDS, ...over }) as unknown as Parameters<typeof projectionSource>[0];

  it("no generation is a 503 no_generation; a failing or slow store a 503 store_unavailable", async () => {
    const none = projectionSource(reader({ generation: async () => Promise.reject(new MufoldError("none")) }), { storeTimeoutMs: 1_000 });
    expect(await none.generation().catch((e: unknown) => e)).toMatchObject({ status: 503, reason: "no_generation", headers: { "retry-after": "5" } });
    const down = projectionSource(reader({ read: async () => Promise.reject(new Error("ECONNREFUSED")) }), { storeTimeoutMs: 1_000 });
    expect(await down.packet(ID).catch((e: unknown) => e)).toMatchObject({ status: 503, reason: "store_unavailable", headers: { "retry-after": "1" } });
    const slow = projectionSource(reader({ identities: () => new Promise(() => undefined) }), { storeTimeoutMs: 5 });
    expect(await slow.identities(3).catch((e: unknown) => e)).toMatchObject({ status: 503, reason: "store_unavailable" });
  });

  it("a packet that is not stored is a 404 unknown_identity", async () => {
    const empty = projectionSource(reader({ read: async () => null }), { storeTimeoutMs: 1_000 });
    expect(await empty.packet(ID).catch((e: unknown) => e)).toMatchObject({ status: 404, reason: "unknown_identity", extra: { identity: ID } });
    expect(await projectionSource(reader({}), { storeTimeoutMs: 1_000 }).packet(ID)).toBe(PACKET);
  });
});
