/**
 * `mufold produce`: validate observations (JSON array or JSON lines) with the
 * contract core and send the valid ones; report each invalid one with its
 * reason. `--raw` sends values as given, unvalidated (to exercise the DLQ).
 */
import { ObservationValidationError, PyJsonDecodeError, parsePyJson, validateObservation, type PyValue } from "../src/core/index.js";
import { createKafka, kafkaClientSettings } from "../src/adapters/kafka/client.js";
import { ReliableProducer, type OutMessage } from "../src/adapters/kafka/producer.js";
import { ensureTopics, topicSpec } from "../src/adapters/kafka/topics.js";
import type { Settings } from "../src/config/settings.js";
import { dlqTopic } from "../src/fold/dead-letter.js";
import { observationMessage } from "./observation-message.js";

export interface ProduceReport {
  sent: number;
  invalid: { index: number; reason: string; error: string }[];
}

/** Items of a JSON array document, or of JSON lines. */
export function splitInput(text: string): { index: number; text: string }[] {
  const trimmed = text.trimStart();
  if (trimmed.startsWith("[")) {
    const doc = parsePyJson(text);
    if (Array.isArray(doc)) return doc.map((item, index) => ({ index, text: JSON.stringify(item ?? null) }));
  }
  return text
    .split("\n")
    .map((line, index) => ({ index, text: line }))
    .filter((l) => l.text.trim() !== "");
}

export function prepareMessages(text: string, raw: boolean): { messages: OutMessage[]; invalid: ProduceReport["invalid"] } {
  const messages: OutMessage[] = [];
  const invalid: ProduceReport["invalid"] = [];
  if (raw) {
    for (const line of text.split("\n")) if (line.trim() !== "") messages.push({ key: null, value: line });
    return { messages, invalid };
  }
  const items = text.trimStart().startsWith("[") ? (parsePyJson(text) as PyValue[]).map((v, index) => ({ index, value: v })) : splitInput(text).map((l) => ({ index: l.index, value: safeParse(l.text) }));
  for (const { index, value } of items) {
    if (value instanceof Error) {
      invalid.push({ index, reason: "value_not_json", error: value.message });
      continue;
    }
    try {
      messages.push(observationMessage(validateObservation(value)));
    } catch (err) {
      if (!(err instanceof ObservationValidationError)) throw err;
      invalid.push({ index, reason: err.reasonCode, error: err.message });
    }
  }
  return { messages, invalid };
}

function safeParse(text: string): PyValue | Error {
  try {
    return parsePyJson(text);
  } catch (err) {
    if (err instanceof PyJsonDecodeError || err instanceof Error) return err;
    throw err;
  }
}

/** A connected sender: ensures the topics once, then sends in batches. */
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
      const batchSize = 500;
      for (let i = 0; i < messages.length; i += batchSize) await producer.send(settings.topic, messages.slice(i, i + batchSize));
    },
    close: () => producer.disconnect(),
  };
}

export async function produce(settings: Settings, messages: readonly OutMessage[]): Promise<number> {
  const sender = await openSender(settings);
  try {
    await sender.send(messages);
  } finally {
    await sender.close();
  }
  return messages.length;
}
