/**
 * mufold's record encoder (src/adapters/kafka/record-encoder.ts) against
 * kafkajs's own: the same fields give the same bytes, or the same error; what
 * it hands back to kafkajs (Long or huge timestamp deltas, keys that are
 * numbers, null header values) too. And kafkajs's produce request and record
 * batch, which take the encoder, write equal batches with either.
 */
import { createRequire } from "node:module";
import fc from "fast-check";
import kafkajs from "kafkajs";
import { describe, expect, it } from "vitest";
import { fastRecordEncoder, installRecordEncoder, kafkajsRecordEncoder, recordsEncodedFast, type RecordFields } from "../../src/adapters/kafka/record-encoder.js";
import { MemoMurmur2Partitioner } from "../../src/adapters/kafka/partitioner.js";

const require = createRequire(import.meta.url);
const Long = require("kafkajs/src/utils/long.js") as { fromValue(v: number | string): unknown };
const Encoder = require("kafkajs/src/protocol/encoder.js") as new () => { writeEncoderArray(a: unknown[]): { buffer: Buffer } };
const kafkajsEncode = kafkajsRecordEncoder();
const fastEncode = fastRecordEncoder(kafkajsEncode);

type Outcome = { bytes: string } | { error: string };

function outcome(encode: typeof fastEncode, fields: RecordFields): Outcome {
  try {
    // As RecordBatch reads records: through an Encoder's writeEncoderArray.
    return { bytes: new Encoder().writeEncoderArray([encode(fields)]).buffer.toString("hex") };
  } catch (error) {
    return { error: `${(error as Error).constructor.name}: ${(error as Error).message}` };
  }
}

/** Both encoders, the same outcome; returns how many records the fast one wrote itself. */
function expectSame(fields: RecordFields): number {
  const before = recordsEncodedFast();
  const ours = outcome(fastEncode, fields);
  const theirs = outcome(kafkajsEncode, fields);
  expect(ours).toEqual(theirs);
  return recordsEncodedFast() - before;
}

const bytesOrText = fc.oneof(fc.string({ unit: "binary", maxLength: 300 }), fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)));

describe("the record encoder", () => {
  it("writes kafkajs's bytes for every string, Buffer and null key, value and header, and every delta", () => {
    fc.assert(
      fc.property(
        fc.record({
          offsetDelta: fc.integer({ min: 0, max: 100_000 }),
          timestampDelta: fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), fc.constantFrom(2 ** 52 - 1, -(2 ** 52) + 1, 0)),
          key: fc.option(bytesOrText, { nil: null }),
          value: fc.option(bytesOrText, { nil: undefined }),
          headers: fc.dictionary(fc.string({ unit: "binary", maxLength: 20 }), fc.oneof(bytesOrText, fc.array(bytesOrText, { maxLength: 3 })), { maxKeys: 5 }),
        }),
        (fields) => {
          expect(expectSame(fields)).toBe(1);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("writes the sizes whose varints change width (127/128 bytes, 2^14) as kafkajs does", () => {
    for (const n of [0, 1, 63, 64, 127, 128, 129, 8191, 8192, 16383, 16384, 70_000]) {
      expect(expectSame({ offsetDelta: n, timestampDelta: n, key: "k".repeat(n), value: Buffer.alloc(n, 1), headers: { h: "v".repeat(n) } })).toBe(1);
      expect(expectSame({ offsetDelta: n, timestampDelta: -n, key: null, value: "é".repeat(n) })).toBe(1);
    }
  });

  it("takes the defaults kafkajs takes (no deltas, no headers)", () => {
    expect(expectSame({ key: "k", value: "v" })).toBe(1);
  });

  it("hands kafkajs what it does not write, and fails where kafkajs fails", () => {
    const handedBack: RecordFields[] = [
      { timestampDelta: Long.fromValue(5), key: "k", value: "v" },
      { timestampDelta: 2 ** 52, key: "k", value: "v" },
      { timestampDelta: 2 ** 60, key: "k", value: "v" },
      { timestampDelta: 1.5, key: "k", value: "v" },
      { timestampDelta: Number.NaN, key: "k", value: "v" },
      { key: 42, value: "v" },
      { key: "k", value: { not: "bytes" } },
      { key: "k", value: "v", headers: { h: null } },
      { key: "k", value: "v", headers: { h: [Buffer.from("a"), 7] } },
    ];
    for (const fields of handedBack) expect(expectSame(fields)).toBe(0);
  });
});

describe("kafkajs with the encoder installed", () => {
  it("takes it: a produce request written through it equals one written through kafkajs's own", async () => {
    expect(installRecordEncoder()).toBe(true);
    const produce = require("kafkajs/src/protocol/requests/produce/v3/request.js") as (o: object) => { encode(): Promise<{ buffer: Buffer }> };
    const { Types } = require("kafkajs/src/protocol/message/compression/index.js") as { Types: { None: number } };
    const messages = Array.from({ length: 50 }, (_, i) => ({ key: `scope-${i % 7}`, value: `{"n":${i}}`, headers: { "content-type": "application/json", n: String(i) }, timestamp: String(1_733_450_000_000 + i) }));
    const request = (records: number) => produce({ acks: -1, timeout: 1000, compression: Types.None, topicData: [{ topic: "t", partitions: [{ partition: 0, firstSequence: 0, messages: messages.slice(0, records) }] }] });
    const before = recordsEncodedFast();
    const ours = (await request(50).encode()).buffer;
    expect(recordsEncodedFast() - before).toBe(50);
    // The same batch from kafkajs's encoder: each record its bytes, the batch around them written alike.
    const theirs = messages.map((m, i) => kafkajsEncode({ ...m, offsetDelta: i, timestampDelta: Number(m.timestamp) - 1_733_450_000_000 }).buffer);
    const recordsHex = Buffer.concat(theirs).toString("hex");
    expect(ours.toString("hex").endsWith(recordsHex)).toBe(true);
  });
});

describe("the remembered murmur2 partitioner", () => {
  it("picks kafkajs's DefaultPartitioner's partition for every key, twice", () => {
    const { Partitioners } = kafkajs;
    const partitionMetadata = Array.from({ length: 12 }, (_, partitionId) => ({ partitionId, leader: 0, replicas: [0], isr: [0], partitionErrorCode: 0 }));
    const ours = MemoMurmur2Partitioner();
    const theirs = Partitioners.DefaultPartitioner();
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary", maxLength: 120 }), fc.uint8Array({ maxLength: 60 }).map((a) => Buffer.from(a))), (key) => {
        const expected = theirs({ topic: "t", partitionMetadata, message: { key, value: "v" } });
        expect(ours({ topic: "t", partitionMetadata, message: { key, value: "v" } })).toBe(expected);
        expect(ours({ topic: "t", partitionMetadata, message: { key, value: "v" } })).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});
