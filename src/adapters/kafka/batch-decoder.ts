/**
 * kafkajs's record-batch decoder (protocol/recordBatch/v0/decoder.js) cuts
 * each record out of its batch as a Buffer view and wraps that in a Decoder
 * before decoding it: two objects a record that die at once (~140 bytes). This
 * one is the same function and makes the same batch, with each record decoded
 * in place in the batch's bytes, bounded by its length (record-decoder.ts). A
 * record that cannot be decoded so, or a length that does not fit the batch,
 * goes the way kafkajs's goes: a view, a Decoder, kafkajs's record decoder.
 *
 * kafkajs's fetch decoder takes this decoder when it is first loaded, so
 * `installBatchDecoder` runs with the record decoder's install (consumer.ts).
 */
import { createRequire } from "node:module";
import { moduleSwap } from "./module-swap.js";
import { recordInPlace, type RecordContext, type RecordDecoder } from "./record-decoder.js";

const require = createRequire(import.meta.url);

/** kafkajs's Decoder, as far as a batch decoder uses it. */
interface Decoder {
  buffer: Buffer;
  offset: number;
  readInt8(): number;
  readInt16(): number;
  readInt32(): number;
  readInt64(): { toString(): string };
  readVarInt(): number;
  readVarIntBytes(): Buffer | null;
  readAll(): Buffer;
  readArray<T>(reader: (decoder: Decoder) => T): T[];
  slice(length: number): Decoder;
  forward(length: number): void;
}

type BatchDecoder = (fetchDecoder: Decoder) => Promise<unknown>;

const DecoderClass = require("kafkajs/src/protocol/decoder.js") as new (buffer: Buffer | null) => Decoder;
const { KafkaJSPartialMessageError } = require("kafkajs/src/errors.js") as { KafkaJSPartialMessageError: new (message: string) => Error };
const { lookupCodecByAttributes } = require("kafkajs/src/protocol/message/compression/index.js") as {
  lookupCodecByAttributes: (attributes: number) => { decompress(buffer: Buffer): Promise<Buffer> } | undefined | null;
};
const TimestampTypes = require("kafkajs/src/protocol/timestampTypes.js") as { LOG_APPEND_TIME: number; CREATE_TIME: number };

const TIMESTAMP_TYPE_FLAG_MASK = 0x8;
const TRANSACTIONAL_FLAG_MASK = 0x10;
const CONTROL_FLAG_MASK = 0x20;

/** kafkajs's record-batch decoder, statement for statement, but for how each record is cut out (decodeRecord). */
const inPlaceBatchDecoder: BatchDecoder = async (fetchDecoder) => {
  const firstOffset = fetchDecoder.readInt64().toString();
  const length = fetchDecoder.readInt32();
  const decoder = fetchDecoder.slice(length);
  fetchDecoder.forward(length);
  const remainingBytes = Buffer.byteLength(decoder.buffer);
  if (remainingBytes < length) {
    throw new KafkaJSPartialMessageError(`Tried to decode a partial record batch: remainingBytes(${remainingBytes}) < recordBatchLength(${length})`);
  }
  const partitionLeaderEpoch = decoder.readInt32();
  const magicByte = decoder.readInt8();
  decoder.readInt32(); // the CRC
  const attributes = decoder.readInt16();
  const lastOffsetDelta = decoder.readInt32();
  const firstTimestamp = decoder.readInt64().toString();
  const maxTimestamp = decoder.readInt64().toString();
  const producerId = decoder.readInt64().toString();
  const producerEpoch = decoder.readInt16();
  const firstSequence = decoder.readInt32();
  const inTransaction = (attributes & TRANSACTIONAL_FLAG_MASK) > 0;
  const isControlBatch = (attributes & CONTROL_FLAG_MASK) > 0;
  const timestampType = (attributes & TIMESTAMP_TYPE_FLAG_MASK) > 0 ? TimestampTypes.LOG_APPEND_TIME : TimestampTypes.CREATE_TIME;
  const codec = lookupCodecByAttributes(attributes);
  const recordContext = {
    firstOffset,
    firstTimestamp,
    partitionLeaderEpoch,
    inTransaction,
    isControlBatch,
    lastOffsetDelta,
    producerId,
    producerEpoch,
    firstSequence,
    maxTimestamp,
    timestampType,
  };
  const records = await decodeRecords(codec, decoder, { ...recordContext, magicByte });
  return { ...recordContext, records };
};

async function decodeRecords(codec: ReturnType<typeof lookupCodecByAttributes>, recordsDecoder: Decoder, recordContext: RecordContext): Promise<unknown[]> {
  if (!codec) return recordsDecoder.readArray((decoder) => decodeRecord(decoder, recordContext));
  const length = recordsDecoder.readInt32();
  if (length <= 0) return [];
  const compressedRecordsBuffer = recordsDecoder.readAll();
  const decompressedRecordBuffer = await codec.decompress(compressedRecordsBuffer);
  const decompressedRecordDecoder = new DecoderClass(decompressedRecordBuffer);
  const records = new Array<unknown>(length);
  for (let i = 0; i < length; i++) records[i] = decodeRecord(decompressedRecordDecoder, recordContext);
  return records;
}

/** The next record of the batch: in place when its length fits the batch and it reads so, else as kafkajs does. */
function decodeRecord(decoder: Decoder, recordContext: RecordContext): unknown {
  const start = decoder.offset;
  const length = decoder.readVarInt();
  const at = decoder.offset;
  if (length >= 0 && at + length <= decoder.buffer.length) {
    const record = recordInPlace(decoder.buffer, at, at + length, recordContext);
    if (record !== null) {
      decoder.offset = at + length;
      return record;
    }
  }
  decoder.offset = start;
  // The record decoder kafkajs's batch decoder would call: the one installed (record-decoder.ts), else its own.
  const recordDecoder = require("kafkajs/src/protocol/recordBatch/record/v0/decoder.js") as RecordDecoder;
  return recordDecoder(new DecoderClass(decoder.readVarIntBytes()) as never, recordContext);
}

const swap = moduleSwap<BatchDecoder>({
  module: "kafkajs/src/protocol/recordBatch/v0/decoder.js",
  takenBy: "kafkajs/src/protocol/requests/fetch/v4/decodeMessages.js",
  mark: Symbol.for("mufold.kafkajsBatchDecoder"),
  replace: () => inPlaceBatchDecoder,
});

/** kafkajs's own record-batch decoder (for tests), installed or not. */
export function kafkajsBatchDecoder(): BatchDecoder {
  return swap.original();
}

/** This module's decoder (for tests, which compare it with kafkajs's). */
export const batchDecoder: BatchDecoder = inPlaceBatchDecoder;

/**
 * Put this decoder where kafkajs's fetch decoder will load it. Returns whether
 * fetches will use it: false when kafkajs already loaded its fetch decoder.
 */
export function installBatchDecoder(): boolean {
  return swap.install();
}
