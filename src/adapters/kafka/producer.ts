/**
 * An idempotent, acks=all, zstd-compressing producer, and what a producing
 * application sees when a step of it fails (typedProducerStep).
 */
import type { Kafka, Producer } from "kafkajs";
import { describeSetting } from "../../config/settings.js";
import { MufoldError } from "../../errors.js";
import { Compression, KafkaAuthError, KafkaUnavailableError, type KafkaSettings } from "./client.js";
import { isBrokerUnreachable, isSaslAuthFailure, kafkaFailureText } from "./errors.js";
import { createStablePartitioner } from "./partitioner.js";
import { installRecordEncoder } from "./record-encoder.js";

// Before any producer exists: kafkajs's produce request takes its record encoder when first loaded (record-encoder.ts).
installRecordEncoder();

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
    // The default partitioner is Java-compatible murmur2 (librdkafka producers should use murmur2_random),
    // asked once per message so that a retried batch is the same batch (partitioner.ts).
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: createStablePartitioner(),
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

/**
 * A failed producer step as a typed error: refused credentials are a
 * KafkaAuthError; a broker unreachable until kafkajs's retries (the client's
 * retry budget) ran out is a retriable KafkaUnavailableError saying for how
 * long, at which brokers and why; anything else is returned unchanged.
 */
export function kafkaProducerFailure(error: unknown, client: Pick<KafkaSettings, "brokers" | "retry">, elapsedMs: number): unknown {
  if (error instanceof MufoldError) return error;
  const endpoint = client.brokers.join(",");
  if (isSaslAuthFailure(error)) return new KafkaAuthError(`Kafka at ${endpoint} refused the credentials: ${kafkaFailureText(error)}`, { cause: error });
  if (!isBrokerUnreachable(error)) return error;
  const budget =
    client.retry === undefined
      ? "its retries spent"
      : `${client.retry.retries} retries spent (${describeSetting("kafkaRetries")}, backoff ${client.retry.initialRetryTime} ms up to ${client.retry.maxRetryTime} ms)`;
  return new KafkaUnavailableError(`Kafka at ${endpoint} was unreachable for ${(elapsedMs / 1000).toFixed(1)} s, ${budget}: ${kafkaFailureText(error)}`, { cause: error });
}

/**
 * Run one step of a producing application (connect, create topics, send).
 * kafkajs rides out an unreachable broker itself, retrying within the
 * client's budget (the kafkaRetries, kafkaInitialRetryTimeMs and
 * kafkaMaxRetryTimeMs settings); past it, the step fails with
 * kafkaProducerFailure's one-line typed error instead of kafkajs's own.
 */
export async function typedProducerStep<T>(client: Pick<KafkaSettings, "brokers" | "retry">, step: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await step();
  } catch (err) {
    throw kafkaProducerFailure(err, client, Date.now() - started);
  }
}
