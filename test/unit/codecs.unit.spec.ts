/**
 * The codecs kafkajs uses in mufold (src/adapters/kafka/codecs.ts):
 *  - payloads compressed by foreign implementations (liblz4, snappy, cramjam,
 *    zstd, gzip, and the Java Kafka client: test/support/codec-fixtures.ts)
 *    decode to their plaintext, checked against the plaintext's sha256;
 *  - damaged payloads are refused, never decoded into other bytes;
 *  - inside a record batch, kafkajs's own batch decoder turns a payload that
 *    cannot be decoded (bad checksum, unknown codec id, wrong record count)
 *    into stand-in records that carry the batch's offsets and are recognised,
 *    while a real record never is; with mufold's record decoder installed,
 *    as in a worker (record-decoder.ts).
 */
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";
import kafkajs from "kafkajs";
import { beforeAll, describe, expect, it } from "vitest";
import { decodeLz4, decodeSnappy, registerCodecs, undecodableReason } from "../../src/adapters/kafka/codecs.js";
import { installRecordDecoder, recordsDecodedFast } from "../../src/adapters/kafka/record-decoder.js";
import { CODEC_FIXTURES, type CodecFixture } from "../support/codec-fixtures.js";
import { encodeRecords, lz4StoredFrame, recordBatch, type PlainRecord } from "../support/record-batch.js";

// As in a worker (consumer.ts installs it at import): mufold's record decoder, before kafkajs's batch decoder loads.
expect(installRecordDecoder()).toBe(true);

const require = createRequire(import.meta.url);
const KafkaDecoder = require("kafkajs/src/protocol/decoder.js") as new (buffer: Buffer) => unknown;
const decodeRecordBatch = require("kafkajs/src/protocol/recordBatch/v0/decoder.js") as (decoder: unknown) => Promise<{
  firstOffset: string;
  records: { offset: string; key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer> }[];
}>;

const xxh32 = (require("lz4js/xxh32.js") as { hash(seed: number, src: Uint8Array, index: number, length: number): number }).hash;
const { CompressionCodecs, CompressionTypes } = kafkajs;
const CODEC_IDS = { gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD } as const;

/** The codec kafkajs looks up for an id (what its batch decoder calls). */
function kafkajsCodec(id: number): { decompress(b: Buffer): Promise<Buffer> } {
  return (CompressionCodecs as unknown as Record<number, () => { decompress(b: Buffer): Promise<Buffer> }>)[id]!();
}

/** The bytes on an ArrayBuffer of their own (Node pools small buffers; a payload must not look like it sits inside a batch). */
function alone(bytes: Uint8Array): Buffer {
  const out = Buffer.from(new ArrayBuffer(bytes.length));
  out.set(bytes);
  return out;
}

const payloadOf = (f: CodecFixture) => alone(Buffer.from(f.base64, "base64"));
const fixture = (name: string) => CODEC_FIXTURES.find((f) => f.name === name)!;
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const flip = (b: Buffer, at: number) => {
  const out = alone(b);
  out[at] = out[at]! ^ 0x01;
  return out;
};

/** A batch through kafkajs's record-batch decoder, as a fetch response would hand it over. */
async function decodeBatch(batch: Buffer, baseOffset = 1000n) {
  const bytes = Buffer.from(batch);
  bytes.writeBigInt64BE(baseOffset, 0);
  return decodeRecordBatch(new KafkaDecoder(bytes));
}

const RECORDS: PlainRecord[] = [
  { key: "agent-1/p/c/s", value: '{"a":1}', headers: { schema: "memory_utility_observation_v0" } },
  { key: null, value: '{"b":"ü"}' },
  { key: "k", value: null },
];

beforeAll(() => registerCodecs());

describe("foreign payloads decode to their plaintext", () => {
  it("covers each codec from more than one producer, the Java client's framings included", () => {
    const producers = (codec: string) => CODEC_FIXTURES.filter((f) => f.codec === codec).length;
    expect([producers("gzip"), producers("snappy"), producers("lz4"), producers("zstd")].every((n) => n >= 2)).toBe(true);
    expect(payloadOf(fixture("snappy-java")).subarray(0, 8)).toEqual(Buffer.from("\x82SNAPPY\x00", "latin1")); // xerial framing
  });

  for (const f of CODEC_FIXTURES) {
    it(`${f.name}: ${f.producer}`, async () => {
      const plain = await kafkajsCodec(CODEC_IDS[f.codec]).decompress(payloadOf(f));
      expect(plain.length).toBe(f.length);
      expect(sha256(plain)).toBe(f.sha256);
    });
  }
});

describe("damaged payloads are refused", () => {
  it("lz4: a flipped byte inside a block with a block checksum", () => {
    const p = payloadOf(fixture("lz4-linked-checksums-size"));
    expect(() => decodeLz4(flip(p, 200))).toThrow(/block checksum mismatch/);
  });

  it("lz4: a wrong content checksum (the frame's last 4 bytes)", () => {
    const p = payloadOf(fixture("lz4-256k-content-checksum"));
    expect(() => decodeLz4(flip(p, p.length - 1))).toThrow(/content checksum mismatch/);
  });

  it("lz4: a damaged frame descriptor, a truncated frame, no frame at all", () => {
    const p = payloadOf(fixture("lz4-java"));
    expect(() => decodeLz4(flip(p, 6))).toThrow(/descriptor checksum mismatch/);
    expect(() => decodeLz4(alone(p.subarray(0, p.length - 10)))).toThrow(/truncated/);
    expect(() => decodeLz4(alone(Buffer.from("not lz4 at all")))).toThrow(/bad magic number/);
  });

  it("lz4: a declared content size the blocks do not match", () => {
    const p = payloadOf(fixture("lz4-stored-block"));
    const declaring = (delta: bigint) => {
      // Content size is bytes 6..13; the descriptor checksum (byte 14) is rewritten to match, as a producer would.
      const out = alone(p);
      out.writeBigUInt64LE(out.readBigUInt64LE(6) + delta, 6);
      out[14] = (xxh32(0, out, 4, 10) >>> 8) & 0xff;
      return out;
    };
    expect(() => decodeLz4(declaring(0n))).not.toThrow();
    expect(() => decodeLz4(declaring(1n))).toThrow(/content size mismatch \(declared 3001, decoded 3000\)/);
    expect(() => decodeLz4(declaring(-1n))).toThrow(/blocks exceed the declared content size/);
  });

  it("snappy: a truncated xerial stream, a truncated raw stream, garbage", () => {
    const java = payloadOf(fixture("snappy-java"));
    expect(() => decodeSnappy(alone(java.subarray(0, java.length - 7)))).toThrow(/snappy/);
    const raw = payloadOf(fixture("snappy-raw-cramjam"));
    expect(() => decodeSnappy(alone(raw.subarray(0, raw.length - 7)))).toThrow(/snappy/);
    expect(() => decodeSnappy(alone(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x01])))).toThrow(/snappy/);
  });

  it("a payload outside any record batch is not isolated: the codec rejects", async () => {
    await expect(kafkajsCodec(CompressionTypes.LZ4).decompress(alone(Buffer.from("not lz4 at all")))).rejects.toThrow(/bad magic number/);
  });
});

describe("inside a record batch (kafkajs's batch decoder)", () => {
  it("a valid lz4 batch decodes into the real records, none taken for a stand-in", async () => {
    const batch = recordBatch({ codec: CompressionTypes.LZ4, count: 3, payload: lz4StoredFrame(encodeRecords(RECORDS), { corruptChecksum: false }) });
    const { records } = await decodeBatch(batch);
    expect(records.map((r) => [r.offset, r.key?.toString() ?? null, r.value?.toString() ?? null])).toEqual([
      ["1000", "agent-1/p/c/s", '{"a":1}'],
      ["1001", null, '{"b":"ü"}'],
      ["1002", "k", null],
    ]);
    expect(records[0]!.headers.schema?.toString()).toBe("memory_utility_observation_v0");
    expect(records.map((r) => undecodableReason(r.value))).toEqual([undefined, undefined, undefined]);
  });

  it("a gzip batch (zlib's output) decodes into the real records", async () => {
    const batch = recordBatch({ codec: CompressionTypes.GZIP, count: 3, payload: gzipSync(encodeRecords(RECORDS)) });
    const { records } = await decodeBatch(batch);
    expect(records.map((r) => r.value?.toString() ?? null)).toEqual(['{"a":1}', '{"b":"ü"}', null]);
  });

  it("a wrong lz4 content checksum: one stand-in per declared record, at the batch's offsets", async () => {
    const batch = recordBatch({ codec: CompressionTypes.LZ4, count: 3, payload: lz4StoredFrame(encodeRecords(RECORDS), { corruptChecksum: true }) });
    const before = recordsDecodedFast();
    const { records } = await decodeBatch(batch, 77n);
    expect(records.map((r) => r.offset)).toEqual(["77", "78", "79"]);
    expect(recordsDecodedFast() - before).toBe(3);
    expect(records.map((r) => undecodableReason(r.value))).toEqual(Array(3).fill("lz4: content checksum mismatch"));
  });

  for (const id of [5, 6, 7]) {
    it(`unknown codec id ${id}: stand-ins, not records read as uncompressed`, async () => {
      const batch = recordBatch({ codec: id, count: 3, payload: encodeRecords(RECORDS) });
      const { records } = await decodeBatch(batch);
      expect(records.map((r) => r.offset)).toEqual(["1000", "1001", "1002"]);
      expect(new Set(records.map((r) => undecodableReason(r.value)))).toEqual(new Set([`codec ${id}: unknown compression codec id ${id}`]));
    });
  }

  it("a payload that decompresses but does not hold the declared records: stand-ins", async () => {
    const twoOfThree = lz4StoredFrame(encodeRecords(RECORDS.slice(0, 2)), { corruptChecksum: false });
    const { records } = await decodeBatch(recordBatch({ codec: CompressionTypes.LZ4, count: 3, payload: twoOfThree }));
    expect(records).toHaveLength(3);
    expect(undecodableReason(records[0]!.value)).toBe("lz4: records: record 2 of 3 is missing");
    const trailing = lz4StoredFrame(Buffer.concat([encodeRecords(RECORDS), Buffer.from([0])]), { corruptChecksum: false });
    const again = await decodeBatch(recordBatch({ codec: CompressionTypes.LZ4, count: 3, payload: trailing }));
    expect(undecodableReason(again.records[2]!.value)).toMatch(/1 bytes left after the 3 declared records/);
  });

  it("a real record with a stand-in's bytes is not a stand-in", async () => {
    const forged: PlainRecord[] = [{ key: null, value: "\u0000" }];
    const { records } = await decodeBatch(recordBatch({ codec: CompressionTypes.GZIP, count: 1, payload: gzipSync(encodeRecords(forged)) }));
    expect(records[0]!.value).toEqual(Buffer.from([0]));
    expect(undecodableReason(records[0]!.value)).toBeUndefined();
  });
});
