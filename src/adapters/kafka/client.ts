/**
 * The only module that knows kafkajs exists (with its siblings in this
 * folder). kafkajs is unmaintained since 2023; keeping it behind this adapter
 * keeps a switch of client cheap.
 */
import zstd from "@mongodb-js/zstd";
import kafkajs from "kafkajs";
import type { Admin, Consumer, Kafka, KafkaConfig, Producer, SASLOptions } from "kafkajs";
import type { ConnectionOptions } from "node:tls";
import { MufoldError } from "../../errors.js";

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
  /** true: TLS with Node's trusted CAs; an object: tls.connect options (e.g. `{ ca: [pem] }`). */
  ssl?: boolean | ConnectionOptions;
  sasl?: SASLOptions;
  /** kafkajs log level: 0 nothing, 1 error, 2 warn, 4 info, 5 debug. */
  logLevel?: number;
}

/** The security part of the settings (config.ts's Settings has it all). */
export interface KafkaSecuritySettings {
  brokers: string[];
  clientId: string;
  kafkaTls: boolean;
  kafkaTlsCa: { pem: string } | undefined;
  kafkaSaslMechanism: "plain" | "scram-sha-256" | "scram-sha-512" | undefined;
  kafkaSaslUsername: string | undefined;
  kafkaSaslPassword: { reveal(): string } | undefined;
}

/**
 * The client settings of one mufold component: `createKafka(kafkaClientSettings(settings, "-fold"))`.
 * The client id is the configured one plus `suffix`. The SASL password is a
 * non-enumerable getter on the `sasl` object: kafkajs reads it when it
 * authenticates, while JSON, logs and object spreads of the config never see it.
 */
export function kafkaClientSettings(settings: KafkaSecuritySettings, suffix = ""): KafkaSettings {
  const out: KafkaSettings = { brokers: settings.brokers, clientId: `${settings.clientId}${suffix}` };
  if (settings.kafkaTlsCa !== undefined && !settings.kafkaTls) throw new MufoldError("a Kafka TLS CA was given without TLS");
  if (settings.kafkaTls) out.ssl = settings.kafkaTlsCa === undefined ? true : { ca: [settings.kafkaTlsCa.pem] };
  const mechanism = settings.kafkaSaslMechanism;
  if (mechanism !== undefined) {
    const username = settings.kafkaSaslUsername;
    const secret = settings.kafkaSaslPassword;
    if (username === undefined || secret === undefined) throw new MufoldError(`Kafka SASL ${mechanism} needs a username and a password`);
    const sasl = { mechanism, username } as SASLOptions;
    Object.defineProperty(sasl, "password", { get: () => secret.reveal(), enumerable: false });
    out.sasl = sasl;
  }
  return out;
}

/** The kafkajs configuration of a client (what createKafka passes to `new Kafka`). */
export function kafkaConfig(settings: KafkaSettings): KafkaConfig {
  const config: KafkaConfig = {
    clientId: settings.clientId,
    brokers: settings.brokers,
    logLevel: settings.logLevel ?? logLevel.NOTHING,
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5_000 },
  };
  if (settings.ssl) config.ssl = settings.ssl;
  if (settings.sasl) config.sasl = settings.sasl;
  return config;
}

export function createKafka(settings: KafkaSettings): Kafka {
  registerZstd();
  return new KafkaClass(kafkaConfig(settings));
}

export const Compression = { zstd: CompressionTypes.ZSTD } as const;
export type { Admin, Consumer, Kafka, Producer };
