/**
 * The only module that knows kafkajs exists (with its siblings in this
 * folder). kafkajs is unmaintained since 2023; keeping it behind this adapter
 * keeps a switch of client cheap.
 */
import kafkajs from "kafkajs";
import type { Admin, Kafka, KafkaConfig, SASLOptions } from "kafkajs";
import type { ConnectionOptions } from "node:tls";
import { settingDefault } from "../../config/settings.js";
import { MufoldError } from "../../errors.js";
import { registerCodecs } from "./codecs.js";
import { isSaslAuthFailure } from "./errors.js";
import "./timeout-patch.js";

const { Kafka: KafkaClass, CompressionTypes, logLevel } = kafkajs;

/** Register every codec (codecs.ts), zstd included; the name is kept for its existing callers. */
export function registerZstd(): void {
  registerCodecs();
}

export interface KafkaSettings {
  brokers: string[];
  clientId: string;
  /** true: TLS with Node's trusted CAs; an object: tls.connect options (e.g. `{ ca: [pem] }`). */
  ssl?: boolean | ConnectionOptions;
  sasl?: SASLOptions;
  /** kafkajs log level: 0 nothing, 1 error, 2 warn, 4 info, 5 debug. */
  logLevel?: number;
  /** kafkajs retry (default: the kafkaRetries, kafkaInitialRetryTimeMs and kafkaMaxRetryTimeMs settings' defaults). */
  retry?: { retries: number; initialRetryTime: number; maxRetryTime: number };
  /** kafkajs metadataMaxAge of every consumer and producer of the client (default: the metadataMaxAgeSeconds setting's). */
  metadataMaxAgeMs?: number;
}

/** The security part of the settings (src/config/settings.ts's Settings has it all). */
export interface KafkaSecuritySettings {
  brokers: string[];
  clientId: string;
  kafkaTls: boolean;
  kafkaTlsCa: { pem: string } | undefined;
  kafkaSaslMechanism: "plain" | "scram-sha-256" | "scram-sha-512" | undefined;
  kafkaSaslUsername: string | undefined;
  kafkaSaslPassword: { reveal(): string } | undefined;
  /** The retry budget settings (src/config/settings.ts); absent ones take their defaults. */
  kafkaRetries?: number;
  kafkaInitialRetryTimeMs?: number;
  kafkaMaxRetryTimeMs?: number;
  /** The metadataMaxAgeSeconds setting; absent, its default. */
  metadataMaxAgeSeconds?: number;
}

/**
 * The client settings of one mufold component: `createKafka(kafkaClientSettings(settings, "-fold"))`.
 * The client id is the configured one plus `suffix`. The SASL password is a
 * non-enumerable getter on the `sasl` object: kafkajs reads it when it
 * authenticates, while JSON, logs and object spreads of the config never see it.
 */
export function kafkaClientSettings(settings: KafkaSecuritySettings, suffix = ""): KafkaSettings {
  const out: KafkaSettings = {
    brokers: settings.brokers,
    clientId: `${settings.clientId}${suffix}`,
    retry: kafkaRetry(settings),
    metadataMaxAgeMs: (settings.metadataMaxAgeSeconds ?? settingDefault("metadataMaxAgeSeconds")) * 1000,
  };
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

/** kafkajs's client retry: the retry budget settings, the registry's defaults for absent ones. */
function kafkaRetry(s: Pick<KafkaSecuritySettings, "kafkaRetries" | "kafkaInitialRetryTimeMs" | "kafkaMaxRetryTimeMs">): NonNullable<KafkaSettings["retry"]> {
  return {
    retries: s.kafkaRetries ?? settingDefault("kafkaRetries"),
    initialRetryTime: s.kafkaInitialRetryTimeMs ?? settingDefault("kafkaInitialRetryTimeMs"),
    maxRetryTime: s.kafkaMaxRetryTimeMs ?? settingDefault("kafkaMaxRetryTimeMs"),
  };
}

/** The kafkajs configuration of a client (what createKafka passes to `new Kafka`). */
export function kafkaConfig(settings: KafkaSettings): KafkaConfig {
  const config: KafkaConfig = {
    clientId: settings.clientId,
    brokers: settings.brokers,
    logLevel: settings.logLevel ?? logLevel.NOTHING,
    retry: settings.retry ?? kafkaRetry({}),
  };
  if (settings.ssl) config.ssl = settings.ssl;
  if (settings.sasl) config.sasl = settings.sasl;
  return config;
}

export function createKafka(settings: KafkaSettings): Kafka {
  registerCodecs();
  const kafka = new KafkaClass(kafkaConfig(settings));
  // kafkajs takes metadataMaxAge per consumer and producer, not per client (its default, 5 minutes, is how long
  // a group takes to notice partitions added to its topic): give each one this client makes; its own option wins.
  const metadataMaxAge = settings.metadataMaxAgeMs ?? settingDefault("metadataMaxAgeSeconds") * 1000;
  const consumer = kafka.consumer.bind(kafka);
  const producer = kafka.producer.bind(kafka);
  kafka.consumer = (config) => consumer({ metadataMaxAge, ...config });
  kafka.producer = (config) => producer({ metadataMaxAge, ...config });
  return kafka;
}

/** Kafka did not answer in time at start, or through a producer's retry budget (a retry later may help). */
export class KafkaUnavailableError extends MufoldError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { retriable: true, cause: options.cause });
  }
}

/** Kafka refused the SASL credentials (a retry will not help). */
export class KafkaAuthError extends MufoldError {}

/**
 * An admin client that reached the brokers (connected and listed the topics)
 * within `timeoutMs`, for the start of a command. It is a client of its own
 * whose connection, authentication and request timeouts and retries fit in
 * the deadline. Fails with one line naming the brokers: KafkaAuthError when
 * SASL fails, KafkaUnavailableError otherwise (with the last connection error).
 */
export async function connectKafkaAdmin(settings: KafkaSettings, timeoutMs: number): Promise<Admin> {
  let last: string | undefined;
  const kafka = new KafkaClass({
    ...kafkaConfig(settings),
    connectionTimeout: timeoutMs,
    authenticationTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    retry: { retries: Math.ceil(timeoutMs / 500), initialRetryTime: 100, maxRetryTime: 500 },
    logLevel: logLevel.ERROR,
    logCreator: () => (entry) => {
      const text = typeof entry.log.error === "string" ? entry.log.error : entry.log.message;
      if (typeof text === "string") last = text.replace(/^Failed to connect to seed broker, trying another broker from the list: /, "");
    },
  });
  const admin = kafka.admin();
  const endpoint = settings.brokers.join(",");
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new KafkaUnavailableError(`cannot reach Kafka at ${endpoint} within ${timeoutMs} ms: ${last ?? "no answer"}`)), timeoutMs);
  });
  try {
    await Promise.race([admin.connect().then(() => admin.listTopics()), deadline]);
    return admin;
  } catch (err) {
    void admin.disconnect().catch(() => undefined);
    if (err instanceof KafkaUnavailableError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    if (isSaslAuthFailure(err)) throw new KafkaAuthError(`Kafka at ${endpoint} refused the credentials: ${message}`);
    throw new KafkaUnavailableError(`cannot reach Kafka at ${endpoint}: ${last ?? message}`);
  } finally {
    clearTimeout(timer);
  }
}

export const Compression = { zstd: CompressionTypes.ZSTD } as const;
export type { Admin, Kafka };
