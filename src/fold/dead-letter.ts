/**
 * Dead-letter records: the original bytes and headers, plus where they came
 * from and why — cut down, when the whole copy would not fit in the DLQ
 * topic's record batch limit, to what fits and a pointer to the original
 * (source topic, partition, offset; the source topic keeps every record).
 */
import { MufoldError } from "../errors.js";
import type { DlqReason } from "./record-decision.js";
import type { HeaderValue, SourceRecord } from "./source-record.js";

export interface DlqMessage {
  key: Buffer | null;
  value: Buffer | null;
  /** A header the source record repeats is an array, in the record's order (kafkajs writes one header per element). */
  headers: Record<string, HeaderValue | HeaderValue[]>;
}

export const DLQ_HEADERS = {
  reason: "mufold-reason",
  detail: "mufold-detail",
  topic: "mufold-source-topic",
  partition: "mufold-source-partition",
  offset: "mufold-source-offset",
  /** What was left out to fit, in the order it was dropped: `value`, `headers`, `key` (comma-separated). */
  truncated: "mufold-truncated",
  originalValueBytes: "mufold-original-value-bytes",
  originalHeaderCount: "mufold-original-header-count",
  originalKeyBytes: "mufold-original-key-bytes",
} as const;

export function dlqTopic(topic: string): string {
  return `${topic}.dlq`;
}

// ---- Sizes, as the broker counts them -------------------------------------------------------

/**
 * A v2 record batch's fixed header: baseOffset 8, batchLength 4, partitionLeaderEpoch 4,
 * magic 1, crc 4, attributes 2, lastOffsetDelta 4, firstTimestamp 8, maxTimestamp 8,
 * producerId 8, producerEpoch 2, baseSequence 4, record count 4. The broker compares this
 * plus the (compressed) records with max.message.bytes.
 */
export const RECORD_BATCH_OVERHEAD = 61;
/**
 * Kept free on top of the exact count below. The count uses the widest varints for the
 * per-record deltas and zstd's documented worst case, so nothing is known to need it; it
 * is there in case the count misses an encoding detail (checked against the broker by
 * test/integration/dlq-limits.int.spec.ts, not proven), and costs 0.1% of a 1 MiB limit.
 */
export const DLQ_SLACK_BYTES = 1024;
/** Below this many record bytes a pointer may not fit (its detail alone can take 1.5 KB of UTF-8): refuse at start. */
export const MIN_DLQ_BUDGET = 4096;
/** kafkajs writes timestampDelta as a varlong (at most 10 bytes) and offsetDelta as a varint (at most 5). */
const MAX_TIMESTAMP_DELTA_BYTES = 10;
const MAX_OFFSET_DELTA_BYTES = 5;

/** Bytes of Kafka's zigzag varint of n. */
export function varintBytes(n: number): number {
  let z = n >= 0 ? 2 * n : -2 * n - 1;
  let bytes = 1;
  while (z >= 128) {
    z = Math.floor(z / 128);
    bytes++;
  }
  return bytes;
}

const byteLength = (v: HeaderValue | null): number => (v === null ? -1 : typeof v === "string" ? Buffer.byteLength(v) : v.length);
/** A length-prefixed field (null is length -1 and no bytes). */
const fieldBytes = (length: number): number => (length < 0 ? varintBytes(-1) : varintBytes(length) + length);

function headerList(headers: DlqMessage["headers"]): [string, HeaderValue][] {
  return Object.entries(headers).flatMap(([name, v]) => (Array.isArray(v) ? v.map((one): [string, HeaderValue] => [name, one]) : [[name, v] as [string, HeaderValue]]));
}

/** The encoded size of one record of a v2 batch, before compression (an upper bound: the deltas at their widest). */
export function recordBytes(message: DlqMessage): number {
  const headers = headerList(message.headers);
  let body = 1 + MAX_TIMESTAMP_DELTA_BYTES + MAX_OFFSET_DELTA_BYTES + fieldBytes(byteLength(message.key)) + fieldBytes(byteLength(message.value));
  body += varintBytes(headers.length);
  for (const [name, value] of headers) body += fieldBytes(Buffer.byteLength(name)) + fieldBytes(byteLength(value));
  return varintBytes(body) + body;
}

/** ZSTD_compressBound (zstd.h): the most a single-pass zstd compression of n bytes can produce. */
export function zstdBound(n: number): number {
  return n + Math.floor(n / 256) + (n < 128 * 1024 ? Math.floor((128 * 1024 - n) / 2048) : 0);
}

/**
 * The most record bytes (sum of recordBytes) one DLQ batch may carry so that, even
 * compressed with zstd at its worst, 61 + compressed records + the slack stay within
 * max.message.bytes.
 */
export function dlqBudget(maxMessageBytes: number): number {
  const room = maxMessageBytes - RECORD_BATCH_OVERHEAD - DLQ_SLACK_BYTES;
  if (room <= 0) return 0;
  let lo = 0;
  let hi = room; // zstdBound(r) >= r
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (zstdBound(mid) <= room) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// ---- Building dead letters ------------------------------------------------------------------

/**
 * The DLQ copy of a record: its key, value and every header value (a repeated header keeps
 * all its values, in order; `mufold-*` headers of the source are not copied, so a producer
 * cannot forge a pointer), then reason, detail and source headers. When the copy's record
 * bytes would exceed `budget`, it drops the value, then the original headers, then cuts the
 * key, until it fits, and says so in `mufold-truncated` and `mufold-original-*`.
 */
export function dlqMessage(record: SourceRecord, reason: DlqReason, detail: string, budget = Number.POSITIVE_INFINITY): DlqMessage {
  const original: DlqMessage["headers"] = {};
  let originalCount = 0;
  for (const [name, value] of Object.entries(record.headers ?? {})) {
    if (value === undefined || name.startsWith("mufold-")) continue;
    const values = Array.isArray(value) ? value.filter((v) => v !== undefined) : [value];
    if (values.length === 0) continue;
    original[name] = values.length === 1 ? values[0]! : values;
    originalCount += values.length;
  }
  const pointer: Record<string, string> = {
    [DLQ_HEADERS.reason]: reason,
    [DLQ_HEADERS.detail]: detail.length > 500 ? detail.slice(0, 500) + "…" : detail,
    [DLQ_HEADERS.topic]: record.topic,
    [DLQ_HEADERS.partition]: String(record.partition),
    [DLQ_HEADERS.offset]: record.offset,
  };
  const message: DlqMessage = { key: record.key, value: record.value, headers: { ...original, ...pointer } };
  if (recordBytes(message) <= budget) return message;

  const dropped: string[] = [];
  const rebuild = (extra: Record<string, string>, keepOriginal: boolean) => {
    Object.assign(pointer, extra);
    pointer[DLQ_HEADERS.truncated] = dropped.join(",");
    message.headers = keepOriginal ? { ...original, ...pointer } : { ...pointer };
  };
  if (record.value !== null && record.value.length > 0) {
    dropped.push("value");
    message.value = null;
    rebuild({ [DLQ_HEADERS.originalValueBytes]: String(record.value.length) }, true);
    if (recordBytes(message) <= budget) return message;
  }
  if (originalCount > 0) {
    dropped.push("headers");
    rebuild({ [DLQ_HEADERS.originalHeaderCount]: String(originalCount) }, false);
    if (recordBytes(message) <= budget) return message;
  }
  if (record.key !== null && record.key.length > 0) {
    dropped.push("key");
    rebuild({ [DLQ_HEADERS.originalKeyBytes]: String(record.key.length) }, false);
    // Cutting n bytes shrinks the record by at least n; the length varints may shrink too,
    // which frees a few bytes that the loop gives back to the key.
    let keep = Math.max(0, record.key.length - (recordBytes(message) - budget));
    const sized = (n: number) => recordBytes({ ...message, key: record.key!.subarray(0, n) });
    while (keep < record.key.length && sized(keep + 1) <= budget) keep++;
    message.key = record.key.subarray(0, keep);
    if (recordBytes(message) <= budget) return message;
  }
  throw new MufoldError(`a dead letter of ${record.topic}/${record.partition}@${record.offset} needs ${recordBytes(message)} bytes even cut down; the DLQ budget is ${budget}`);
}

/**
 * The dead letters of one batch, split into consecutive groups that each fit in one record
 * batch: kafkajs puts all messages of a send that go to one partition in a single batch, and
 * the broker checks the whole batch against max.message.bytes. Each message must already fit
 * alone (dlqMessage with the same budget).
 */
export function dlqSendGroups(messages: readonly DlqMessage[], budget: number): DlqMessage[][] {
  const groups: DlqMessage[][] = [];
  let group: DlqMessage[] = [];
  let bytes = 0;
  for (const m of messages) {
    const size = recordBytes(m);
    if (group.length > 0 && bytes + size > budget) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
    group.push(m);
    bytes += size;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}
