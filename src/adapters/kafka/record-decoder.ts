/**
 * kafkajs's record decoder (protocol/recordBatch/record/v0/decoder.js) gives
 * each record its offset and timestamp as `Long.fromValue(first).add(delta)
 * .toString()` and its headers by a spread per header: ~20 short-lived objects
 * a record, the largest part of what reading a topic allocates. This one makes
 * the same record (equal in every property, in the same order) from numbers
 * when they are exact, and hands every other record to kafkajs's own decoder:
 * a delta or a sum beyond 2^53, a read past the record's bytes, a header named
 * like a property of Object.prototype (which a spread defines and an
 * assignment would not).
 *
 * kafkajs's record-batch decoder takes the record decoder when it is first
 * loaded (at a process's first fetch), so `installRecordDecoder` runs when
 * this module is imported, before any consumer exists; a process that fetched
 * before keeps kafkajs's (the same records, more garbage).
 */
import { createRequire } from "node:module";
import { moduleSwap } from "./module-swap.js";

/** kafkajs's Decoder, as far as a record decoder uses it. */
export interface KafkajsDecoder {
  buffer: Buffer;
  offset: number;
}

/** What kafkajs's record-batch decoder hands each record (its batch's context). */
export interface RecordContext {
  firstOffset: string;
  firstTimestamp: string;
  maxTimestamp: string;
  magicByte: number;
  isControlBatch?: boolean;
  timestampType: number;
}

export type RecordDecoder = (decoder: KafkajsDecoder, context?: RecordContext) => unknown;

const require = createRequire(import.meta.url);
const LOG_APPEND_TIME = (require("kafkajs/src/protocol/timestampTypes.js") as { LOG_APPEND_TIME: number }).LOG_APPEND_TIME;

/** Thrown inside the fast path only: the record goes to kafkajs's decoder instead. */
const FALL_BACK = Symbol("fall back");

/** A record's bytes, read as kafkajs's Decoder reads them; FALL_BACK past the end. */
class Reader {
  constructor(
    public buf: Buffer,
    public pos: number,
    /** Where the record ends: its buffer's end, or its length's in a batch read in place (batch-decoder.ts). */
    public end = buf.length,
  ) {}

  /** This reader, at `pos` of `buf` up to `end` (one per record was ~40 bytes of garbage). */
  at(buf: Buffer, pos: number, end: number): this {
    this.buf = buf;
    this.pos = pos;
    this.end = end;
    return this;
  }

  byte(): number {
    if (this.pos >= this.end) throw FALL_BACK;
    return this.buf[this.pos++]!;
  }

  /** Decoder.readVarInt, operation for operation (its 32-bit wrap included). */
  varInt(): number {
    let current: number;
    let result = 0;
    let i = 0;
    do {
      current = this.byte();
      result += (current & 0x7f) << i;
      i += 7;
    } while (current >= 0x80);
    return (result >>> 1) ^ -(result & 1);
  }

  /** Decoder.readVarLong's value when it is a safe integer (at most 7 bytes: 49 bits); else FALL_BACK. */
  varLong(): number {
    let current: number;
    let result = 0;
    let scale = 1;
    let i = 0;
    do {
      if (i === 7) throw FALL_BACK;
      current = this.byte();
      result += (current & 0x7f) * scale;
      scale *= 128;
      i++;
    } while (current >= 0x80);
    return result % 2 === 0 ? result / 2 : -(result + 1) / 2;
  }

  /** Decoder.readVarIntBytes: a view of the bytes, or null for length -1. */
  bytes(): Buffer | null {
    const length = this.varInt();
    if (length === -1) return null;
    if (length < 0 || this.pos + length > this.end) throw FALL_BACK;
    const out = this.buf.slice(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }

  /** Past what bytes() would read, making nothing. */
  skipBytes(): void {
    const length = this.varInt();
    if (length === -1) return;
    if (length < 0 || this.pos + length > this.end) throw FALL_BACK;
    this.pos += length;
  }

  /** Decoder.readVarIntString (UTF-8), or null for length -1. */
  string(): string | null {
    const length = this.varInt();
    if (length === -1) return null;
    if (length < 0 || this.pos + length > this.end) throw FALL_BACK;
    const out = this.buf.toString("utf8", this.pos, this.pos + length);
    this.pos += length;
    return out;
  }
}

/** A decimal integer as kafkajs's batch decoder writes one (BigInt's toString): what Long.fromValue parses. */
const DECIMAL = /^-?(?:0|[1-9][0-9]*)$/;

/** A batch's first offset or timestamp as a number: NaN unless it is a decimal integer exact as a number. */
function baseOf(first: unknown): number {
  return typeof first === "string" && DECIMAL.test(first) && Number.isSafeInteger(Number(first)) ? Number(first) : NaN;
}

/** The context of the batch whose records are being decoded, and its bases (a batch's records share one context). */
let lastContext: RecordContext | null = null;
let offsetBase = NaN;
let timestampBase = NaN;

/** `base + delta` in decimal, as Long's add and toString give it, when exact as a number; else FALL_BACK. */
function plus(base: number, delta: number): string {
  const sum = base + delta;
  if (!Number.isSafeInteger(sum)) throw FALL_BACK;
  return String(sum);
}

/** The last timestamp written, and its text: a producer's batch often stamps its records alike. */
let lastTimestamp = NaN;
let lastTimestampText = "";

/** plus() for a timestamp: the last one's string when it is the same instant. */
function timestampPlus(base: number, delta: number): string {
  const sum = base + delta;
  if (sum === lastTimestamp) return lastTimestampText;
  lastTimestampText = plus(base, delta);
  lastTimestamp = sum;
  return lastTimestampText;
}

const NO_RECORD = Buffer.alloc(0);
/** The reader of every record (decoding is synchronous, and a record's headers have a reader of their own). */
const reader = new Reader(NO_RECORD, 0);

/**
 * The header block last decoded (its bytes, copied) and the object made of it. A producer's records carry the same
 * headers (mufold's: one `schema`), and a fetch's records all live until their batch is folded: a header object and
 * value views per record outlived the young generation (~0.3 KB a record, bench/alloc-sites.ts --survivors). Records
 * whose header bytes equal the last block's share its object (nothing changes a record's headers); its values are
 * views of the copy, not of a fetch's buffer, so it keeps no fetch alive.
 */
let sharedBlock: Buffer | null = null;
let sharedHeaders: Record<string, unknown> | null = null;

/** A record's headers: the last block's object when the bytes are the same, else decoded from a copy of them. */
function headersOf(r: Reader): Record<string, unknown> {
  const start = r.pos;
  const count = r.varInt(); // below -1 it matches no block decoded before, and decodeHeaders refuses it
  for (let i = 0; i < count; i++) {
    r.skipBytes();
    r.skipBytes();
  }
  const end = r.pos;
  if (sharedBlock !== null && sharedBlock.length === end - start && sharedBlock.compare(r.buf, start, end) === 0) return sharedHeaders!;
  const block = Buffer.from(r.buf.subarray(start, end));
  const headers = decodeHeaders(new Reader(block, 0));
  sharedBlock = block;
  sharedHeaders = headers;
  return headers;
}

/** kafkajs's header object: one property per key, a repeated key's values in a list (the reduce of decoder.js). */
function decodeHeaders(r: Reader): Record<string, unknown> {
  const count = r.varInt();
  if (count < -1) throw FALL_BACK; // kafkajs's Array(count) throws: let it
  const headers: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) {
    const key = String(r.string()); // a null key names the property "null", as a computed key does
    // kafkajs's spread defines the property; an assignment would run what Object.prototype has under that name.
    if (key in Object.prototype) throw FALL_BACK;
    const value = r.bytes();
    const prior = headers[key];
    headers[key] = prior === undefined ? value : Array.isArray(prior) ? prior.concat([value]) : [prior, value];
  }
  return headers;
}

let decodedFast = 0;

/** Records this process decoded without kafkajs's decoder (a test's proof that fetches use this one). */
export function recordsDecodedFast(): number {
  return decodedFast;
}

/**
 * The record at [start, end) of `buffer` as kafkajs's decoder makes it, and where it stopped reading
 * (`recordEnd`); FALL_BACK (or a RangeError) when kafkajs's decoder must make it.
 */
function readRecord(buffer: Buffer, start: number, end: number, batchContext: RecordContext): unknown {
  const { magicByte, isControlBatch = false, timestampType, maxTimestamp } = batchContext;
  if (batchContext !== lastContext) {
    lastContext = batchContext;
    offsetBase = baseOf(batchContext.firstOffset);
    timestampBase = baseOf(batchContext.firstTimestamp);
  }
  const r = reader.at(buffer, start, end);
  const attributes = (r.byte() << 24) >> 24; // Decoder.readInt8
  const timestampDelta = r.varLong();
  const timestamp = timestampType === LOG_APPEND_TIME && maxTimestamp ? maxTimestamp : timestampPlus(timestampBase, timestampDelta);
  const offset = plus(offsetBase, r.varInt());
  const key = r.bytes();
  const value = r.bytes();
  const headers = headersOf(r);
  recordEnd = r.pos;
  decodedFast++;
  return { magicByte, attributes, timestamp, offset, key, value, headers, isControlRecord: isControlBatch, batchContext };
}

let recordEnd = 0;

/** A record decoder that makes kafkajs's records with fewer objects, and uses `original` for the rest. */
export function fastRecordDecoder(original: RecordDecoder): RecordDecoder {
  return (decoder, batchContext = {} as RecordContext) => {
    const start = decoder.offset;
    try {
      const record = readRecord(decoder.buffer, start, decoder.buffer.length, batchContext);
      decoder.offset = recordEnd;
      return record;
    } catch (error) {
      if (error !== FALL_BACK && !(error instanceof RangeError)) throw error;
      decoder.offset = start;
      return original(decoder, batchContext);
    } finally {
      reader.buf = NO_RECORD; // keep no fetch alive past its records
    }
  };
}

/**
 * The record whose bytes are [start, end) of a batch's `buffer`, read in place (batch-decoder.ts), or null when
 * kafkajs's decoder must make it from those bytes.
 */
export function recordInPlace(buffer: Buffer, start: number, end: number, batchContext: RecordContext = {} as RecordContext): unknown {
  try {
    return readRecord(buffer, start, end, batchContext);
  } catch (error) {
    if (error !== FALL_BACK && !(error instanceof RangeError)) throw error;
    return null;
  } finally {
    reader.buf = NO_RECORD;
  }
}

const swap = moduleSwap<RecordDecoder>({
  module: "kafkajs/src/protocol/recordBatch/record/v0/decoder.js",
  takenBy: "kafkajs/src/protocol/recordBatch/v0/decoder.js",
  mark: Symbol.for("mufold.kafkajsRecordDecoder"),
  replace: fastRecordDecoder,
});

/** kafkajs's own record decoder (for tests, and the fallback), installed or not. */
export function kafkajsRecordDecoder(): RecordDecoder {
  return swap.original();
}

/**
 * Put the fast decoder where kafkajs's record-batch decoder will load it.
 * Returns whether record batches will be decoded with it: false when kafkajs
 * already loaded its batch decoder with its own.
 */
export function installRecordDecoder(): boolean {
  return swap.install();
}
