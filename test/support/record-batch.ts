/**
 * Kafka v2 record batches written byte by byte (the protocol's layout), so tests
 * can put on the log, or feed kafkajs's decoder, batches no client would
 * produce: a corrupt compressed payload, an unknown codec id. Test support,
 * independent of the codecs under test (CRC-32C and xxHash32 come from kafkajs
 * and lz4js; the LZ4 frame stores its block raw, so no compressor is involved).
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const crc32c = require("kafkajs/src/protocol/recordBatch/crc32C/index.js") as (buffer: Buffer) => number;
const xxh32 = (require("lz4js/xxh32.js") as { hash(seed: number, src: Uint8Array, index: number, length: number): number }).hash;

export interface PlainRecord {
  key: string | null;
  value: string | null;
  headers?: Record<string, string>;
}

function varint(n: number): Buffer {
  let z = n >= 0 ? 2 * n : -2 * n - 1;
  const out: number[] = [];
  while (z >= 0x80) {
    out.push((z & 0x7f) | 0x80);
    z = Math.floor(z / 128);
  }
  out.push(z);
  return Buffer.from(out);
}

const sized = (b: Buffer | null) => (b === null ? varint(-1) : Buffer.concat([varint(b.length), b]));
const utf8 = (s: string | null) => (s === null ? null : Buffer.from(s, "utf8"));

/** The records section of a v2 batch: offset deltas 0…n-1, timestamp delta 0. */
export function encodeRecords(records: readonly PlainRecord[]): Buffer {
  return Buffer.concat(
    records.map((r, i) => {
      const headers = Object.entries(r.headers ?? {});
      const body = Buffer.concat([
        Buffer.from([0]), // attributes
        varint(0), // timestamp delta
        varint(i), // offset delta
        sized(utf8(r.key)),
        sized(utf8(r.value)),
        varint(headers.length),
        ...headers.flatMap(([k, v]) => [sized(utf8(k)), sized(utf8(v))]),
      ]);
      return Buffer.concat([varint(body.length), body]);
    }),
  );
}

/** A whole v2 record batch (base offset 0: the broker assigns offsets), no producer id, CRC-32C set. */
export function recordBatch(options: { codec: number; count: number; payload: Buffer; timestamp?: number }): Buffer {
  const timestamp = BigInt(options.timestamp ?? Date.now());
  const body = Buffer.alloc(40);
  body.writeInt16BE(options.codec & 0x07, 0); // attributes: the codec id
  body.writeInt32BE(options.count - 1, 2); // last offset delta
  body.writeBigInt64BE(timestamp, 6);
  body.writeBigInt64BE(timestamp, 14);
  body.writeBigInt64BE(-1n, 22); // producer id
  body.writeInt16BE(-1, 30); // producer epoch
  body.writeInt32BE(-1, 32); // base sequence
  body.writeInt32BE(options.count, 36);
  const crcd = Buffer.concat([body, options.payload]);
  const head = Buffer.alloc(21);
  head.writeBigInt64BE(0n, 0);
  head.writeInt32BE(9 + crcd.length, 8); // batch length: from the leader epoch on
  head.writeInt32BE(-1, 12); // partition leader epoch
  head.writeInt8(2, 16); // magic
  head.writeUInt32BE(crc32c(crcd), 17);
  return Buffer.concat([head, crcd]);
}

/**
 * An LZ4 frame holding `data` in one stored (uncompressed) block, with a
 * content checksum. `corruptChecksum` writes a wrong one: Java's Kafka
 * broker accepts it (it never verifies the content checksum) and a checking
 * decoder must refuse it.
 */
export function lz4StoredFrame(data: Buffer, options: { corruptChecksum: boolean }): Buffer {
  if (data.length > 64 << 10) throw new Error("lz4StoredFrame: at most one 64 KiB block");
  const descriptor = Buffer.from([0x64, 0x40]); // version 01, independent blocks, content checksum; 64 KiB blocks
  const hc = (xxh32(0, descriptor, 0, 2) >>> 8) & 0xff;
  const size = Buffer.alloc(4);
  size.writeUInt32LE((data.length | 0x80000000) >>> 0);
  const trailer = Buffer.alloc(8); // end mark, content checksum
  trailer.writeUInt32LE((xxh32(0, data, 0, data.length) ^ (options.corruptChecksum ? 0x5a5a5a5a : 0)) >>> 0, 4);
  return Buffer.concat([Buffer.from([0x04, 0x22, 0x4d, 0x18]), descriptor, Buffer.from([hc]), size, data, trailer]);
}
