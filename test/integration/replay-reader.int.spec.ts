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
import type { SourceRecord } from "../../src/fold/dead-letter.js";
import { LogReader, type ChunkBuilder } from "../../consumers/log-reader.js";
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

async function readAll(partitionFetchMaxBytes: number): Promise<number[]> {
  const settings = testSettings({ partitions: 1 });
  cleanups.push(() => deleteTopics(settings.brokers, [settings.topic]));
  await createTopics(settings.brokers, [{ topic: settings.topic, partitions: 1 }]);
  const kafka = createKafka({ brokers: settings.brokers, clientId: "replay-reader-test" });
  const producer = kafka.producer();
  await producer.connect();
  // One send per record, uncompressed: one record batch of ~1 KB each, so a fetch's size is counted in records.
  for (let i = 0; i < RECORDS; i++) await producer.send({ topic: settings.topic, messages: [{ key: `k${i}`, value: String(i).padEnd(VALUE_BYTES, "x") }] });
  await producer.disconnect();
  const builder = new RecordingBuilder();
  const reader = await LogReader.start(kafka, {
    topic: settings.topic,
    groupId: `${settings.group}.reader`,
    targets: new Map([[0, BigInt(RECORDS)]]),
    builder,
    chunkBytes: 1 << 20,
    fetchMaxBytes: 2 * partitionFetchMaxBytes,
    partitionFetchMaxBytes,
    log: quietLog,
  });
  cleanups.push(() => reader.stop());
  await waitFor("the reader reaches its target", async () => (reader.reached() ? true : undefined), 60_000);
  return builder.batches;
}

describe("replay log reader", () => {
  it("fetches at most the partition fetch bound at a time", async () => {
    const bounded = await readAll(4096);
    expect(bounded.reduce((a, b) => a + b, 0)).toBe(RECORDS);
    // 4 KiB holds three of these ~1.1 KB record batches; Kafka also returns a first batch that does not fit.
    expect(Math.max(...bounded)).toBeLessThanOrEqual(4);
    expect(bounded.length).toBeGreaterThanOrEqual(RECORDS / 4);
  });

  it("and with a bound above the log, takes it in one fetch (what kafkajs's defaults would do)", async () => {
    const unbounded = await readAll(1 << 20);
    expect(unbounded).toEqual([RECORDS]);
  });
});
