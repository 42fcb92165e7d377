/**
 * `mufold produce`: validate observations (JSON array or JSON lines) with the
 * contract core and send the valid ones; report each invalid one with its
 * reason. `--raw` sends values as given, unvalidated (to exercise the DLQ).
 */
import { ObservationValidationError, PyJsonDecodeError, parsePyJson, validateObservation, type PyValue } from "../src/core/index.js";
import type { OutMessage } from "../src/adapters/kafka/producer.js";
import { observationRecord, openSender } from "../src/client/producer.js";
import type { Settings } from "../src/config/settings.js";

export { openSender };

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
      messages.push(observationRecord(validateObservation(value)));
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

export async function produce(settings: Settings, messages: readonly OutMessage[]): Promise<number> {
  const sender = await openSender(settings);
  try {
    await sender.send(messages);
  } finally {
    await sender.close();
  }
  return messages.length;
}
