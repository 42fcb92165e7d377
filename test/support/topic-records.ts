/**
 * Every record value on a topic, from the first offset to the end offsets as
 * they are when called: what a test's program published, read back as the
 * fold reads it (every codec registered).
 */
import { randomBytes } from "node:crypto";
import { createKafka, kafkaClientSettings } from "../../src/adapters/kafka/client.js";
import type { Settings } from "../../src/config/settings.js";

export async function topicValues(settings: Settings, topic: string = settings.topic, timeoutMs = 60_000): Promise<Buffer[]> {
  return (await topicRecords(settings, topic, timeoutMs)).map((r) => r.value);
}

/** A record value with where it is in the log. */
export interface TopicRecord {
  partition: number;
  offset: bigint;
  value: Buffer;
  /** The record's Kafka timestamp (ms since the epoch), as the broker returns it. */
  timestamp: number;
}

/** Every record value on a topic with its partition and offset, each partition in offset order. */
export async function topicRecords(settings: Settings, topic: string = settings.topic, timeoutMs = 60_000): Promise<TopicRecord[]> {
  const kafka = createKafka(kafkaClientSettings(settings, "-test-records"));
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map<number, bigint>();
  try {
    for (const p of await admin.fetchTopicOffsets(topic)) if (BigInt(p.high) > BigInt(p.low)) ends.set(p.partition, BigInt(p.high));
  } finally {
    await admin.disconnect();
  }
  const values: TopicRecord[] = [];
  if (ends.size === 0) return values;
  const consumer = kafka.consumer({ groupId: `${settings.group}.records.${randomBytes(4).toString("hex")}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    // Done when every partition's position reached its end offset (control records count: their offsets are skipped).
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${topic}: the records up to ${JSON.stringify(Object.fromEntries([...ends].map(([p, o]) => [p, String(o)])))} did not all arrive`)), timeoutMs);
      void consumer
        .run({
          eachBatch: async ({ batch, resolveOffset }) => {
            for (const message of batch.messages) {
              if (message.value !== null) values.push({ partition: batch.partition, offset: BigInt(message.offset), value: message.value, timestamp: Number(message.timestamp) });
              resolveOffset(message.offset);
            }
            const end = ends.get(batch.partition);
            if (end !== undefined && BigInt(batch.lastOffset()) + 1n >= end) ends.delete(batch.partition);
            if (ends.size === 0) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return values;
}
