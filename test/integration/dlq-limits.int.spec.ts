/**
 * Dead letters always fit the DLQ topic (issue 8 item 5) and keep repeated
 * headers (issue 9), on the real broker: a record just under the broker's
 * size limit is dead-lettered cut down to a pointer at its original, a copy of
 * exactly the budget goes out whole, dead letters that only together exceed
 * the limit go out in several sends, and the fold keeps folding throughout.
 */
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import kafkajs from "kafkajs";
import type { IHeaders } from "kafkajs";
import { afterEach, describe, expect, it } from "vitest";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { awaitTopicLeaders, LOG_CONFIG } from "../../src/adapters/kafka/topics.js";
import { DLQ_HEADERS, dlqTopic } from "../../src/fold/dead-letter.js";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import type { Settings } from "../../src/config/settings.js";
import type { Observation } from "../../src/core/index.js";
import { comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";

const { CompressionTypes, ConfigResourceTypes } = kafkajs;
const require = createRequire(import.meta.url);
// kafkajs's own record encoder: the bytes a DLQ copy takes, independent of src/fold/dead-letter.ts.
const KafkaRecord = require("kafkajs/src/protocol/recordBatch/record/v0") as (r: object) => { buffer: Buffer };

/** Kafka's default max.message.bytes, which these tests are about. */
const BROKER_LIMIT = 1_048_588;
/** 1,048,588 - 61 (batch header) - 1,024 (slack), less zstd's worst case: see test/unit/dlq.unit.spec.ts. */
const BUDGET = 1_043_428;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

function workload(seed: number): Observation[] {
  return [...simulate({ agents: 6, observationsPerAgent: 20, snapshotEvery: 10, duplicateRate: 0.1, conflictRate: 0.02, seed })].map((d) => d.observation);
}

/** A plain kafkajs producer: no compression, no validation, array header values allowed. */
async function rawProducer(settings: Settings) {
  const producer = createKafka({ brokers: settings.brokers, clientId: "mufold-test-raw" }).producer({ allowAutoTopicCreation: false });
  await producer.connect();
  cleanups.push(() => producer.disconnect());
  return async (message: { key: string | null; value: Buffer | string | null; headers?: IHeaders; partition?: number }) => {
    const [meta] = await producer.send({ topic: settings.topic, acks: -1, compression: CompressionTypes.None, messages: [message] });
    return { partition: meta!.partition, offset: meta!.baseOffset! };
  };
}

async function topicConfig(settings: Settings, topic: string, name: string): Promise<string | undefined> {
  const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test-admin" }).admin();
  await admin.connect();
  try {
    const result = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: [name] }] });
    return result.resources[0]?.configEntries.find((e) => e.configName === name)?.configValue;
  } finally {
    await admin.disconnect();
  }
}

/** The source topic, created by the test (infinite retention, as the fold requires) with its own size limit. */
async function createSourceTopic(settings: Settings, maxMessageBytes: number): Promise<void> {
  const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test-admin" }).admin();
  await admin.connect();
  try {
    await admin.createTopics({
      waitForLeaders: false,
      topics: [{ topic: settings.topic, numPartitions: settings.partitions, configEntries: [...LOG_CONFIG, { name: "max.message.bytes", value: String(maxMessageBytes) }] }],
    });
    await awaitTopicLeaders(admin, [{ topic: settings.topic, partitions: settings.partitions }]);
  } finally {
    await admin.disconnect();
  }
}

async function startFold(settings: Settings): Promise<FoldWorker> {
  const worker = await FoldWorker.start(settings, quietLog);
  cleanups.push(() => worker.stop());
  return worker;
}

/** Wait until the group committed everything; fail at once if the worker crashes meanwhile. */
async function caughtUp(worker: FoldWorker, settings: Settings): Promise<void> {
  const crashed = worker.crashed.then((error) => {
    throw new Error(`the fold worker crashed: ${String(error)}`);
  });
  await Promise.race([waitCaughtUp(settings), crashed]);
}

interface Read {
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: IHeaders;
}

/** Every record of a topic, headers as kafkajs delivers them (a repeated header as an array). */
async function readAll(settings: Settings, topic: string, expected: number): Promise<Read[]> {
  const consumer = createKafka({ brokers: settings.brokers, clientId: "mufold-test-reader" }).consumer({ groupId: `${settings.group}.reader.${topic}`, maxWaitTimeInMs: 100 });
  const out: Read[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${out.length} of ${expected} records of ${topic} arrived`)), 60_000);
      void consumer.run({
        eachMessage: async ({ partition, message }) => {
          out.push({ partition, offset: message.offset, key: message.key, value: message.value, headers: message.headers ?? {} });
          if (out.length >= expected) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return out;
}

const str = (v: unknown): unknown => (Buffer.isBuffer(v) ? v.toString("utf8") : Array.isArray(v) ? v.map(str) : v);
const headersText = (h: IHeaders) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, str(v)]));
const bySource = (dlq: Read[], at: { partition: number; offset: string }) =>
  dlq.filter((d) => str(d.headers[DLQ_HEADERS.partition]) === String(at.partition) && str(d.headers[DLQ_HEADERS.offset]) === at.offset);

describe("dead letters always fit the DLQ topic", () => {
  it("a record just under the broker's limit is dead-lettered as a pointer to its original, and the fold goes on", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const good = workload(81);
    const half = Math.floor(good.length / 2);
    await produce(settings, good.slice(0, half).map(observationRecord)); // creates the topic and its DLQ with the broker defaults
    expect(await topicConfig(settings, dlqTopic(settings.topic), "max.message.bytes")).toBe(String(BROKER_LIMIT));

    const send = await rawProducer(settings);
    const key = observationRecord(good[0]!).key as string; // the same partition as valid records, before and after it
    const big = randomBytes(1_048_388); // incompressible; the record batch is 1,048,547 bytes, under 1,048,588
    const bigAt = await send({ key, value: big, headers: { schema: "memory_utility_observation_v0" } });
    // Issue 9: a repeated header (kafkajs writes one header per array element).
    const repeatedAt = await send({ key, value: "{not json", headers: { "x-trace": ["first", "second"], schema: "memory_utility_observation_v0" } });
    await produce(settings, good.slice(half).map(observationRecord));

    const worker = await startFold(settings);
    await caughtUp(worker, settings);
    expect(worker.counters.deadLettered).toBe(2);
    expect(comparePackets(await readAllPackets(settings), expectedPackets(good))).toEqual({ missing: [], extra: [], different: [] });

    const dlq = await readAll(settings, dlqTopic(settings.topic), 2);
    const [pointer] = bySource(dlq, bigAt);
    expect(pointer, "DLQ record of the large value").toBeDefined();
    expect(pointer!.value).toBeNull();
    expect(pointer!.key!.toString()).toBe(key);
    expect(headersText(pointer!.headers)).toEqual({
      schema: "memory_utility_observation_v0",
      [DLQ_HEADERS.reason]: "value_too_large",
      [DLQ_HEADERS.detail]: `value is 1048388 bytes; the limit is ${settings.maxValueBytes}`,
      [DLQ_HEADERS.topic]: settings.topic,
      [DLQ_HEADERS.partition]: String(bigAt.partition),
      [DLQ_HEADERS.offset]: bigAt.offset,
      [DLQ_HEADERS.truncated]: "value",
      [DLQ_HEADERS.originalValueBytes]: "1048388",
    });

    const [repeated] = bySource(dlq, repeatedAt);
    expect(repeated, "DLQ record of the repeated-header record").toBeDefined();
    expect(str(repeated!.headers["x-trace"])).toEqual(["first", "second"]);
    expect(str(repeated!.headers[DLQ_HEADERS.reason])).toBe("value_not_json");
    expect(repeated!.headers[DLQ_HEADERS.truncated]).toBeUndefined();
    expect(str(repeated!.value)).toBe("{not json");

    // The pointer leads to the original bytes.
    const source = await readAll(settings, settings.topic, good.length + 2);
    const original = source.find((r) => r.partition === Number(str(pointer!.headers[DLQ_HEADERS.partition])) && r.offset === str(pointer!.headers[DLQ_HEADERS.offset]));
    expect(original!.value!.equals(big)).toBe(true);
  });

  it("a dead letter of exactly the budget goes out whole, one byte more is cut down", async () => {
    const settings = testSettings({ partitions: 1 });
    cleanups.push(() => dropPrefix(settings));
    await produce(settings, []); // nothing yet: creates the topic and its DLQ
    // The DLQ copy of a value of n random bytes at partition 0, offset `offset`, as docs/using.md "Dead letters" documents it.
    const copyBytes = (n: number, offset: string) =>
      KafkaRecord({
        key: "boundary",
        value: Buffer.alloc(n),
        headers: {
          [DLQ_HEADERS.reason]: "value_too_large",
          [DLQ_HEADERS.detail]: `value is ${n} bytes; the limit is ${settings.maxValueBytes}`,
          [DLQ_HEADERS.topic]: settings.topic,
          [DLQ_HEADERS.partition]: "0",
          [DLQ_HEADERS.offset]: offset,
        },
        timestampDelta: "-9223372036854775808", // the widest varints, as the budget counts them
        offsetDelta: -2147483648,
      }).buffer.length;
    let n = BUDGET;
    while (copyBytes(n, "0") > BUDGET) n--;
    expect(copyBytes(n, "0")).toBe(BUDGET);
    expect(copyBytes(n + 1, "1")).toBe(BUDGET + 1);

    const send = await rawProducer(settings);
    const fits = randomBytes(n); // incompressible: zstd makes it a little larger, which the budget allows for
    const over = randomBytes(n + 1);
    const fitsAt = await send({ key: "boundary", value: fits, partition: 0 });
    const overAt = await send({ key: "boundary", value: over, partition: 0 });
    expect([fitsAt.offset, overAt.offset]).toEqual(["0", "1"]);

    const worker = await startFold(settings);
    await caughtUp(worker, settings);
    const dlq = await readAll(settings, dlqTopic(settings.topic), 2);
    const [whole] = bySource(dlq, fitsAt);
    const [cut] = bySource(dlq, overAt);
    expect(str(whole!.headers[DLQ_HEADERS.detail])).toBe(`value is ${n} bytes; the limit is ${settings.maxValueBytes}`); // the copy the test sized
    expect(whole!.headers[DLQ_HEADERS.truncated]).toBeUndefined();
    expect(whole!.value!.equals(fits)).toBe(true);
    expect(str(cut!.headers[DLQ_HEADERS.truncated])).toBe("value");
    expect(str(cut!.headers[DLQ_HEADERS.originalValueBytes])).toBe(String(n + 1));
    expect(cut!.value).toBeNull();
  });

  it("dead letters that fit alone but not together (a source topic with a larger limit) go out in several sends, each whole", async () => {
    const settings = testSettings({ partitions: 1 });
    cleanups.push(() => dropPrefix(settings));
    await createSourceTopic(settings, 3 * BROKER_LIMIT);
    const send = await rawProducer(settings);
    const values = [randomBytes(600_000), randomBytes(600_000)];
    // One uncompressed batch of 1.2 MB, which this source topic takes: the fold gets both records in one batch.
    const producer = createKafka({ brokers: settings.brokers, clientId: "mufold-test-raw2" }).producer({ allowAutoTopicCreation: false });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    await producer.send({ topic: settings.topic, acks: -1, compression: CompressionTypes.None, messages: values.map((value) => ({ key: "pair", value, partition: 0 })) });
    const good = workload(82);
    await produce(settings, good.map(observationRecord));
    await send({ key: "after", value: "not json either", partition: 0 });

    const worker = await startFold(settings); // creates the DLQ with the broker's default limit
    expect(await topicConfig(settings, dlqTopic(settings.topic), "max.message.bytes")).toBe(String(BROKER_LIMIT));
    await caughtUp(worker, settings);
    expect(worker.counters.deadLettered).toBe(3);
    expect(comparePackets(await readAllPackets(settings), expectedPackets(good))).toEqual({ missing: [], extra: [], different: [] });
    const dlq = await readAll(settings, dlqTopic(settings.topic), 3);
    for (const [i, value] of values.entries()) {
      const [copy] = bySource(dlq, { partition: 0, offset: String(i) });
      expect(copy!.headers[DLQ_HEADERS.truncated]).toBeUndefined();
      expect(copy!.value!.equals(value)).toBe(true);
    }
  });
});
