/** Dead-letter records: the original bytes and headers, plus where they came from and why. */
import type { DlqReason } from "../src/fold/record-decision.js";

export interface SourceRecord {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
}

export interface DlqMessage {
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer | string>;
}

export const DLQ_HEADERS = {
  reason: "mufold-reason",
  detail: "mufold-detail",
  topic: "mufold-source-topic",
  partition: "mufold-source-partition",
  offset: "mufold-source-offset",
} as const;

export function dlqTopic(topic: string): string {
  return `${topic}.dlq`;
}

export function dlqMessage(record: SourceRecord, reason: DlqReason, detail: string): DlqMessage {
  const headers: Record<string, Buffer | string> = {};
  for (const [name, value] of Object.entries(record.headers ?? {})) {
    if (value === undefined) continue;
    const one = Array.isArray(value) ? value[value.length - 1] : value;
    if (one !== undefined && !name.startsWith("mufold-")) headers[name] = one;
  }
  headers[DLQ_HEADERS.reason] = reason;
  headers[DLQ_HEADERS.detail] = detail.length > 500 ? detail.slice(0, 500) + "…" : detail;
  headers[DLQ_HEADERS.topic] = record.topic;
  headers[DLQ_HEADERS.partition] = String(record.partition);
  headers[DLQ_HEADERS.offset] = record.offset;
  return { key: record.key, value: record.value, headers };
}
