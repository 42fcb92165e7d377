/**
 * Sending observations to the topic the fold reads: one record per
 * observation, keyed by scope, its value the canonical JSON of the normalized
 * observation, with the schema headers; idempotent, acks=all, zstd
 * (ReliableProducer). `mufold produce` and `mufold simulate` send through here.
 * A broker outage is ridden out within the Kafka retry budget; past it, a step
 * fails with one line (typedProducerStep), never with kafkajs's own error.
 */
import { canonicalJson, observationToPy, validateObservation, type Observation } from "../core/index.js";
import { statingRefForm } from "../core/fields.js";
import { flat } from "../core/flat-string.js";
import { createKafka, kafkaClientSettings, type Kafka } from "../adapters/kafka/client.js";
import { ReliableProducer, typedProducerStep, type OutMessage } from "../adapters/kafka/producer.js";
import { ensureTopics, topicSpec } from "../adapters/kafka/topics.js";
import type { Settings } from "../config/settings.js";
import { dlqTopic } from "../fold/dead-letter.js";
import { OBSERVATION_SCHEMA_HEADER } from "../fold/record-decision.js";
import { scopeKey } from "../fold/scope-key.js";
import { settingsOf, type ClientOptions } from "./options.js";

/** The Kafka record of an observation: scope key, canonical JSON value, schema headers. */
export interface ObservationRecord {
  /** `agent_id/project_id/corpus_id/surface_id`. */
  key: string;
  /** Canonical JSON of the observation. */
  value: string;
  headers: { schema: typeof OBSERVATION_SCHEMA_HEADER; "content-type": "application/json" };
}

/** The record of a normalized observation (as `observation()` or `validateObservation` return it). */
export function observationRecord(obs: Observation): ObservationRecord {
  return {
    key: flat(scopeKey(obs.scope)),
    value: flat(canonicalJson(observationToPy(obs))),
    headers: { schema: OBSERVATION_SCHEMA_HEADER, "content-type": "application/json" },
  };
}

/** The records of observations validated again (a caller may have built or changed one by hand); throws ObservationValidationError. */
export function validatedRecords(observations: readonly Observation[]): ObservationRecord[] {
  try {
    return observations.map((o) => observationRecord(validateObservation(observationToPy(o))));
  } catch (err) {
    throw statingRefForm(err);
  }
}

const BATCH = 500;

/**
 * A connected sender: ensures the topic and its DLQ once, then sends in
 * batches. Each step that finds Kafka unreachable past the retry budget fails
 * with a KafkaUnavailableError (refused credentials: KafkaAuthError).
 * `kafka`: the client to use (default: one of its own from the settings,
 * whose retry budget it is anyway).
 */
export async function openSender(settings: Settings, kafka?: Kafka): Promise<{ send(messages: readonly OutMessage[]): Promise<void>; close(): Promise<void> }> {
  const client = kafkaClientSettings(settings, "-producer");
  const k = kafka ?? createKafka(client);
  const admin = k.admin();
  await typedProducerStep(client, () => admin.connect());
  try {
    await typedProducerStep(client, () => ensureTopics(admin, [topicSpec(settings, settings.topic), topicSpec(settings, dlqTopic(settings.topic))]));
  } finally {
    await admin.disconnect();
  }
  const producer = await typedProducerStep(client, () => ReliableProducer.connect(k));
  return {
    send: async (messages) => {
      for (let i = 0; i < messages.length; i += BATCH) await typedProducerStep(client, () => producer.send(settings.topic, messages.slice(i, i + BATCH)));
    },
    close: () => producer.disconnect(),
  };
}

/**
 * Publishes observations to the fold's topic.
 *
 * ```ts
 * const producer = await ObservationProducer.connect({ brokers: ["127.0.0.1:9092"], topic: "memory-utility-observations" });
 * await producer.publish([observation({ receipt, outcome, context, proposal, createdAt })]);
 * await producer.close();
 * ```
 */
export class ObservationProducer {
  private constructor(
    private readonly sender: Awaited<ReturnType<typeof openSender>>,
    /** The topic it sends to. */
    readonly topic: string,
  ) {}

  /**
   * Connect to Kafka and create the topic and its DLQ if they are missing
   * (needs the right to create topics then). A broker outage is ridden out
   * within the Kafka retry budget (MUFOLD_KAFKA_RETRIES and its backoff
   * settings, about 21 s by default); past it this throws a retriable
   * MufoldError naming the brokers and how long they were unreachable, and
   * refused SASL credentials a non-retriable one.
   */
  static async connect(options: ClientOptions = {}): Promise<ObservationProducer> {
    const settings = settingsOf(options);
    return new ObservationProducer(await openSender(settings), settings.topic);
  }

  /**
   * Validate every observation, then send them all (acks=all). An invalid one
   * throws ObservationValidationError before anything of the call is sent (a
   * malformed reference's message states the accepted form).
   * Kafka unreachable past the retry budget: as `connect`.
   */
  async publish(observations: readonly Observation[]): Promise<void> {
    await this.sender.send(validatedRecords(observations));
  }

  /** Disconnect from Kafka once what was sent is acknowledged; the producer cannot publish after it. */
  async close(): Promise<void> {
    await this.sender.close();
  }
}
