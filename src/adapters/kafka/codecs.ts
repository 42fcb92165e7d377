/**
 * The compression codecs of every kafkajs client mufold makes (gzip, snappy,
 * lz4, zstd; docs/architecture.md, "Compression codecs"), and the isolation of
 * a record batch that cannot be decoded.
 *
 * Why a failed decode does not throw: kafkajs decompresses while it decodes a
 * fetch response (protocol/recordBatch/v0/decoder.js), so a codec that throws
 * fails the whole fetch, i.e. every partition served by that broker, forever.
 * Instead the codec hands back a stand-in payload: as many records as the
 * batch declares, whose values are views of one ArrayBuffer registered here.
 * kafkajs decodes it into ordinary messages carrying the bad batch's offsets
 * and transaction flags, and the group consumer recognises them
 * (`undecodableReason`) and parks that partition alone. A decode that
 * "succeeds" into bytes that are not the declared records is treated the same.
 */
import { createRequire } from "node:module";
import { promisify } from "node:util";
import { gzip, unzip } from "node:zlib";
import zstd from "@mongodb-js/zstd";
import kafkajs from "kafkajs";
import { MufoldError } from "../../errors.js";

const require = createRequire(import.meta.url);
const lz4 = require("lz4js") as { decompressBlock(src: Uint8Array, dst: Uint8Array, sIndex: number, sLength: number, dIndex: number): number };
const xxh32 = (require("lz4js/xxh32.js") as { hash(seed: number, src: Uint8Array, index: number, length: number): number }).hash;
const snappy = require("snappyjs") as { uncompress(compressed: Uint8Array, maxLength?: number): Buffer };
const gzipAsync = promisify(gzip);
const unzipAsync = promisify(unzip);

/** Bound on one decompressed payload (a fetch is 1 MiB per partition by default; compression ratios of JSON stay far below 256x). */
export const MAX_DECOMPRESSED_BYTES = 256 << 20;

class CodecError extends Error {}

function need(buf: Buffer, pos: number, length: number, what: string): void {
  if (pos + length > buf.length) throw new CodecError(`${what}: truncated`);
}

// ---- lz4: the LZ4 frame format (lz4js decodes the blocks; it skips every checksum and the content size, so the frame is read here) ----

const LZ4_MAGIC = 0x184d2204;
const LZ4_SKIPPABLE = 0x184d2a50; // 0x184d2a50 … 0x184d2a5f
const LZ4_MAX_BLOCK: Record<number, number> = { 4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20 };

/** Decode one or more LZ4 frames (librdkafka and Java write one), checking every checksum the frame carries. */
export function decodeLz4(src: Buffer): Buffer {
  const parts: Buffer[] = [];
  let pos = 0;
  while (pos < src.length) {
    need(src, pos, 4, "lz4 magic");
    const magic = src.readUInt32LE(pos);
    if ((magic & 0xfffffff0) >>> 0 === LZ4_SKIPPABLE) {
      need(src, pos, 8, "lz4 skippable frame");
      pos += 8 + src.readUInt32LE(pos + 4);
      continue;
    }
    if (magic !== LZ4_MAGIC) throw new CodecError("lz4: not an LZ4 frame (bad magic number)");
    const frame = decodeLz4Frame(src, pos + 4);
    parts.push(frame.data);
    pos = frame.end;
  }
  if (pos > src.length) throw new CodecError("lz4 skippable frame: truncated");
  if (parts.length === 0) throw new CodecError("lz4: no frame");
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

function decodeLz4Frame(src: Buffer, start: number): { data: Buffer; end: number } {
  need(src, start, 3, "lz4 frame descriptor");
  const flg = src[start]!;
  const bd = src[start + 1]!;
  if ((flg & 0xc0) !== 0x40) throw new CodecError(`lz4: unsupported frame version ${flg >> 6}`);
  if ((flg & 0x02) !== 0 || (bd & 0x8f) !== 0) throw new CodecError("lz4: reserved descriptor bits set");
  if ((flg & 0x01) !== 0) throw new CodecError("lz4: frames with a dictionary id are not supported");
  const blockChecksum = (flg & 0x10) !== 0;
  const hasContentSize = (flg & 0x08) !== 0;
  const contentChecksum = (flg & 0x04) !== 0;
  const maxBlock = LZ4_MAX_BLOCK[(bd >> 4) & 7];
  if (maxBlock === undefined) throw new CodecError(`lz4: invalid block maximum size ${(bd >> 4) & 7}`);
  const descriptorEnd = start + 2 + (hasContentSize ? 8 : 0);
  need(src, descriptorEnd, 1, "lz4 frame descriptor");
  const contentSize = hasContentSize ? src.readBigUInt64LE(start + 2) : undefined;
  if (contentSize !== undefined && contentSize > BigInt(MAX_DECOMPRESSED_BYTES)) throw new CodecError(`lz4: content size ${contentSize} exceeds the bound`);
  if (((xxh32(0, src, start, descriptorEnd - start) >>> 8) & 0xff) !== src[descriptorEnd]) throw new CodecError("lz4: frame descriptor checksum mismatch");

  // Locate the blocks first: the output is one buffer, so linked blocks can refer to earlier ones.
  const blocks: { pos: number; size: number; stored: boolean }[] = [];
  let bound = 0;
  let pos = descriptorEnd + 1;
  for (;;) {
    need(src, pos, 4, "lz4 block size");
    const word = src.readUInt32LE(pos);
    pos += 4;
    if (word === 0) break;
    const size = word & 0x7fffffff;
    const stored = word >>> 31 === 1;
    if (size > maxBlock) throw new CodecError(`lz4: block of ${size} bytes exceeds the frame's maximum ${maxBlock}`);
    need(src, pos, size + (blockChecksum ? 4 : 0), "lz4 block");
    if (blockChecksum && xxh32(0, src, pos, size) !== src.readUInt32LE(pos + size)) throw new CodecError("lz4: block checksum mismatch");
    blocks.push({ pos, size, stored });
    bound += stored ? size : maxBlock;
    if (bound > MAX_DECOMPRESSED_BYTES) throw new CodecError("lz4: frame decompresses past the bound");
    pos += size + (blockChecksum ? 4 : 0);
  }
  const capacity = contentSize === undefined ? bound : Number(contentSize);
  const out = Buffer.alloc(capacity);
  let length = 0;
  for (const block of blocks) {
    if (block.stored) {
      if (length + block.size > capacity) throw new CodecError("lz4: blocks exceed the declared content size");
      src.copy(out, length, block.pos, block.pos + block.size);
      length += block.size;
    } else {
      // Writes past `out` are dropped by the typed array; the returned end tells.
      const end = lz4.decompressBlock(src, out, block.pos, block.size, length);
      if (!(end - length <= maxBlock && end <= capacity)) throw new CodecError("lz4: a block decodes past its bounds");
      length = end;
    }
  }
  if (contentSize !== undefined && length !== capacity) throw new CodecError(`lz4: content size mismatch (declared ${capacity}, decoded ${length})`);
  if (contentChecksum) {
    need(src, pos, 4, "lz4 content checksum");
    if (xxh32(0, out, 0, length) !== src.readUInt32LE(pos)) throw new CodecError("lz4: content checksum mismatch");
    pos += 4;
  }
  return { data: out.subarray(0, length), end: pos };
}

// ---- snappy: raw (librdkafka) or xerial-framed (Java: magic, version, compat, then length-prefixed raw blocks) ----

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER = 16;

export function decodeSnappy(src: Buffer): Buffer {
  if (src.length < XERIAL_HEADER || !src.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC)) return rawSnappy(src);
  const parts: Buffer[] = [];
  let total = 0;
  for (let pos = XERIAL_HEADER; pos < src.length; ) {
    need(src, pos, 4, "snappy (xerial) block length");
    const size = src.readInt32BE(pos);
    pos += 4;
    if (size < 0) throw new CodecError("snappy (xerial): negative block length");
    need(src, pos, size, "snappy (xerial) block");
    const part = rawSnappy(src.subarray(pos, pos + size));
    total += part.length;
    if (total > MAX_DECOMPRESSED_BYTES) throw new CodecError("snappy (xerial): payload decompresses past the bound");
    parts.push(part);
    pos += size;
  }
  return Buffer.concat(parts, total);
}

function rawSnappy(src: Buffer): Buffer {
  try {
    return snappy.uncompress(src, MAX_DECOMPRESSED_BYTES);
  } catch (error) {
    throw new CodecError(`snappy: ${error instanceof Error ? error.message : String(error)}`);
  }
}

// ---- the records a v2 batch declares (the layout kafkajs's record decoder reads) ----

class Reader {
  pos = 0;
  constructor(private readonly buf: Buffer) {}
  private byte(): number {
    if (this.pos >= this.buf.length) throw new CodecError("records: truncated");
    return this.buf[this.pos++]!;
  }
  /** A zigzag varint of at most `maxBytes` bytes. */
  varint(maxBytes = 5): number {
    let value = 0;
    for (let i = 0, scale = 1; ; i++, scale *= 128) {
      if (i === maxBytes) throw new CodecError("records: varint too long");
      const b = this.byte();
      value += (b & 0x7f) * scale;
      if (b < 0x80) break;
    }
    return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
  }
  skip(length: number): void {
    if (length < 0 || this.pos + length > this.buf.length) throw new CodecError("records: a field runs past its record");
    this.pos += length;
  }
  /** A varint length then that many bytes; -1 (null) only where allowed. */
  bytes(nullable: boolean): void {
    const length = this.varint();
    if (length === -1 && nullable) return;
    this.skip(length);
  }
}

/** Throw unless `buf` is exactly `count` well-formed v2 records (what the broker validated on produce). */
export function checkRecords(buf: Buffer, count: number): void {
  const r = new Reader(buf);
  for (let i = 0; i < count; i++) {
    if (r.pos === buf.length) throw new CodecError(`records: record ${i} of ${count} is missing`);
    const length = r.varint();
    if (length < 0 || r.pos + length > buf.length) throw new CodecError(`records: record ${i} of ${count} runs past the payload`);
    const end = r.pos + length;
    r.skip(1); // attributes
    r.varint(10); // timestamp delta (varlong)
    r.varint(); // offset delta
    r.bytes(true); // key
    r.bytes(true); // value
    const headers = r.varint();
    if (headers < 0) throw new CodecError(`records: record ${i} has a negative header count`);
    for (let h = 0; h < headers; h++) {
      r.bytes(false);
      r.bytes(true);
    }
    if (r.pos !== end) throw new CodecError(`records: record ${i} does not fill its declared length`);
  }
  if (r.pos !== buf.length) throw new CodecError(`records: ${buf.length - r.pos} bytes left after the ${count} declared records`);
}

// ---- stand-in records for a batch that cannot be decoded ----

/** baseOffset … recordCount of a v2 record batch: the bytes right before its records payload. */
const BATCH_HEADER = 61;
/** Fields after batchLength up to the record count. */
const BATCH_LENGTH_OVERHEAD = 49;
const MAX_STAND_INS = 5_000_000;
const standIns = new WeakMap<ArrayBufferLike, string>();

/**
 * The record count of the v2 batch whose records payload is `payload`. kafkajs
 * hands the codec a view (Buffer.slice) of the fetch response, so the batch
 * header sits right before it; the magic byte and the batch length must agree,
 * else (a legacy message set, a copy) undefined.
 */
function declaredCount(payload: Buffer): number | undefined {
  if (payload.byteOffset < BATCH_HEADER) return undefined;
  const header = Buffer.from(payload.buffer, payload.byteOffset - BATCH_HEADER, BATCH_HEADER);
  if (header.readInt8(16) !== 2 || header.readInt32BE(8) !== BATCH_LENGTH_OVERHEAD + payload.length) return undefined;
  const count = header.readInt32BE(57);
  return count > 0 && count <= MAX_STAND_INS ? count : undefined;
}

const varintSize = (n: number) => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);

function writeVarint(out: Buffer, pos: number, n: number): number {
  while (n >= 0x80) {
    out[pos++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[pos++] = n;
  return pos;
}

/** `count` records (offset deltas 0…count-1, null key, a 1-byte value, no headers) on a fresh, registered ArrayBuffer. */
export function standInRecords(count: number, reason: string): Buffer {
  let total = 0;
  for (let i = 0; i < count; i++) total += 1 + 6 + varintSize(2 * i);
  const out = Buffer.from(new ArrayBuffer(total));
  let pos = 0;
  for (let i = 0; i < count; i++) {
    pos = writeVarint(out, pos, 2 * (6 + varintSize(2 * i))); // record length (zigzag)
    out[pos++] = 0; // attributes
    out[pos++] = 0; // timestamp delta
    pos = writeVarint(out, pos, 2 * i); // offset delta
    out[pos++] = 1; // key: null (-1)
    out[pos++] = 2; // value: 1 byte
    out[pos++] = 0;
    out[pos++] = 0; // no headers
  }
  standIns.set(out.buffer, reason);
  return out;
}

/** Why a record stands in for an undecodable batch, or undefined for a real record (its value is no view of a stand-in payload). */
export function undecodableReason(value: Buffer | null | undefined): string | undefined {
  return value ? standIns.get(value.buffer) : undefined;
}

type Decode = (payload: Buffer) => Buffer | Promise<Buffer>;

function isolating(name: string, decode: Decode): (payload: Buffer) => Promise<Buffer> {
  return async (payload) => {
    const count = declaredCount(payload);
    try {
      const records = await decode(payload);
      if (count !== undefined) checkRecords(records, count);
      return records;
    } catch (error) {
      if (count === undefined) throw error; // not inside a v2 batch: nothing to isolate
      const message = error instanceof Error ? error.message : String(error);
      return standInRecords(count, message.startsWith(`${name}:`) ? message : `${name}: ${message}`);
    }
  };
}

// ---- registration ----

interface KafkajsCodec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

const refuse = (name: string) => async (): Promise<Buffer> => {
  throw new MufoldError(`mufold does not produce ${name}: its producers use zstd`);
};

let registered = false;

/** Install the codecs in kafkajs's process-wide table, once (createKafka calls it). */
export function registerCodecs(): void {
  if (registered) return;
  const { CompressionCodecs, CompressionTypes } = kafkajs;
  const table = CompressionCodecs as unknown as Record<number, () => KafkajsCodec>;
  const set = (id: number, name: string, decode: Decode, compress: KafkajsCodec["compress"] = refuse(name)) => {
    const codec: KafkajsCodec = { compress, decompress: isolating(name, decode) };
    table[id] = () => codec;
  };
  set(CompressionTypes.GZIP, "gzip", (b) => unzipAsync(b, { maxOutputLength: MAX_DECOMPRESSED_BYTES }), (e) => gzipAsync(e.buffer));
  set(CompressionTypes.Snappy, "snappy", decodeSnappy);
  set(CompressionTypes.LZ4, "lz4", decodeLz4);
  set(CompressionTypes.ZSTD, "zstd", (b) => zstd.decompress(b), (e) => zstd.compress(e.buffer));
  // Ids 5-7 are not Kafka codecs; kafkajs would read their bytes as uncompressed records.
  for (const id of [5, 6, 7]) {
    set(id, `codec ${id}`, () => {
      throw new CodecError(`unknown compression codec id ${id}`);
    });
  }
  registered = true;
}
