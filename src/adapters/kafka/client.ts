/**
 * The only module that knows kafkajs exists (with its siblings in this
 * folder). kafkajs is unmaintained since 2023; keeping it behind this adapter
 * keeps a switch of client cheap.
 */
import zstd from "@mongodb-js/zstd";
import kafkajs from "kafkajs";
import type { Admin, Consumer, Kafka, KafkaConfig, Producer, SASLOptions } from "kafkajs";

const { Kafka: KafkaClass, CompressionCodecs, CompressionTypes, logLevel } = kafkajs;

let zstdRegistered = false;

/** Register a zstd codec on a maintained binding that installs from the registry (prebuilt N-API). */
export function registerZstd(): void {
  if (zstdRegistered) return;
  CompressionCodecs[CompressionTypes.ZSTD] = () => ({
    compress: async (encoder: { buffer: Buffer }) => zstd.compress(encoder.buffer),
    decompress: async (buffer: Buffer) => zstd.decompress(buffer),
  });
  zstdRegistered = true;
}

export interface KafkaSettings {
  brokers: string[];
  clientId: string;
  ssl?: boolean;
  sasl?: SASLOptions;
  /** kafkajs log level: 0 nothing, 1 error, 2 warn, 4 info, 5 debug. */
  logLevel?: number;
}

export function createKafka(settings: KafkaSettings): Kafka {
  registerZstd();
  const config: KafkaConfig = {
    clientId: settings.clientId,
    brokers: settings.brokers,
    logLevel: settings.logLevel ?? logLevel.NOTHING,
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5_000 },
  };
  if (settings.ssl) config.ssl = true;
  if (settings.sasl) config.sasl = settings.sasl;
  return new KafkaClass(config);
}

export const Compression = { zstd: CompressionTypes.ZSTD } as const;
export type { Admin, Consumer, Kafka, Producer };
