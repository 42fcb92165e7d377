/**
 * The HTTP readback API over real HTTP, on projections folded from a real
 * broker into a real Redis: exact bytes, ETags, by-scope lookup, subjects,
 * paging, errors, metrics and readiness; as-of reads and explanations against
 * the embedded reducer over the records the test reads back from the topic.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import {
  canonicalJson,
  contextOfObservation,
  emptyIdentityState,
  parsePyJson,
  projectIdentityState,
  reducerIdentity,
  validateObservation,
  type Observation,
  type PyObject,
} from "../../src/core/index.js";
import { explanationJson } from "../../src/client/past-json.js";
import { ifNoneMatchHits } from "../../src/http/etag.js";
import { etagOf } from "../../src/core/digest.js";
import { Readiness } from "../../src/http/readiness.js";
import { startHttpServer, type HttpServerHandle } from "../../src/http/server.js";
import { redisReadiness } from "../../src/cli/serve.js";
import { createFoldMetrics, type FoldMetrics } from "../../src/observability/metrics.js";
import { ProjectionReader } from "../../src/client/readback.js";
import type { Settings } from "../../src/config/settings.js";
import { dropPrefix, expectedPackets, quietLog, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { topicRecords } from "../support/topic-records.js";

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
/** Every record of the first half of each identity's stream has a Kafka timestamp at or before this; none of the second. */
let splitTime: number;
let redis: Redis;
let reader: ProjectionReader;
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
  // Each identity's stream alternately into two halves, the second produced once the clock has passed
  // splitTime: an as-of time that cuts through every identity's records.
  const halves: Observation[][] = [[], []];
  const seen = new Map<string, number>();
  for (const obs of observations) {
    const identity = reducerIdentity(contextOfObservation(obs, settings.reducerVersion));
    const n = seen.get(identity) ?? 0;
    seen.set(identity, n + 1);
    halves[n % 2]!.push(obs);
  }
  // The producers' clocks, as CreateTime keeps them: the first halves at a fixed past second, the second halves a
  // second later.
  splitTime = Date.parse("2026-01-01T00:00:00Z");
  await produce(settings, [
    ...halves[0]!.map((o) => ({ ...observationRecord(o), timestamp: String(splitTime) })),
    ...halves[1]!.map((o) => ({ ...observationRecord(o), timestamp: String(splitTime + 1000) })),
  ]);
  const worker = await FoldWorker.start(settings, quietLog);
  try {
    await waitCaughtUp(settings);
  } finally {
    await worker.stop();
  }
  redis = new Redis(settings.redisUrl);
  cleanups.push(() => redis.quit());
  metrics = createFoldMetrics();
  // The test's topic: as-of offsets are positions on it.
  reader = new ProjectionReader(redis, settings.prefix, settings.reducerVersion, settings.topic);
  http = await startHttpServer({
    reader,
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
      for (const path of [identity, `${identity}?as_of_offset=0:0`, `${identity}?as_of_time=2026-01-01T00:00:00Z`, `${identity}/explain`]) {
        const read = await fetch(`${url}/v1/projections/${path}`);
        expect(read.status, path).toBe(503);
        expect(await read.json()).toMatchObject({ reason: "store_unavailable" });
      }
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

interface Placed {
  observation: Observation;
  partition: number;
  offset: bigint;
  /** The record's Kafka timestamp, ms. */
  timestamp: number;
}

describe("as-of reads and explanations", () => {
  /** Each identity's records, in offset order. */
  const byIdentity = new Map<string, Placed[]>();
  let all: Placed[];
  /** The embedded reducer over the deliveries given: the packet they make. */
  const oracle = (identity: string, included: readonly Placed[]) =>
    included.length === 0
      ? canonicalJson(projectIdentityState(contextOfObservation(byIdentity.get(identity)![0]!.observation, settings.reducerVersion), emptyIdentityState()))
      : expectedPackets(included.map((p) => p.observation), settings.reducerVersion).get(identity)!;
  /** Per partition, the last offset of the included records: what X-Mufold-As-Of-Used must name. */
  const usedOf = (included: readonly Placed[]) => {
    const last = new Map<number, bigint>();
    for (const p of included) if ((last.get(p.partition) ?? -1n) < p.offset) last.set(p.partition, p.offset);
    return [...last].sort((a, b) => a[0] - b[0]).map(([partition, offset]) => `${partition}:${offset}`).join(",");
  };
  const bytes = async (res: Response) => Buffer.from(await res.arrayBuffer()).toString("utf8");

  beforeAll(async () => {
    // The log as the test reads it back, independently of the fold: every record, its position and Kafka timestamp.
    all = (await topicRecords(settings)).map((r) => ({ ...r, observation: validateObservation(parsePyJson(r.value.toString("utf8"))) }));
    expect(all).toHaveLength(observations.length);
    for (const p of all) {
      const identity = reducerIdentity(contextOfObservation(p.observation, settings.reducerVersion));
      let list = byIdentity.get(identity);
      if (list === undefined) byIdentity.set(identity, (list = []));
      list.push(p);
    }
    for (const list of byIdentity.values()) list.sort((a, b) => (a.offset < b.offset ? -1 : 1));
    expect([...byIdentity.keys()].sort()).toEqual([...expected.keys()].sort());
  });

  /** GET `path`; the as-of answer, checked against the expected packet and the included records. */
  async function expectAsOf(path: string, identity: string, included: readonly Placed[]): Promise<string> {
    const res = await get(path);
    expect(res.status, path).toBe(200);
    const body = await bytes(res);
    expect(body, path).toBe(oracle(identity, included));
    expect(res.headers.get("etag")).toBe(etagOf(body));
    expect(res.headers.get("x-mufold-as-of-used"), path).toBe(usedOf(included));
    expect(res.headers.get("x-mufold-as-of-deliveries"), path).toBe(String(included.length));
    const cached = await get(path, { headers: { "if-none-match": res.headers.get("etag")! } });
    expect(cached.status).toBe(304);
    return body;
  }

  it("?as_of_offset= is reader.get's bytes: the reducer over the identity's records up to the point, naming the offsets used", async () => {
    let compared = 0;
    let past = 0;
    let betweens = 0;
    for (const [identity, placed] of [...byIdentity].slice(0, 10)) {
      const partition = placed[0]!.partition;
      expect(placed.every((p) => p.partition === partition)).toBe(true); // keyed by scope: one partition
      // Offsets of this identity, and one of another identity's records between its first and last (used is then not the point).
      const between = all.find((p) => p.partition === partition && p.offset > placed[0]!.offset && p.offset < placed.at(-1)!.offset && !placed.includes(p));
      const points = [placed[0]!.offset, placed[Math.floor(placed.length / 2)]!.offset, placed.at(-1)!.offset, ...(between === undefined ? [] : [between.offset])];
      if (between !== undefined) betweens++;
      for (const offset of points) {
        const included = placed.filter((p) => p.offset <= offset);
        const body = await expectAsOf(`/v1/projections/${identity}?as_of_offset=${partition}:${offset}`, identity, included);
        expect(body).toBe((await reader.get(identity, { asOf: [{ partition, offset }] }))!.text);
        if (included.length < placed.length) past++;
        compared++;
      }
      // At the identity's last offset: the live packet.
      expect(await bytes(await get(`/v1/projections/${identity}?as_of_offset=${partition}:${placed.at(-1)!.offset}`))).toBe(expected.get(identity));
    }
    expect(compared).toBeGreaterThan(30);
    expect(past, "points before an identity's last record").toBeGreaterThan(10);
    expect(betweens, "points on another identity's record").toBeGreaterThan(0);
  });

  it("?as_of_offset= on two partitions, before an identity's first record, and on the by-scope route", async () => {
    const [identity, placed] = [...byIdentity].find(([, list]) => list[0]!.offset > 0n && list.length >= 2)!;
    const partition = placed[0]!.partition;
    // Nothing of it before its first record: the reducer over no delivery, and no offset used.
    await expectAsOf(`/v1/projections/${identity}?as_of_offset=${partition}:${placed[0]!.offset - 1n}`, identity, []);
    // Another partition named too contributes none of this identity's records.
    const other = all.find((p) => p.partition !== partition)!;
    const point = placed[1]!.offset;
    const two = `${other.partition}:${other.offset},${partition}:${point}`;
    const body = await expectAsOf(`/v1/projections/${identity}?as_of_offset=${two}`, identity, placed.slice(0, 2));
    expect(body).toBe((await reader.get(identity, { asOf: [{ partition: other.partition, offset: other.offset }, { partition, offset: point }] }))!.text);

    const p = parsePyJson(expected.get(identity)!) as PyObject;
    const q = new URLSearchParams({
      ...(p.scope as Record<string, string>),
      retrieval_snapshot_ref: String(p.retrieval_snapshot_ref),
      policy_snapshot_ref: String(p.policy_snapshot_ref),
      as_of_offset: `${partition}:${point}`,
    });
    const res = await get(`/v1/projections?${q}`);
    expect(res.headers.get("x-mufold-identity")).toBe(identity);
    expect(res.headers.get("x-mufold-as-of-used")).toBe(`${partition}:${point}`);
    expect(await bytes(res)).toBe(oracle(identity, placed.slice(0, 2)));
  });

  it("?as_of_time= is reader.get's bytes: the reducer over the identity's records with a Kafka timestamp at or before it", async () => {
    const iso = new Date(splitTime).toISOString();
    let split = 0;
    for (const [identity, placed] of byIdentity) {
      const included = placed.filter((p) => p.timestamp <= splitTime);
      if (included.length > 0 && included.length < placed.length) split++;
      const body = await expectAsOf(`/v1/projections/${identity}?as_of_time=${encodeURIComponent(iso)}`, identity, included);
      expect(body).toBe((await reader.get(identity, { asOf: { time: iso } }))!.text);
    }
    // Each identity's second record is timestamped after splitTime (beforeAll).
    expect(split, "identities with records on both sides of the time").toBe([...byIdentity.values()].filter((l) => l.length >= 2).length);
    expect(split).toBeGreaterThan(10);

    // A record's own timestamp, written with another UTC offset, includes that record.
    const [identity, placed] = [...byIdentity].find(([, list]) => list.length >= 2)!;
    const at = placed.find((p) => p.timestamp > splitTime)!.timestamp;
    const plusTwo = new Date(at + 7_200_000).toISOString().replace("Z", "+02:00");
    const included = placed.filter((p) => p.timestamp <= at);
    expect(included.length).toBeGreaterThan(placed.filter((p) => p.timestamp <= splitTime).length);
    const body = await expectAsOf(`/v1/projections/${identity}?as_of_time=${encodeURIComponent(plusTwo)}`, identity, included);
    expect(body).toBe((await reader.get(identity, { asOf: { time: plusTwo } }))!.text);
  });

  it("/explain: reader.explain as canonical JSON with its ETag, one delivery per record of the identity", async () => {
    const positions = (list: readonly { partition: number; offset: bigint | number; observation_id?: string | null; observation?: Observation }[]) =>
      list.map((d) => `${d.partition}:${d.offset}:${d.observation_id ?? d.observation!.observation_id}`).sort();
    for (const [identity, placed] of [...byIdentity].slice(0, 10)) {
      const res = await get(`/v1/projections/${identity}/explain`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
      const body = await bytes(res);
      expect(body).toBe(canonicalJson(explanationJson((await reader.explain(identity))!)));
      expect(res.headers.get("etag")).toBe(etagOf(body));
      expect((await get(`/v1/projections/${identity}/explain`, { headers: { "if-none-match": etagOf(body) } })).status).toBe(304);
      const explained = JSON.parse(body) as { identity: string; deliveries: { partition: number; offset: number; observation_id: string | null }[] };
      expect(explained.identity).toBe(identity);
      expect(explained.deliveries).toHaveLength(placed.length);
      expect(positions(explained.deliveries)).toEqual(positions(placed));

      // As of a point: the records up to it.
      const point = placed[Math.floor(placed.length / 2)]!;
      const asOf = await get(`/v1/projections/${identity}/explain?as_of_offset=${point.partition}:${point.offset}`);
      const past = JSON.parse(await bytes(asOf)) as typeof explained & { as_of: { used: string[]; deliveries: number } };
      const included = placed.filter((p) => p.offset <= point.offset);
      expect(positions(past.deliveries)).toEqual(positions(included));
      expect(past.as_of).toMatchObject({ used: [`${point.partition}:${point.offset}`], deliveries: included.length });
      const timed = JSON.parse(await bytes(await get(`/v1/projections/${identity}/explain?as_of_time=${encodeURIComponent(new Date(splitTime).toISOString())}`))) as typeof explained;
      expect(positions(timed.deliveries)).toEqual(positions(placed.filter((p) => p.timestamp <= splitTime)));
    }
    expect(await (await get("/metrics")).text()).toMatch(/mufold_http_requests_total\{route="explain",method="GET",code="200"\} \d+/);
  });

  it("a point not folded is a 422 naming what is available; malformed points a 400; an unknown identity a 404", async () => {
    const [identity, placed] = [...byIdentity][0]!;
    const partition = placed[0]!.partition;
    const last = all.filter((p) => p.partition === partition).reduce((max, p) => (p.offset > max ? p.offset : max), -1n);
    for (const path of [`${identity}?as_of_offset=${partition}:${last + 1n}`, `${identity}/explain?as_of_offset=${partition}:${last + 1n}`]) {
      const res = await get(`/v1/projections/${path}`);
      expect(res.status, path).toBe(422);
      const body = (await res.json()) as { error: string; reason: string; available: unknown };
      expect(body).toMatchObject({ reason: "as_of_not_available", available: { partition, from: "0", to: String(last) } });
      expect(body.error).toContain("as_of_not_available");
    }
    const later = await get(`/v1/projections/${identity}?as_of_time=2999-01-01T00:00:00Z`);
    expect(later.status).toBe(422);
    expect(await later.json()).toMatchObject({ reason: "as_of_not_available", available: null });

    for (const [query, form] of [
      ["as_of_offset=3@12", "PARTITION:OFFSET"],
      ["as_of_offset=", "PARTITION:OFFSET"],
      ["as_of_time=yesterday", "ISO 8601"],
      [`as_of_offset=${partition}:0&as_of_time=2026-01-01T00:00:00Z`, "not both"],
    ] as const) {
      for (const path of [`${identity}?${query}`, `${identity}/explain?${query}`]) {
        const res = await get(`/v1/projections/${path}`);
        expect(res.status, path).toBe(400);
        const body = (await res.json()) as { error: string; reason: string };
        expect(body.reason, path).toBe("malformed_as_of");
        expect(body.error, path).toContain(form);
      }
    }
    const unknown = `mur_${"0".repeat(64)}`;
    for (const path of [`${unknown}?as_of_offset=${partition}:0`, `${unknown}/explain`, `${unknown}/explain?as_of_offset=${partition}:0`]) {
      const res = await get(`/v1/projections/${path}`);
      expect(res.status, path).toBe(404);
      expect(await res.json()).toMatchObject({ reason: "unknown_identity" });
    }
    expect((await get("/v1/projections/mur_x/explain")).status).toBe(400);
  });
});
