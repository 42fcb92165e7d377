/** An idempotent, acks=all, zstd-compressing producer. */
import kafkajs from "kafkajs";
import type { Kafka, Producer } from "kafkajs";
import { Compression } from "./client.js";

const { Partitioners } = kafkajs;

export interface OutMessage {
  key: Buffer | string | null;
  value: Buffer | string | null;
  /** An array value is sent as that header repeated, in order (kafkajs). */
  headers?: Record<string, Buffer | string | (Buffer | string)[]>;
  partition?: number;
}

export class ReliableProducer {
  private constructor(private readonly producer: Producer) {}

  static async connect(kafka: Kafka): Promise<ReliableProducer> {
    // Idempotence needs one request in flight per broker in kafkajs; batching comes from sendBatch.
    // The default partitioner is Java-compatible murmur2 (librdkafka producers should use murmur2_random).
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    return new ReliableProducer(producer);
  }

  async send(topic: string, messages: readonly OutMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.producer.send({ topic, acks: -1, compression: Compression.zstd, messages: messages as OutMessage[] });
  }

  /** Send and return where each partition's part of the batch landed (first offset). */
  async sendWithOffsets(topic: string, messages: readonly OutMessage[]): Promise<{ partition: number; baseOffset: bigint }[]> {
    if (messages.length === 0) return [];
    const meta = await this.producer.send({ topic, acks: -1, compression: Compression.zstd, messages: messages as OutMessage[] });
    return meta.map((m) => ({ partition: m.partition, baseOffset: BigInt(m.baseOffset ?? "-1") }));
  }

  async disconnect(): Promise<void> {
    await this.producer.disconnect();
  }
}
