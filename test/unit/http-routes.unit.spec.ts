/**
 * The HTTP routes without a socket: each route is called with a request
 * context and fake dependencies (test/integration/http.int.spec.ts covers the
 * same answers over real HTTP, on a real Redis).
 */
import { describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { identityOf, type ProjectionExplanation } from "../../src/client/readback.js";
import { AS_OF_OFFSET_FORM, AS_OF_TIME_FORM, AsOfNotAvailableError, type AsOf } from "../../src/client/past.js";
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
import { explain, projection, projectionByScope } from "../../src/http/routes/projection.js";
import { subject } from "../../src/http/routes/subject.js";

const scope = { agent_id: "a1", project_id: "p1", corpus_id: "c1", surface_id: "s1" };
const ID = identityOf({ scope, retrieval_snapshot_ref: "r1", policy_snapshot_ref: "pol1" });
const PACKET = '{"subjects":[{"subject_id":"s1","b":2,"a":1}],"z":1}';
const IDS = Array.from({ length: 5 }, (_, i) => `mur_${String(i).repeat(64)}`);

const PAST = '{"past":1}';
const EXPLANATION: ProjectionExplanation = {
  identity: ID,
  generation: 7,
  version: 3,
  status: "ready",
  text: PAST,
  etag: etagOf(PAST),
  deliveries: [
    { partition: 3, offset: 40n, timestamp: 1_700_000_000_000, observation_id: "muo_x", decision: "accepted", reason: null, repeat: false, feeds: { subject_id: "s1", history: true, conflict: false } },
  ],
  counts: { accepted_observation_count: 1, duplicate_observation_count: 0, conflicting_observation_count: 0, rejected_observation_count: 0, rejected_deliveries: 0 },
  notIndexed: 0,
  asOf: { points: [{ partition: 3, offset: 40n }], deliveries: 1, used: [{ partition: 3, offset: 40n }] },
};
/** The points the fake source was asked for, in order (undefined: an explain without one). */
const asked: (AsOf | undefined)[] = [];
const unknown = (identity: string) => new HttpError(404, "unknown_identity", `no projection for identity ${identity}`, { identity });

const source: ProjectionSource = {
  generation: async () => 7,
  packet: async (identity) => {
    if (identity === ID) return PACKET;
    throw unknown(identity);
  },
  packetAsOf: async (identity, asOf) => {
    asked.push(asOf);
    if (identity !== ID) throw unknown(identity);
    return { text: PAST, used: [{ partition: 0, offset: 17n }, { partition: 3, offset: 40n }], deliveries: 5 };
  },
  explain: async (identity, asOf) => {
    asked.push(asOf);
    if (identity !== ID) throw unknown(identity);
    return EXPLANATION;
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
    expect(matchRoute(`/v1/projections/${ID}/explain`)).toEqual({ route: "explain", params: [ID] });
    expect(matchRoute("/v1/projections/")).toEqual({ route: "projection", params: [""] });
    for (const path of ["/healthz/", "//healthz", "/v1/identities/", `/v1/projections/${ID}/other/s1`, `/v1/projections/${ID}/subjects/s1/x`, `/v1/projections/${ID}/explain/x`, `/v1/projections/${ID}/explains`]) {
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

describe("as-of reads", () => {
  const pastTag = etagOf(Buffer.from(PAST, "utf8"));
  const byScope = { ...scope, retrieval_snapshot_ref: "r1", policy_snapshot_ref: "pol1" };
  const scopeDeps = { source, reducerVersion: "memory_utility_reducer_v0" };

  it("as_of_offset: the as-of bytes with their ETag and the offsets and deliveries used; 304 on a matching If-None-Match", async () => {
    asked.length = 0;
    // The point asked (0:20,3:45,5:2) is not what was used (the fake's 0:17,3:40): the header names the latter.
    const ok = await projection(ctx({ as_of_offset: "0:20,3:45,5:2" }, [ID]), { source });
    expect(asked).toEqual([[{ partition: 0, offset: 20n }, { partition: 3, offset: 45n }, { partition: 5, offset: 2n }]]);
    expect(ok.status).toBe(200);
    expect(text(ok)).toBe(PAST);
    expect(ok.headers).toEqual({
      "content-type": "application/json; charset=utf-8",
      etag: pastTag,
      "cache-control": "no-cache",
      "x-mufold-as-of-used": "0:17,3:40",
      "x-mufold-as-of-deliveries": "5",
    });
    const notModified = await projection(ctx({ as_of_offset: "0:20,3:45,5:2" }, [ID], { "if-none-match": pastTag }), { source });
    expect(notModified.status).toBe(304);
    expect(notModified.body.length).toBe(0);
    expect(notModified.headers).toMatchObject({ etag: pastTag, "x-mufold-as-of-used": "0:17,3:40", "x-mufold-as-of-deliveries": "5" });
    // The live packet's tag is not the as-of bytes' tag: a client caching one does not get a 304 for the other.
    expect((await projection(ctx({ as_of_offset: "0:17" }, [ID], { "if-none-match": etagOf(Buffer.from(PACKET, "utf8")) }), { source })).status).toBe(200);
  });

  it("as_of_time on the by-scope route: the time as given, the headers, and the identity echoed", async () => {
    asked.length = 0;
    const reply = await projectionByScope(ctx({ ...byScope, as_of_time: "2026-12-05T11:30:00.250+02:00" }), scopeDeps);
    expect(asked).toEqual([{ time: "2026-12-05T11:30:00.250+02:00" }]);
    expect(text(reply)).toBe(PAST);
    expect(reply.headers).toMatchObject({ etag: pastTag, "x-mufold-identity": ID, "x-mufold-as-of-used": "0:17,3:40", "x-mufold-as-of-deliveries": "5" });
  });

  it("no point used: X-Mufold-As-Of-Used is the empty string", async () => {
    const none: ProjectionSource = { ...source, packetAsOf: async () => ({ text: PAST, used: [], deliveries: 0 }) };
    const reply = await projection(ctx({ as_of_offset: "2:0" }, [ID]), { source: none });
    expect(reply.headers["x-mufold-as-of-used"]).toBe("");
    expect(reply.headers["x-mufold-as-of-deliveries"]).toBe("0");
  });

  it("both parameters are a 400 malformed_as_of naming both forms, before the store is asked", async () => {
    asked.length = 0;
    const both = { as_of_offset: "0:1", as_of_time: "2026-12-05T09:30:00Z" };
    for (const answer of [projection(ctx(both, [ID]), { source }), projectionByScope(ctx({ ...byScope, ...both }), scopeDeps), explain(ctx(both, [ID]), { source })]) {
      const err = await refusal(answer);
      expect(err).toMatchObject({ status: 400, reason: "malformed_as_of" });
      expect(err.message).toContain(AS_OF_OFFSET_FORM);
      expect(err.message).toContain(AS_OF_TIME_FORM);
    }
    expect(asked).toEqual([]);
  });

  it("a malformed as_of_offset or as_of_time is a 400 malformed_as_of naming the accepted form; a repeated one a 400 invalid_parameter", async () => {
    asked.length = 0;
    for (const bad of ["", "3@12", "3:", ":3", "-1:2", "1:-2", "1:2,1:3", "1:2,", "a:b", "1.0:2", " 1:2", "1:18446744073709551616", "1234567890:1"]) {
      const err = await refusal(projection(ctx({ as_of_offset: bad }, [ID]), { source }));
      expect(err, bad).toMatchObject({ status: 400, reason: "malformed_as_of", extra: { parameter: "as_of_offset" } });
      expect(err.message, bad).toContain(AS_OF_OFFSET_FORM);
    }
    for (const bad of ["", "2026-12-05", "2026-12-05T09:30:00", "2026-02-30T09:30:00Z", "yesterday", "1764927000000", "2026-12-05T25:00:00Z"]) {
      const err = await refusal(projectionByScope(ctx({ ...byScope, as_of_time: bad }), scopeDeps));
      expect(err, bad).toMatchObject({ status: 400, reason: "malformed_as_of", extra: { parameter: "as_of_time" } });
      expect(err.message, bad).toContain(AS_OF_TIME_FORM);
    }
    expect((await refusal(projection(ctx({ as_of_offset: "1:2,1:3" }, [ID]), { source }))).message).toContain("partition 1 is named twice");
    expect(await refusal(projection(ctx("as_of_offset=0:1&as_of_offset=0:2", [ID]), { source }))).toMatchObject({ status: 400, reason: "invalid_parameter", extra: { parameter: "as_of_offset" } });
    expect(await refusal(explain(ctx("as_of_time=2026-12-05T09:30:00Z&as_of_time=2026-12-05T09:30:00Z", [ID]), { source }))).toMatchObject({ status: 400, reason: "invalid_parameter" });
    expect(asked).toEqual([]);
  });

  it("an unknown identity is the source's 404, a malformed one a 400", async () => {
    const other = identityOf({ scope, retrieval_snapshot_ref: "r2", policy_snapshot_ref: "pol1" });
    expect(await refusal(projection(ctx({ as_of_offset: "0:1" }, [other]), { source }))).toMatchObject({ status: 404, reason: "unknown_identity", extra: { identity: other } });
    expect(await refusal(projection(ctx({ as_of_offset: "0:1" }, ["nope"]), { source }))).toMatchObject({ status: 400, reason: "malformed_identity" });
  });
});

describe("explain route", () => {
  // EXPLANATION in its JSON form, written out by hand: sorted keys, offsets as integers, positions as "p:o".
  const BODY =
    '{"as_of":{"deliveries":1,"points":["3:40"],"time":null,"used":["3:40"]},' +
    '"counts":{"accepted_observation_count":1,"conflicting_observation_count":0,"duplicate_observation_count":0,"rejected_deliveries":0,"rejected_observation_count":0},' +
    '"deliveries":[{"decision":"accepted","feeds":{"conflict":false,"history":true,"subject_id":"s1"},"observation_id":"muo_x","offset":40,"partition":3,"reason":null,"repeat":false,"timestamp":1700000000000}],' +
    `"etag":${JSON.stringify(etagOf(PAST))},"generation":7,"identity":"${ID}","not_indexed":0,"status":"ready","version":3}`;

  it("the explanation as canonical JSON with the ETag of those bytes; 304 on a matching If-None-Match", async () => {
    asked.length = 0;
    const ok = await explain(ctx({}, [ID]), { source });
    expect(text(ok)).toBe(BODY);
    expect(ok.headers).toEqual({ "content-type": "application/json; charset=utf-8", etag: etagOf(Buffer.from(BODY, "utf8")), "cache-control": "no-cache" });
    const notModified = await explain(ctx({ as_of_time: "2026-12-05T09:30:00Z" }, [ID], { "if-none-match": etagOf(Buffer.from(BODY, "utf8")) }), { source });
    expect(notModified.status).toBe(304);
    expect(asked).toEqual([undefined, { time: "2026-12-05T09:30:00Z" }]);
    expect(text(await dispatch("GET", "explain", ctx({ as_of_offset: "3:40" }, [ID]), { source } as RouteDeps))).toBe(BODY);
    expect(asked.at(-1)).toEqual([{ partition: 3, offset: 40n }]);
  });

  it("a malformed point is a 400, a malformed identity a 400, an unknown one a 404", async () => {
    expect(await refusal(explain(ctx({ as_of_offset: "3" }, [ID]), { source }))).toMatchObject({ status: 400, reason: "malformed_as_of" });
    expect(await refusal(explain(ctx({}, ["mur_x"]), { source }))).toMatchObject({ status: 400, reason: "malformed_identity" });
    expect(await refusal(explain(ctx({}, [`mur_${"0".repeat(64)}`]), { source }))).toMatchObject({ status: 404, reason: "unknown_identity" });
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
  const READ = { text: PAST, asOf: { points: [], time: "2026-12-05T09:30:00.000Z", deliveries: 2, used: [{ partition: 1, offset: 9n }] } };
  const reader = (over: Partial<Record<"generation" | "read" | "identities" | "get" | "explain", () => Promise<unknown>>>) =>
    ({ generation: async () => 3, read: async () => PACKET, identities: async () => IDS, get: async () => READ, explain: async () => EXPLANATION, ...over }) as unknown as Parameters<typeof projectionSource>[0];
  const failure = (answer: Promise<unknown>) => answer.then(() => undefined, (e: unknown) => e);

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

  it("as-of and explain: the reader's answer, and what it used", async () => {
    const live = projectionSource(reader({}), { storeTimeoutMs: 1_000 });
    expect(await live.packetAsOf(ID, { time: "2026-12-05T09:30:00Z" })).toEqual({ text: PAST, used: [{ partition: 1, offset: 9n }], deliveries: 2 });
    expect(await live.explain(ID, undefined)).toBe(EXPLANATION);
  });

  it("as-of and explain: AsOfNotAvailableError is a 422 as_of_not_available with its message and the available range, bigints as strings", async () => {
    const beyond = new AsOfNotAvailableError("generation 3 has folded t partition 3 up to offset 9007199254740993", { partition: 3, from: 0n, to: 9_007_199_254_740_993n });
    const refused = projectionSource(reader({ get: async () => Promise.reject(beyond), explain: async () => Promise.reject(beyond) }), { storeTimeoutMs: 1_000 });
    for (const answer of [refused.packetAsOf(ID, [{ partition: 3, offset: 9_007_199_254_740_994n }]), refused.explain(ID, { time: "2026-12-05T09:30:00Z" })]) {
      const err = (await failure(answer)) as HttpError;
      expect(err).toMatchObject({ status: 422, reason: "as_of_not_available", message: beyond.message, extra: { available: { partition: 3, from: "0", to: "9007199254740993" } } });
      expect(text(errorReply(err))).toBe(
        `{"error":${JSON.stringify(beyond.message)},"reason":"as_of_not_available","available":{"partition":3,"from":"0","to":"9007199254740993"}}`,
      );
    }
    const nothing = new AsOfNotAvailableError("2099-01-01T00:00:00.000Z is later than now", null);
    const later = projectionSource(reader({ get: async () => Promise.reject(nothing) }), { storeTimeoutMs: 1_000 });
    expect(await failure(later.packetAsOf(ID, { time: "2099-01-01T00:00:00Z" }))).toMatchObject({ status: 422, reason: "as_of_not_available", extra: { available: null } });
  });

  it("as-of and explain: unknown is a 404; no generation a 503 no_generation; a failing or slow store a 503 store_unavailable", async () => {
    const empty = projectionSource(reader({ get: async () => null, explain: async () => null }), { storeTimeoutMs: 1_000 });
    expect(await failure(empty.packetAsOf(ID, [{ partition: 0, offset: 1n }]))).toMatchObject({ status: 404, reason: "unknown_identity", extra: { identity: ID } });
    expect(await failure(empty.explain(ID, undefined))).toMatchObject({ status: 404, reason: "unknown_identity", extra: { identity: ID } });
    const none = projectionSource(reader({ generation: async () => Promise.reject(new MufoldError("none")) }), { storeTimeoutMs: 1_000 });
    expect(await failure(none.packetAsOf(ID, [{ partition: 0, offset: 1n }]))).toMatchObject({ status: 503, reason: "no_generation" });
    expect(await failure(none.explain(ID, undefined))).toMatchObject({ status: 503, reason: "no_generation" });
    // A MufoldError from inside the read (a promote raced it five times) is the store's, not a 500.
    const down = projectionSource(
      reader({ get: async () => Promise.reject(new Error("ECONNRESET")), explain: async () => Promise.reject(new MufoldError("changed during 5 reads", { retriable: true })) }),
      { storeTimeoutMs: 1_000 },
    );
    expect(await failure(down.packetAsOf(ID, [{ partition: 0, offset: 1n }]))).toMatchObject({ status: 503, reason: "store_unavailable", headers: { "retry-after": "1" } });
    expect(await failure(down.explain(ID, undefined))).toMatchObject({ status: 503, reason: "store_unavailable" });
    const slow = projectionSource(reader({ get: () => new Promise(() => undefined), explain: () => new Promise(() => undefined) }), { storeTimeoutMs: 5 });
    expect(await failure(slow.packetAsOf(ID, [{ partition: 0, offset: 1n }]))).toMatchObject({ status: 503, reason: "store_unavailable" });
    expect(await failure(slow.explain(ID, undefined))).toMatchObject({ status: 503, reason: "store_unavailable" });
  });
});
