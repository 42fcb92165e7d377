/**
 * The replay's log reader on the real broker: its fetches are bounded by the
 * fetch settings it is given (MUFOLD_FETCH_MAX_BYTES and
 * MUFOLD_PARTITION_FETCH_MAX_BYTES), not by kafkajs's defaults (10 MB a fetch,
 * 1 MB a partition). kafkajs decodes a whole fetch before it hands out a batch,
 * so that bound is what a reader holds besides its chunks.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createKafka } from "../../src/adapters/kafka/client.js";
import type { BatchContext } from "../../src/adapters/kafka/consumer.js";
import type { SourceRecord } from "../../src/fold/source-record.js";
import { LogReader, type ChunkBuilder } from "../../consumers/replay/log-reader.js";
import { createTopics, deleteTopics } from "../support/foreign/foreign.js";
import { quietLog, testSettings } from "../support/pipeline.js";
import { waitFor } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

const RECORDS = 60;
const VALUE_BYTES = 1000;

/** Batches as the reader hands them to its builder: their sizes, in order. */
class RecordingBuilder implements ChunkBuilder {
  readonly batches: number[] = [];
  add(records: SourceRecord[], _ctx: BatchContext): void {
    this.batches.push(records.length);
  }
  async flush(): Promise<void> {}
}

/** Produce RECORDS records round robin over `partitions` partitions, then read them all with these fetch bounds. */
async function readAll(partitions: number, fetchMaxBytes: number, partitionFetchMaxBytes: number): Promise<number[]> {
  const settings = testSettings({ partitions });
  cleanups.push(() => deleteTopics(settings.brokers, [settings.topic]));
  await createTopics(settings.brokers, [{ topic: settings.topic, partitions }]);
  const kafka = createKafka({ brokers: settings.brokers, clientId: "replay-reader-test" });
  const producer = kafka.producer();
  await producer.connect();
  try {
    // One send per record, uncompressed: one record batch of ~1 KB each, so a fetch's size is counted in records.
    for (let i = 0; i < RECORDS; i++) {
      await producer.send({ topic: settings.topic, messages: [{ key: `k${i}`, value: String(i).padEnd(VALUE_BYTES, "x"), partition: i % partitions }] });
    }
  } finally {
    await producer.disconnect();
  }
  const builder = new RecordingBuilder();
  const reader = await LogReader.start(kafka, {
    topic: settings.topic,
    groupId: `${settings.group}.reader`,
    targets: new Map(Array.from({ length: partitions }, (_, p) => [p, BigInt(RECORDS / partitions)] as const)),
    builder,
    chunkBytes: 1 << 20,
    fetchMaxBytes,
    partitionFetchMaxBytes,
    log: quietLog,
  });
  cleanups.push(() => reader.stop());
  await waitFor("the reader reaches its targets", async () => (reader.reached() ? true : undefined), 60_000);
  return builder.batches;
}

describe("replay log reader", () => {
  // 4 KiB holds three of these ~1.1 KB record batches; Kafka also returns a first batch that does not fit.
  it("fetches at most the partition fetch bound of a partition at a time", async () => {
    const bounded = await readAll(1, 1 << 20, 4096);
    expect(bounded.reduce((a, b) => a + b, 0)).toBe(RECORDS);
    expect(Math.max(...bounded)).toBeLessThanOrEqual(4);
    expect(bounded.length).toBeGreaterThanOrEqual(RECORDS / 4);
  });

  it("and at most the fetch bound of all its partitions together", async () => {
    const bounded = await readAll(3, 4096, 1 << 20);
    expect(bounded.reduce((a, b) => a + b, 0)).toBe(RECORDS);
    expect(Math.max(...bounded)).toBeLessThanOrEqual(4);
  });

  it("and with bounds above the log, takes it in one fetch (what kafkajs's defaults would do)", async () => {
    expect(await readAll(1, 1 << 20, 1 << 20)).toEqual([RECORDS]);
    expect(await readAll(3, 1 << 20, 1 << 20)).toEqual([RECORDS / 3, RECORDS / 3, RECORDS / 3]);
  });
});
