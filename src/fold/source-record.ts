/**
 * What the engine needs of a log record: the port the Kafka adapter
 * (src/adapters/kafka/consumer.ts) produces records for, and the engine
 * (batch-router.ts, dead-letter.ts) and the applications consume. A module of
 * its own, so naming a record takes no dependency on the dead letters.
 */

/** A header's value as the Kafka client gives it (bytes, or a string the producer wrote). */
export type HeaderValue = Buffer | string;

export interface SourceRecord {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, HeaderValue | HeaderValue[] | undefined>;
  /** The record's timestamp (ms since the epoch, as Kafka gives it); part of a partition's origin fingerprint. */
  timestamp?: string;
}
