import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { runReplay } from "../../consumers/replay/replay.js";
import { DLQ_HEADERS, dlqTopic } from "../../src/fold/dead-letter.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { canonicalJson, observationToPy, type Observation } from "../../src/core/index.js";
import type { Settings } from "../../src/config/settings.js";
import { comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function startFold(settings: Settings): Promise<FoldWorker> {
  const worker = await FoldWorker.start(settings, quietLog);
  cleanups.push(() => worker.stop());
  return worker;
}

function workload(seed: number): Observation[] {
  return [...simulate({ agents: 10, observationsPerAgent: 30, snapshotEvery: 12, duplicateRate: 0.15, conflictRate: 0.03, seed })].map((d) => d.observation);
}

async function readDlq(settings: Settings, expected: number): Promise<{ key: Buffer | null; value: Buffer | null; headers: Record<string, string> }[]> {
  const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-test-dlq" });
  const consumer = kafka.consumer({ groupId: `${settings.group}.dlq-reader`, maxWaitTimeInMs: 100 });
  const out: { key: Buffer | null; value: Buffer | null; headers: Record<string, string> }[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic: dlqTopic(settings.topic), fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${out.length} of ${expected} DLQ records arrived`)), 60_000);
    void consumer.run({
      eachMessage: async ({ message }) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = String(Array.isArray(v) ? v[0] : v);
        out.push({ key: message.key, value: message.value, headers });
        if (out.length >= expected) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  return out;
}

describe("dead letters and replay", () => {
  it("malformed records of every class land in the DLQ with their reason and original bytes, touching no projection", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const good = workload(31);
    const valid = good[0]!;
    const validJson = canonicalJson(observationToPy(valid));
    const key = `${valid.scope.agent_id}/${valid.scope.project_id}/${valid.scope.corpus_id}/${valid.scope.surface_id}`;
    const bad: { reason: string; key: string | null; value: Buffer | string; headers?: Record<string, string> }[] = [
      { reason: "value_not_json", key, value: "{not json" },
      { reason: "value_not_utf8", key, value: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) },
      { reason: "value_too_large", key, value: "x".repeat(70_000) },
      { reason: "value_not_json", key, value: "[".repeat(5000) + "]".repeat(5000) },
      { reason: "observation_schema_mismatch", key, value: validJson.replace("memory_utility_observation_v0", "memory_utility_observation_v9") },
      { reason: "observation_write_boundary_violation", key, value: validJson.replace('"raw_content_captured":false', '"raw_content_captured":true') },
      { reason: "observation_malformed", key, value: validJson.replace(/"confidence":[^,]*/, '"confidence":NaN') },
      { reason: "observation_identity_invalid", key, value: validJson.replace(/"observation_id":"muo_[0-9a-f]{4}/, '"observation_id":"muo_0000') },
      { reason: "observation_malformed_scope", key, value: validJson.replace(`"agent_id":"${valid.scope.agent_id}"`, '"agent_id":"viking://agent"') },
      // evidence_refs is part of the id: the reference classifies a path there as an identity error.
      { reason: "observation_identity_invalid", key, value: validJson.replace(/"evidence_refs":\[[^\]]*\]/, '"evidence_refs":["/Users/me/secret"]') },
      { reason: "key_missing", key: null, value: validJson },
      { reason: "key_scope_mismatch", key: "agent:other/p/c/s", value: validJson },
      { reason: "schema_header_mismatch", key, value: validJson, headers: { schema: "something_else_v1" } },
    ];
    await produce(settings, [...good.map(observationRecord), ...bad.map((b) => ({ key: b.key, value: b.value, headers: b.headers }))]);
    const worker = await startFold(settings);
    await waitCaughtUp(settings);
    expect(worker.counters.deadLettered).toBe(bad.length);
    expect(comparePackets(await readAllPackets(settings), expectedPackets(good))).toEqual({ missing: [], extra: [], different: [] });
    const dlq = await readDlq(settings, bad.length);
    const id = (key: string | null, value: Buffer | string | null, schema: string | undefined) =>
      `${key}|${value === null ? "" : Buffer.from(value).toString("base64")}|${schema ?? ""}`;
    const byRecord = new Map(dlq.map((d) => [id(d.key?.toString() ?? null, d.value, d.headers.schema), d]));
    for (const b of bad) {
      const found = byRecord.get(id(b.key, b.value, b.headers?.schema));
      expect(found, `DLQ record for ${b.reason}`).toBeDefined();
      expect(found!.headers[DLQ_HEADERS.reason]).toBe(b.reason);
      expect(found!.headers[DLQ_HEADERS.topic]).toBe(settings.topic);
      expect(Number(found!.headers[DLQ_HEADERS.offset])).toBeGreaterThanOrEqual(0);
      expect(found!.key?.toString() ?? null).toBe(b.key);
    }
  });

  it("replay --verify finds 0 mismatches after live folding", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const observations = workload(32);
    await produce(settings, [...observations.map(observationRecord), { key: null, value: "garbage" }]);
    await startFold(settings);
    await waitCaughtUp(settings);
    const summary = await runReplay(settings, { verify: true, promote: false }, quietLog);
    expect(summary.records).toBe(observations.length + 1);
    expect(summary.dlq).toBe(1);
    expect(summary.dlqByReason).toEqual({ value_not_json: 1 }); // the garbage record, decided in its group's turn
    expect(summary.verify!.compared).toBe(expectedPackets(observations).size);
    expect(summary.verify!.notComparable).toBe(0);
    expect(summary.mismatches).toBe(0);
  });

  it("after Redis loses everything, replay --promote restores every packet and the fold goes on", async () => {
    const base = testSettings();
    const settings = { ...base, redisUrl: base.redisUrl.replace(/\/\d*$/, "") + "/5" };
    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit());
    const observations = workload(33);
    await produce(settings, observations.map(observationRecord));
    const worker = await startFold(settings);
    await waitCaughtUp(settings);
    const before = await readAllPackets(settings);
    await redis.flushdb(); // this test's own database: everything the fold wrote is gone
    const summary = await runReplay(settings, { verify: false, promote: true, dropAfterSeconds: 0 }, quietLog);
    expect(summary.promoted).toBe(true);
    expect(await readAllPackets(settings)).toEqual(before);
    // The live worker resumes on the promoted generation.
    const more = [...simulate({ agents: 3, observationsPerAgent: 10, seed: 34, startTime: "2026-11-20T00:00:00Z" })].map((d) => d.observation);
    await produce(settings, more.map(observationRecord));
    await waitCaughtUp(settings);
    expect(worker.counters.applied).toBeGreaterThan(0);
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...observations, ...more]))).toEqual({ missing: [], extra: [], different: [] });
    await redis.flushdb();
  });
});
