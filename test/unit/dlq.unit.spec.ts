/**
 * Dead letters without services: the byte budget (hand-computed sizes), the
 * cut-down order (value, then headers, then key), repeated headers kept in
 * order, and the record sizes checked against kafkajs's own record encoder.
 */
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import zstd from "@mongodb-js/zstd";
import type { Admin } from "kafkajs";
import { describe, expect, it } from "vitest";
import { DLQ_HEADERS, dlqBudget, dlqMessage, dlqSendGroups, recordBytes, zstdBound, type DlqMessage } from "../../src/fold/dead-letter.js";
import type { SourceRecord } from "../../src/fold/source-record.js";
import { dlqLimits } from "../../src/adapters/kafka/topic-limits.js";

const require = createRequire(import.meta.url);
// kafkajs's own encoder and decoder of one v2 record: the sizes and shapes the broker and the fold really see.
const KafkaRecord = require("kafkajs/src/protocol/recordBatch/record/v0") as (r: object) => { buffer: Buffer };
const KafkaRecordDecoder = require("kafkajs/src/protocol/recordBatch/record/v0/decoder") as (d: unknown, ctx: object) => { key: Buffer | null; value: Buffer | null; headers: SourceRecord["headers"] };
const KafkaDecoder = require("kafkajs/src/protocol/decoder") as new (b: Buffer) => { readVarIntBytes(): Buffer };

/** Bytes kafkajs writes for a message, with both per-record deltas at their widest varints (10 and 5 bytes). */
function encodedBytes(m: DlqMessage): number {
  return KafkaRecord({ key: m.key, value: m.value, headers: m.headers, timestampDelta: "-9223372036854775808", offsetDelta: -2147483648 }).buffer.length;
}

/** A record as the fold gets it from kafkajs: encoded and decoded by kafkajs itself. */
function fromKafka(key: string | null, value: Buffer | string | null, headers: Record<string, string | string[]>): SourceRecord {
  const bytes = KafkaRecord({ key, value, headers }).buffer;
  const body = new KafkaDecoder(bytes).readVarIntBytes();
  const r = KafkaRecordDecoder(new KafkaDecoder(body), { firstOffset: "41", firstTimestamp: "0", magicByte: 2 });
  return { topic: "obs", partition: 3, offset: "41", key: r.key, value: r.value, headers: r.headers };
}

const text = (v: unknown): unknown => (Buffer.isBuffer(v) ? v.toString("utf8") : Array.isArray(v) ? v.map(text) : v);

describe("dead-letter budget", () => {
  it("leaves room for the 61-byte batch header, zstd's worst case and the 1 KiB slack", () => {
    // 1,048,588 (Kafka's default max.message.bytes) - 61 - 1,024 = 1,047,503 bytes for compressed records.
    // zstd bound of R >= 128 KiB is R + floor(R / 256): 1,043,428 + 4,075 = 1,047,503 fits; 1,043,429 + 4,075 = 1,047,504 does not.
    expect(dlqBudget(1_048_588)).toBe(1_043_428);
    // Below 128 KiB the bound adds floor((131,072 - R) / 2,048): room 100,000 - 1,085 = 98,915;
    // 98,516 + 384 + 15 = 98,915 fits; 98,517 + 384 + 15 = 98,916 does not.
    expect(dlqBudget(100_000)).toBe(98_516);
    expect(dlqBudget(1_000)).toBe(0);
  });

  it("zstd never outgrows the bound on incompressible bytes of the size that broke the fold", async () => {
    const data = randomBytes(1_048_388);
    const compressed = await zstd.compress(data);
    expect(compressed.length).toBeGreaterThan(data.length); // random bytes do grow: the margin is needed
    expect(compressed.length).toBeLessThanOrEqual(data.length + Math.floor(data.length / 256));
    expect(zstdBound(1_048_388)).toBe(1_048_388 + 4_095);
  });

  it("counts a record's bytes as kafkajs encodes it", () => {
    // key "k", value "vv", header a="x": attributes 1 + timestamp delta 10 + offset delta 5 + key 1+1 + value 1+2
    // + header count 1 + header (1+1 name, 1+1 value) = 26, and 1 byte of length prefix.
    const tiny: DlqMessage = { key: Buffer.from("k"), value: Buffer.from("vv"), headers: { a: "x" } };
    expect(recordBytes(tiny)).toBe(27);
    expect(encodedBytes(tiny)).toBe(27);
    const varied: DlqMessage[] = [
      { key: null, value: null, headers: {} },
      { key: Buffer.alloc(200), value: Buffer.alloc(70_000), headers: { "x-é": ["ü", Buffer.alloc(300)], schema: "memory_utility_observation_v0" } },
      { key: Buffer.alloc(0), value: randomBytes(1_048_388), headers: { [DLQ_HEADERS.detail]: "d".repeat(501) } },
    ];
    for (const m of varied) expect(recordBytes(m)).toBe(encodedBytes(m));
  });

  it("reads max.message.bytes of the DLQ topic, falls back to the smallest broker's message.max.bytes, and refuses a limit too small", async () => {
    const admin = (topic: number | Error, brokers: Record<string, number | Error>) =>
      ({
        describeCluster: async () => ({ brokers: Object.keys(brokers).map((id) => ({ nodeId: Number(id) })) }),
        describeConfigs: async ({ resources: [r] }: { resources: { type: number; name: string; configNames: string[] }[] }) => {
          const value = r!.type === 2 ? topic : brokers[r!.name]!;
          if (value instanceof Error) throw value;
          return { resources: [{ configEntries: [{ configName: r!.configNames[0], configValue: String(value) }] }] };
        },
      }) as unknown as Admin;
    expect(await dlqLimits(admin(2_000_000, {}), "t.dlq")).toEqual({ maxMessageBytes: 2_000_000, source: "max.message.bytes of topic t.dlq", budget: dlqBudget(2_000_000) });
    const denied = new Error("Topic authorization failed");
    expect(await dlqLimits(admin(denied, { 1: 1_048_588, 2: 900_000 }), "t.dlq")).toMatchObject({ maxMessageBytes: 900_000, source: "message.max.bytes of the brokers" });
    await expect(dlqLimits(admin(denied, { 1: denied }), "t.dlq")).rejects.toThrow(/DescribeConfigs on the topic.*Topic authorization failed/);
    // 3,000 - 61 - 1,024 = 1,915; 1,845 + 7 + 63 = 1,915 fits the zstd bound, 1,846 + 7 + 63 does not.
    await expect(dlqLimits(admin(3_000, {}), "t.dlq")).rejects.toThrow(/is 3000: it leaves 1845 bytes for a dead letter, under the 4096/);
  });
});

describe("dead-letter message", () => {
  const pointer = { [DLQ_HEADERS.reason]: "value_too_large", [DLQ_HEADERS.topic]: "obs", [DLQ_HEADERS.partition]: "3", [DLQ_HEADERS.offset]: "41" };

  it("keeps every value of a repeated header, in order, as kafkajs delivered them", () => {
    const record = fromKafka("agent/p/c/s", "not json", { "x-trace": ["first", "second", "third"], schema: "memory_utility_observation_v0", "mufold-reason": "forged" });
    expect(Array.isArray(record.headers!["x-trace"])).toBe(true); // the shape kafkajs gives a repeated header
    const m = dlqMessage(record, "value_not_json", "Expecting value");
    expect(text(m.headers["x-trace"])).toEqual(["first", "second", "third"]);
    expect(text(m.headers.schema)).toBe("memory_utility_observation_v0");
    expect(m.headers[DLQ_HEADERS.reason]).toBe("value_not_json"); // the source's mufold-* header is not copied over ours
    // And kafkajs sends them as three headers again, in order.
    const resent = fromKafka(null, null, m.headers as Record<string, string | string[]>);
    expect(text(resent.headers!["x-trace"])).toEqual(["first", "second", "third"]);
    expect(m.headers[DLQ_HEADERS.truncated]).toBeUndefined();
  });

  it("drops the value first: a value just under the broker limit leaves key, headers and a pointer", () => {
    const value = randomBytes(1_048_388);
    const record = fromKafka("agent/p/c/s", value, { schema: "memory_utility_observation_v0", "x-trace": ["a", "b"] });
    const m = dlqMessage(record, "value_too_large", "value is 1048388 bytes; the limit is 65536", 1_043_428);
    expect(m.value).toBeNull();
    expect(m.key!.toString()).toBe("agent/p/c/s");
    expect(m.headers).toMatchObject({ ...pointer, [DLQ_HEADERS.truncated]: "value", [DLQ_HEADERS.originalValueBytes]: "1048388" });
    expect(text(m.headers["x-trace"])).toEqual(["a", "b"]);
    expect(encodedBytes(m)).toBeLessThanOrEqual(1_043_428);
    // The same record with room for it is copied whole.
    const whole = dlqMessage(record, "value_too_large", "value is 1048388 bytes; the limit is 65536", 2_000_000);
    expect(whole.value!.equals(value)).toBe(true);
    expect(whole.headers[DLQ_HEADERS.truncated]).toBeUndefined();
  });

  it("then drops the original headers, then cuts the key to what fits", () => {
    const record = fromKafka("k".repeat(100), "v".repeat(100), { big: "h".repeat(20_000), other: ["1", "2"] });
    const headersGone = dlqMessage(record, "value_too_large", "too large", 10_000);
    expect(headersGone.value).toBeNull();
    expect(headersGone.key!.toString()).toBe("k".repeat(100));
    expect(headersGone.headers.big).toBeUndefined();
    expect(headersGone.headers.other).toBeUndefined();
    expect(headersGone.headers).toMatchObject({ [DLQ_HEADERS.truncated]: "value,headers", [DLQ_HEADERS.originalValueBytes]: "100", [DLQ_HEADERS.originalHeaderCount]: "3" });

    const longKey = fromKafka("K".repeat(30_000), "v", { big: "h".repeat(20_000) });
    const budget = 5_000;
    const cut = dlqMessage(longKey, "key_scope_mismatch", "key is not the scope key", budget);
    expect(cut.headers).toMatchObject({ [DLQ_HEADERS.truncated]: "value,headers,key", [DLQ_HEADERS.originalKeyBytes]: "30000", [DLQ_HEADERS.originalHeaderCount]: "1" });
    expect(cut.key!.equals(longKey.key!.subarray(0, cut.key!.length))).toBe(true);
    expect(cut.key!.length).toBeGreaterThan(3_000); // the pointer takes well under 2,000 of the 5,000 bytes
    expect(encodedBytes(cut)).toBeLessThanOrEqual(budget);
    expect(encodedBytes({ ...cut, key: longKey.key!.subarray(0, cut.key!.length + 1) })).toBeGreaterThan(budget); // as much key as fits
  });

  it("refuses a budget too small for the pointer itself", () => {
    expect(() => dlqMessage(fromKafka("k", "v", {}), "value_not_json", "x".repeat(600), 300)).toThrow(/even cut down/);
  });

  it("splits one batch's dead letters into sends that each fit in one record batch, in order", () => {
    const m = (i: number): DlqMessage => ({ key: Buffer.from(String(i)), value: Buffer.alloc(1_000), headers: {} });
    // Each: 1 + 10 + 5 + key (1+1) + value (2+1,000) + header count 1 = 1,021, plus 2 bytes of length prefix = 1,023.
    expect(recordBytes(m(0))).toBe(1_023);
    const groups = dlqSendGroups([m(0), m(1), m(2), m(3), m(4)], 2 * 1_023 + 1);
    expect(groups.map((g) => g.map((x) => x.key!.toString()))).toEqual([["0", "1"], ["2", "3"], ["4"]]);
    expect(dlqSendGroups([], 10_000)).toEqual([]);
  });
});
