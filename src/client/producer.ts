/**
 * Sending observations to the topic the fold reads: one record per
 * observation, keyed by scope, its value the canonical JSON of the normalized
 * observation, with the schema headers; idempotent, acks=all, zstd
 * (ReliableProducer). `mufold produce` and `mufold simulate` send through here.
 */
import { canonicalJson, observationToPy, validateObservation, type Observation } from "../core/index.js";
import { createKafka, kafkaClientSettings } from "../adapters/kafka/client.js";
import { ReliableProducer, type OutMessage } from "../adapters/kafka/producer.js";
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
    key: scopeKey(obs.scope),
    value: canonicalJson(observationToPy(obs)),
    headers: { schema: OBSERVATION_SCHEMA_HEADER, "content-type": "application/json" },
  };
}

const BATCH = 500;

/** A connected sender: ensures the topic and its DLQ once, then sends in batches. */
export async function openSender(settings: Settings): Promise<{ send(messages: readonly OutMessage[]): Promise<void>; close(): Promise<void> }> {
  const kafka = createKafka(kafkaClientSettings(settings, "-producer"));
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensureTopics(admin, [topicSpec(settings, settings.topic), topicSpec(settings, dlqTopic(settings.topic))]);
  } finally {
    await admin.disconnect();
  }
  const producer = await ReliableProducer.connect(kafka);
  return {
    send: async (messages) => {
      for (let i = 0; i < messages.length; i += BATCH) await producer.send(settings.topic, messages.slice(i, i + BATCH));
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

  /** Connect to Kafka and create the topic and its DLQ if they are missing (needs the right to create topics then). */
  static async connect(options: ClientOptions = {}): Promise<ObservationProducer> {
    const settings = settingsOf(options);
    return new ObservationProducer(await openSender(settings), settings.topic);
  }

  /**
   * Validate every observation, then send them all (acks=all). An invalid one
   * throws ObservationValidationError before anything of the call is sent.
   */
  async publish(observations: readonly Observation[]): Promise<void> {
    const records = observations.map((o) => observationRecord(validateObservation(observationToPy(o))));
    await this.sender.send(records);
  }

  async close(): Promise<void> {
    await this.sender.close();
  }
}
