/**
 * kafkajs's record encoder (protocol/recordBatch/record/v0/index.js) writes
 * each record it sends through Encoders that start with a zeroed 512-byte
 * buffer (one per record and one per header), a new Buffer for every varint
 * (writeUVarInt's byte array), and the timestamp delta through Long's
 * BigInts: most of a producer's CPU a record. This one writes the same bytes
 * into one buffer of the record's exact size, and hands every other record to
 * kafkajs's own: a timestamp delta that is not a safe integer below 2^52, an
 * offset delta or a length that is not a small integer, a key, value or
 * header value that is neither a string nor a Buffer (kafkajs throws on
 * those, and still does).
 *
 * kafkajs's produce request takes the record encoder when it is first loaded
 * (at a process's first send), so `installRecordEncoder` runs when the
 * producer adapter is imported, before any producer exists; a process that
 * sent before keeps kafkajs's (the same bytes, more garbage).
 */
import { moduleSwap } from "./module-swap.js";

/** What kafkajs's produce request hands its record encoder. */
export interface RecordFields {
  offsetDelta?: number;
  timestampDelta?: unknown;
  key?: unknown;
  value?: unknown;
  headers?: Record<string, unknown>;
}

/** What RecordBatch reads of an encoded record (kafkajs's Encoder, as far as writeEncoderArray uses it). */
export interface EncodedRecordLike {
  buf: Buffer;
  readonly buffer: Buffer;
}

export type RecordEncoder = (fields: RecordFields) => EncodedRecordLike;

/** Lengths and offset deltas this writes itself: their zigzag form stays a non-negative int32. */
const MAX_SMALL = 0x3fff_ffff;
/** Timestamp deltas this writes itself: their zigzag form (up to 2^53) stays exact in a double. */
const MAX_DELTA = 2 ** 52;

/** A record written here: its bytes exactly (kafkajs's Encoder hands out a slice of a larger buffer). */
class EncodedRecord implements EncodedRecordLike {
  constructor(readonly buf: Buffer) {}

  get buffer(): Buffer {
    return this.buf;
  }

  get offset(): number {
    return this.buf.length;
  }

  size(): number {
    return this.buf.length;
  }
}

/** Bytes of a zigzag varint of a non-negative `z` (below 2^53). */
function sizeOfUnsigned(z: number): number {
  let bytes = 1;
  while (z >= 0x80) {
    z = Math.floor(z / 0x80);
    bytes++;
  }
  return bytes;
}

const zigzag = (n: number): number => (n >= 0 ? 2 * n : -2 * n - 1);

function putUnsigned(buf: Buffer, at: number, z: number): number {
  while (z >= 0x80) {
    buf[at++] = (z % 0x80) | 0x80;
    z = Math.floor(z / 0x80);
  }
  buf[at++] = z;
  return at;
}

/** A string's or Buffer's byte length; -1 for what this does not write (the record goes to kafkajs's encoder). */
function byteLength(v: unknown): number {
  if (typeof v === "string") return Buffer.byteLength(v, "utf8");
  if (Buffer.isBuffer(v)) return v.length;
  return -1;
}

/** Write a string or Buffer of `length` bytes at `at`; returns the end. */
function putBytes(buf: Buffer, at: number, v: string | Buffer, length: number): number {
  if (typeof v === "string") buf.write(v, at, length, "utf8");
  else v.copy(buf, at);
  return at + length;
}

/** The headers as kafkajs lists them (an array value is that header repeated), with their byte lengths; null for what this does not write. */
function headerList(headers: Record<string, unknown>): { keys: string[]; values: (string | Buffer)[]; lengths: number[]; bytes: number } | null {
  const keys: string[] = [];
  const values: (string | Buffer)[] = [];
  /** Each header's key and value byte lengths, in turn. */
  const lengths: number[] = [];
  let bytes = 0;
  for (const key of Object.keys(headers)) {
    const value = headers[key];
    const keyBytes = Buffer.byteLength(key, "utf8");
    for (const item of Array.isArray(value) ? value : [value]) {
      const valueBytes = byteLength(item);
      if (valueBytes < 0 || valueBytes > MAX_SMALL || keyBytes > MAX_SMALL) return null;
      keys.push(key);
      values.push(item as string | Buffer);
      lengths.push(keyBytes, valueBytes);
      bytes += sizeOfUnsigned(zigzag(keyBytes)) + keyBytes + sizeOfUnsigned(zigzag(valueBytes)) + valueBytes;
    }
  }
  return { keys, values, lengths, bytes };
}

let encodedFast = 0;

/** Records this process encoded without kafkajs's encoder (a test's proof that sends use this one). */
export function recordsEncodedFast(): number {
  return encodedFast;
}

/** A record encoder that writes kafkajs's bytes without its garbage, and uses `original` for the rest. */
export function fastRecordEncoder(original: RecordEncoder): RecordEncoder {
  return (fields) => {
    const { offsetDelta = 0, timestampDelta = 0, key, value, headers = {} } = fields;
    if (typeof timestampDelta !== "number" || !Number.isSafeInteger(timestampDelta) || Math.abs(timestampDelta) >= MAX_DELTA) return original(fields);
    if (!Number.isInteger(offsetDelta) || Math.abs(offsetDelta) > MAX_SMALL) return original(fields);
    const keyBytes = key == null ? -1 : byteLength(key);
    const valueBytes = value == null ? -1 : byteLength(value);
    if ((key != null && keyBytes < 0) || (value != null && valueBytes < 0) || keyBytes > MAX_SMALL || valueBytes > MAX_SMALL) return original(fields);
    const list = headerList(headers);
    if (list === null || list.keys.length > MAX_SMALL) return original(fields);
    const tsZ = zigzag(timestampDelta);
    const body =
      1 +
      sizeOfUnsigned(tsZ) +
      sizeOfUnsigned(zigzag(offsetDelta)) +
      sizeOfUnsigned(zigzag(keyBytes)) + Math.max(keyBytes, 0) +
      sizeOfUnsigned(zigzag(valueBytes)) + Math.max(valueBytes, 0) +
      sizeOfUnsigned(zigzag(list.keys.length)) + list.bytes;
    if (body > MAX_SMALL) return original(fields);
    const buf = Buffer.allocUnsafe(sizeOfUnsigned(zigzag(body)) + body);
    let at = putUnsigned(buf, 0, zigzag(body));
    buf[at++] = 0; // attributes: none
    at = putUnsigned(buf, at, tsZ);
    at = putUnsigned(buf, at, zigzag(offsetDelta));
    at = putUnsigned(buf, at, zigzag(keyBytes));
    if (keyBytes >= 0) at = putBytes(buf, at, key as string | Buffer, keyBytes);
    at = putUnsigned(buf, at, zigzag(valueBytes));
    if (valueBytes >= 0) at = putBytes(buf, at, value as string | Buffer, valueBytes);
    at = putUnsigned(buf, at, zigzag(list.keys.length));
    for (let i = 0; i < list.keys.length; i++) {
      const kBytes = list.lengths[2 * i]!;
      const vBytes = list.lengths[2 * i + 1]!;
      at = putUnsigned(buf, at, zigzag(kBytes));
      at = putBytes(buf, at, list.keys[i]!, kBytes);
      at = putUnsigned(buf, at, zigzag(vBytes));
      at = putBytes(buf, at, list.values[i]!, vBytes);
    }
    if (at !== buf.length) throw new Error(`record encoder: wrote ${at} of ${buf.length} bytes`); // a sizing bug, never a silent one
    encodedFast++;
    return new EncodedRecord(buf);
  };
}

const swap = moduleSwap<RecordEncoder>({
  module: "kafkajs/src/protocol/recordBatch/record/v0/index.js",
  takenBy: "kafkajs/src/protocol/requests/produce/v3/request.js",
  mark: Symbol.for("mufold.kafkajsRecordEncoder"),
  replace: fastRecordEncoder,
});

/** kafkajs's own record encoder (for tests, and the fallback), installed or not. */
export function kafkajsRecordEncoder(): RecordEncoder {
  return swap.original();
}

/**
 * Put the fast encoder where kafkajs's produce request will load it. Returns
 * whether records will be encoded with it: false when kafkajs already loaded
 * its produce request with its own.
 */
export function installRecordEncoder(): boolean {
  return swap.install();
}
