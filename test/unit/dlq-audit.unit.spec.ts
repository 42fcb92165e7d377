/**
 * The chaos tier's DLQ audit on synthetic records (no services): it compares
 * the DLQ's reason with the reason the generator meant, and each of its
 * counters moves when, and only when, its fault is present.
 */
import { describe, expect, it } from "vitest";
import { DLQ_HEADERS } from "../../src/fold/dead-letter.js";
import type { SourceRecord } from "../../src/fold/source-record.js";
import { Prng, simulate } from "../../producers/simulation.js";
import { canonicalJson, observationToPy } from "../../src/core/index.js";
import { DLQ_REASONS, decideRecord } from "../../src/fold/record-decision.js";
import { auditRecords } from "../chaos/dlq-audit.js";
import { HOSTILE_CLASSES, HOSTILE_HEADERS, hostileRecord } from "../chaos/hostile.js";

const TOPIC = "chaos";
const buf = (v: Buffer | string | null | undefined) => (v === null || v === undefined ? null : Buffer.from(v));

/** A topic record; `intent` is what a hostile.ts record carries. */
function source(offset: number, value: string | null, intent?: { cls: string; reason: string }): SourceRecord {
  const headers: Record<string, string> = { schema: "memory_utility_observation_v0" };
  if (intent) Object.assign(headers, { [HOSTILE_HEADERS.class]: intent.cls, [HOSTILE_HEADERS.expectedReason]: intent.reason });
  return { topic: TOPIC, partition: 0, offset: String(offset), key: Buffer.from("a/p/c/s"), value: buf(value), headers };
}

/** A DLQ copy as the fold writes it (headers spelled out here, not built with src/fold/dead-letter.ts). */
function copy(of: SourceRecord, reason: string, extra: Partial<SourceRecord> = {}, headers: Record<string, string> = {}): SourceRecord {
  return {
    topic: `${TOPIC}.dlq`,
    partition: 0,
    offset: "0",
    key: of.key,
    value: of.value,
    ...extra,
    headers: {
      ...of.headers,
      [DLQ_HEADERS.reason]: reason,
      [DLQ_HEADERS.detail]: "…",
      [DLQ_HEADERS.topic]: TOPIC,
      [DLQ_HEADERS.partition]: String(of.partition),
      [DLQ_HEADERS.offset]: of.offset,
      ...headers,
    },
  };
}

const valid = source(0, '{"a valid":"observation"}');
const broken = source(1, "{not json", { cls: "brokenJson", reason: "value_not_json" });
const tombstone = source(2, null, { cls: "tombstone", reason: "value_missing" });
const topic = [valid, broken, tombstone];

describe("DLQ audit", () => {
  it("a DLQ with exactly the intended reasons and bytes has no fault", () => {
    const audit = auditRecords(topic, [copy(broken, "value_not_json"), copy(tombstone, "value_missing")]);
    expect(audit).toMatchObject({ rejected: 2, intended: 2, inDlq: 2, missing: 0, unexpected: 0, wrongReason: 0, wrongBytes: 0, duplicatesInDlq: 0 });
    expect(audit.reasons).toEqual({ value_not_json: 1, value_missing: 1 });
    expect(audit.classes).toEqual({ brokenJson: 1, tombstone: 1 });
    expect(audit.unseenClasses).toHaveLength(Object.keys(HOSTILE_CLASSES).length - 2);
    expect(audit.unseenClasses).not.toContain("brokenJson");
  });

  it("counts a reason other than the intended one, even one the fold could defend", () => {
    const audit = auditRecords(topic, [copy(broken, "observation_malformed"), copy(tombstone, "value_missing")]);
    expect(audit).toMatchObject({ inDlq: 2, wrongReason: 1, missing: 0 });
    expect(audit.classes).toEqual({ tombstone: 1 }); // a wrong reason does not count as seeing the class
    expect(audit.unseenClasses).toContain("brokenJson");
  });

  it("counts intended records missing from the DLQ, and valid or unknown records in it", () => {
    const stranger = { ...valid, offset: "99" };
    const audit = auditRecords(topic, [copy(valid, "key_scope_mismatch"), copy(broken, "value_not_json"), copy(stranger, "value_not_json")]);
    expect(audit).toMatchObject({ rejected: 3, intended: 2, inDlq: 1, missing: 1, unexpected: 2, wrongReason: 0 });
  });

  it("counts redelivered copies once, as duplicates", () => {
    const audit = auditRecords(topic, [copy(broken, "value_not_json"), copy(broken, "value_not_json"), copy(tombstone, "value_missing")]);
    expect(audit).toMatchObject({ rejected: 2, inDlq: 2, duplicatesInDlq: 1, missing: 0 });
  });

  it("checks the bytes: whole copies must be equal, cut-down copies must say what they cut", () => {
    const big = source(3, "x".repeat(2_000), { cls: "oversized", reason: "value_too_large" });
    const records = [...topic, big];
    const ok = [copy(broken, "value_not_json"), copy(tombstone, "value_missing")];
    expect(auditRecords(records, [...ok, copy(big, "value_too_large", { value: Buffer.from("y".repeat(2_000)) })]).wrongBytes).toBe(1);
    expect(auditRecords(records, [...ok, copy(big, "value_too_large", { key: Buffer.from("a/p/c/S") })]).wrongBytes).toBe(1);
    const pointer = { [DLQ_HEADERS.truncated]: "value", [DLQ_HEADERS.originalValueBytes]: "2000" };
    expect(auditRecords(records, [...ok, copy(big, "value_too_large", { value: null }, pointer)]).wrongBytes).toBe(0);
    expect(auditRecords(records, [...ok, copy(big, "value_too_large", { value: null }, { ...pointer, [DLQ_HEADERS.originalValueBytes]: "1999" })]).wrongBytes).toBe(1);
    const keyCut = { [DLQ_HEADERS.truncated]: "value,headers,key", [DLQ_HEADERS.originalValueBytes]: "2000", [DLQ_HEADERS.originalKeyBytes]: "7" };
    expect(auditRecords(records, [...ok, copy(big, "value_too_large", { value: null, key: Buffer.from("a/p") }, keyCut)]).wrongBytes).toBe(0);
    expect(auditRecords(records, [...ok, copy(big, "value_too_large", { value: null, key: Buffer.from("a/x") }, keyCut)]).wrongBytes).toBe(1);
  });
});

describe("hostile generator", () => {
  const observations = [...simulate({ agents: 4, observationsPerAgent: 10, snapshotEvery: 5, duplicateRate: 0.1, conflictRate: 0.05, seed: 5 })].map((d) => d.observation);

  it("has a class for every DLQ reason", () => {
    const covered = new Set(Object.values(HOSTILE_CLASSES).map((c) => c.reason));
    expect([...DLQ_REASONS].filter((r) => !covered.has(r))).toEqual([]);
  });

  it("labels every record with its class and intended reason", () => {
    const rng = new Prng(9);
    for (const base of observations) {
      const { cls, reason, message } = hostileRecord(rng, base);
      expect(message.headers).toMatchObject({ [HOSTILE_HEADERS.class]: cls, [HOSTILE_HEADERS.expectedReason]: reason });
      expect(HOSTILE_CLASSES[cls]!.reason).toBe(reason);
    }
  });

  // The labels are the expectation; the fold's decision is what is checked against them.
  it.each(Object.keys(HOSTILE_CLASSES))("the fold's decision gives class %s its intended reason", (cls) => {
    const { reason, make } = HOSTILE_CLASSES[cls]!;
    const rng = new Prng(11);
    for (const base of observations) {
      const m = make(canonicalJson(observationToPy(base)), base, rng);
      const decision = decideRecord({ key: buf(m.key), value: buf(m.value), headers: m.headers }, { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 65_536 });
      expect(decision.kind === "reject" ? decision.reason : "accepted").toBe(reason);
    }
  });
});
