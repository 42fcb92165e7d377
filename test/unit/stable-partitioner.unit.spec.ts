/**
 * The producer's partitioner picks a message's partition once, so a retried
 * idempotent send resends the same batches. Driven through kafkajs's own
 * send loop (sendMessages) against a broker that keeps Kafka's sequence rule:
 * a batch is a duplicate when its first and last sequence match one already
 * written, the next batch when it starts right after, out of order otherwise.
 */
import { createRequire } from "node:module";
import kafkajs from "kafkajs";
import type { ICustomPartitioner, PartitionerArgs } from "kafkajs";
import { describe, expect, it } from "vitest";
import { createStablePartitioner } from "../../src/adapters/kafka/partitioner.js";

const require = createRequire(import.meta.url);
type SendMessages = (options: object) => (request: object) => Promise<{ partition: number; baseOffset: string }[]>;
const sendMessages = require("kafkajs/src/producer/sendMessages.js") as SendMessages;
const { KafkaJSProtocolError } = require("kafkajs/src/errors.js") as { KafkaJSProtocolError: new (e: object) => Error };

const TOPIC = "t";
const PARTITIONS = 4;
const partitionMetadata = Array.from({ length: PARTITIONS }, (_, partitionId) => ({ partitionErrorCode: 0, partitionId, leader: 1, replicas: [1], isr: [1] }));

interface Batch {
  partition: number;
  firstSequence: number;
  messages: { key: string | null; value: string }[];
}

/** One broker leading every partition; its first produce is written, then answered with a retriable error. */
function sequenceCheckingBroker() {
  const log = new Map<number, { first: number; last: number; values: string[] }[]>();
  let produces = 0;
  return {
    nodeId: 1,
    log,
    produce({ topicData }: { topicData: { topic: string; partitions: Batch[] }[] }) {
      produces += 1;
      const partitions = topicData[0]!.partitions.map((batch) => {
        const written = log.get(batch.partition) ?? [];
        const last = written.at(-1)?.last ?? -1;
        const end = batch.firstSequence + batch.messages.length - 1;
        const duplicate = written.find((w) => w.first === batch.firstSequence && w.last === end);
        if (duplicate !== undefined) return { partition: batch.partition, errorCode: 0, baseOffset: "0" };
        if (batch.firstSequence !== last + 1) {
          throw new KafkaJSProtocolError({ type: "OUT_OF_ORDER_SEQUENCE_NUMBER", code: 45, retriable: false, message: "The broker received an out of order sequence number" });
        }
        log.set(batch.partition, [...written, { first: batch.firstSequence, last: end, values: batch.messages.map((m) => m.value) }]);
        return { partition: batch.partition, errorCode: 0, baseOffset: String(batch.firstSequence) };
      });
      // The request was written, but the answer says to retry (a timeout or another partition's error looks the same).
      if (produces === 1) throw new KafkaJSProtocolError({ type: "REQUEST_TIMED_OUT", code: 7, retriable: true, message: "request timed out" });
      return { topics: [{ topicName: TOPIC, partitions }] };
    },
  };
}

async function sendWithOneRetry(createPartitioner: ICustomPartitioner, messages: { key: string | null; value: string }[]) {
  const broker = sequenceCheckingBroker();
  const sequences = new Map<number, number>();
  const eosManager = {
    isTransactional: () => false,
    getProducerId: () => 7,
    getProducerEpoch: () => 0,
    getSequence: (_topic: string, partition: number) => sequences.get(partition) ?? 0,
    updateSequence: (_topic: string, partition: number, increment: number) => sequences.set(partition, (sequences.get(partition) ?? 0) + increment),
    acquireBrokerLock: async () => {},
    releaseBrokerLock: async () => {},
  };
  const cluster = {
    refreshMetadataIfNecessary: async () => {},
    refreshMetadata: async () => {},
    addMultipleTargetTopics: async () => {},
    isConnected: () => true,
    findTopicPartitionMetadata: () => partitionMetadata,
    findLeaderForPartitions: (_topic: string, partitions: string[]) => ({ 1: partitions.map(Number) }),
    findBroker: async () => broker,
  };
  const retrier = async (attempt: (bail: (e: unknown) => never, retryCount: number) => Promise<unknown>) => {
    const bail = (e: unknown): never => {
      throw e;
    };
    for (let retryCount = 0; ; retryCount += 1) {
      try {
        return await attempt(bail, retryCount);
      } catch (err) {
        if (retryCount >= 3 || !(err as { retriable?: boolean }).retriable) throw err;
      }
    }
  };
  const logger = { debug() {}, info() {}, warn() {}, error() {} };
  const send = sendMessages({ logger, cluster, partitioner: createPartitioner(), eosManager, retrier });
  await send({ acks: -1, timeout: 30_000, topicMessages: [{ topic: TOPIC, messages }] });
  return broker.log;
}

const keyless = Array.from({ length: 10 }, (_, i) => ({ key: null, value: `v${i}` }));

describe("the producer's partitioner", () => {
  it("kafkajs's default partitioner, asked again on the retry, moves keyless messages: the broker answers out of order", async () => {
    await expect(sendWithOneRetry(kafkajs.Partitioners.DefaultPartitioner, keyless)).rejects.toThrow(/out of order sequence number/);
  });

  it("the stable one resends the same batches: each message is written once, the retry is a duplicate", async () => {
    const log = await sendWithOneRetry(createStablePartitioner(), keyless);
    const written = [...log.values()].flatMap((batches) => batches.flatMap((b) => b.values));
    expect(written.sort()).toEqual(keyless.map((m) => m.value).sort());
    expect([...log.values()].every((batches) => batches.length === 1)).toBe(true);
  });

  it("keeps the default's choices: murmur2 for a key, a given partition as given, keyless spread over the partitions", () => {
    const stable = createStablePartitioner()();
    const reference = kafkajs.Partitioners.DefaultPartitioner();
    const args = (message: PartitionerArgs["message"]): PartitionerArgs => ({ topic: TOPIC, partitionMetadata, message });
    for (const key of ["a", "agent:1/p/c/s", "zz"]) expect(stable(args({ key, value: "x" }))).toBe(reference(args({ key, value: "x" })));
    expect(stable(args({ key: "a", value: "x", partition: 3 }))).toBe(3);
    const spread = new Set(keyless.map((m) => stable(args({ ...m }))));
    expect(spread.size).toBe(PARTITIONS);
  });

  it("chooses afresh for another topic, or when the remembered partition no longer exists", () => {
    const stable = createStablePartitioner()();
    // Round robin: of two keyless messages in a row, one lands past partition 0.
    const [message] = [{ key: null, value: "x" }, { key: null, value: "y" }].filter((m) => stable({ topic: TOPIC, partitionMetadata, message: m }) > 0);
    const first = stable({ topic: TOPIC, partitionMetadata, message: message! });
    expect(first).toBeGreaterThan(0);
    expect(stable({ topic: TOPIC, partitionMetadata, message: message! })).toBe(first);
    const one = [{ partitionErrorCode: 0, partitionId: 0, leader: 1, replicas: [1], isr: [1] }];
    expect(stable({ topic: TOPIC, partitionMetadata: one, message: message! })).toBe(0);
    const other = { key: null, value: "z" };
    stable({ topic: TOPIC, partitionMetadata, message: other });
    expect(stable({ topic: "other", partitionMetadata: one, message: other })).toBe(0);
  });
});
