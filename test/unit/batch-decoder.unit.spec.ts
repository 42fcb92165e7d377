/**
 * mufold's record-batch decoder (batch-decoder.ts) decodes each record in
 * place in its batch's bytes; kafkajs's cuts each out first. On any batch,
 * well formed or with a record length that lies, the two must give the same
 * batch, or fail the same way.
 */
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { batchDecoder, installBatchDecoder, kafkajsBatchDecoder } from "../../src/adapters/kafka/batch-decoder.js";
import { installRecordDecoder, recordsDecodedFast } from "../../src/adapters/kafka/record-decoder.js";
import { encodeRecords, recordBatch, type PlainRecord } from "../support/record-batch.js";

// As in a worker (consumer.ts): the record decoder first, then the batch decoder.
expect(installRecordDecoder()).toBe(true);
expect(installBatchDecoder()).toBe(true);

const require = createRequire(import.meta.url);
const KafkaDecoder = require("kafkajs/src/protocol/decoder.js") as new (buffer: Buffer) => never;

type Outcome = { ok: true; batch: unknown } | { ok: false; error: string };

async function outcome(decode: (d: never) => Promise<unknown>, batch: Buffer): Promise<Outcome> {
  try {
    return { ok: true, batch: await decode(new KafkaDecoder(Buffer.from(batch))) };
  } catch (error) {
    return { ok: false, error: `${(error as Error).name}: ${(error as Error).message}` };
  }
}

const text = fc.option(fc.string({ maxLength: 40 }), { nil: null });
const plain = fc.record({ key: text, value: text, headers: fc.option(fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.string({ maxLength: 10 }), { maxKeys: 3 }), { nil: undefined }) });

/** The payload's record lengths: where each record's length varint starts. */
function recordStarts(payload: Buffer, count: number): number[] {
  const starts: number[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    starts.push(at);
    let z = 0;
    let scale = 1;
    let b: number;
    do {
      b = payload[at++]!;
      z += (b & 0x7f) * scale;
      scale *= 128;
    } while (b >= 0x80);
    at += z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }
  return starts;
}

/** The payload with record i's length varint (one byte when small) replaced by `length`'s. */
function withLength(payload: Buffer, start: number, length: number): Buffer {
  let end = start;
  while (payload[end]! >= 0x80) end++;
  const z = length >= 0 ? 2 * length : -2 * length - 1;
  const out: number[] = [];
  let v = z;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.concat([payload.subarray(0, start), Buffer.from(out), payload.subarray(end + 1)]);
}

describe("the record-batch decoder", () => {
  it("gives kafkajs's batch for random records, uncompressed and gzipped, decoding them in place", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(plain, { minLength: 1, maxLength: 12 }), fc.boolean(), async (records: PlainRecord[], gzip) => {
        const payload = encodeRecords(records);
        const batch = recordBatch({ codec: gzip ? 1 : 0, count: records.length, payload: gzip ? gzipSync(payload) : payload, timestamp: 1_733_000_000_000 });
        const before = recordsDecodedFast();
        const ours = await outcome(batchDecoder as never, batch);
        const decodedInPlace = recordsDecodedFast() - before;
        expect(ours).toEqual(await outcome(kafkajsBatchDecoder() as never, batch));
        expect(ours.ok).toBe(true);
        expect(decodedInPlace).toBe(records.length);
      }),
      { numRuns: 200 },
    );
  });

  it("gives kafkajs's batch, or its failure, when a record's length lies (too short, too long, -1, past the batch)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(plain, { minLength: 1, maxLength: 6 }),
        fc.nat(),
        fc.oneof(fc.integer({ min: -3, max: 80 }), fc.constant(100_000)),
        async (records: PlainRecord[], which, length) => {
          const payload = encodeRecords(records);
          const starts = recordStarts(payload, records.length);
          const lying = withLength(payload, starts[which % starts.length]!, length);
          const batch = recordBatch({ codec: 0, count: records.length, payload: lying, timestamp: 1_733_000_000_000 });
          expect(await outcome(batchDecoder as never, batch)).toEqual(await outcome(kafkajsBatchDecoder() as never, batch));
        },
      ),
      { numRuns: 400 },
    );
  });

  it("fails as kafkajs does on a batch cut short (a fetch's partial tail)", async () => {
    const batch = recordBatch({ codec: 0, count: 2, payload: encodeRecords([{ key: "k", value: "v" }, { key: null, value: "w" }]), timestamp: 1 });
    for (let cut = 0; cut < batch.length; cut += 7) {
      const part = batch.subarray(0, cut);
      expect(await outcome(batchDecoder as never, part)).toEqual(await outcome(kafkajsBatchDecoder() as never, part));
    }
  });
});
