/**
 * Connection options of the public API, resolved by the same settings code as
 * the CLI: what a caller does not give comes from the environment (KAFKA_*,
 * REDIS_*, MUFOLD_*), then from the defaults. Security settings (TLS, SASL,
 * password files) are read from the environment only.
 */
import { resolveSettings, type Settings } from "../config/settings.js";

/** Where `ProjectionReader.connect` and `ObservationProducer.connect` connect to; every field is optional. */
export interface ClientOptions {
  /** Kafka bootstrap brokers, `host:port` (default KAFKA_BROKERS, else 127.0.0.1:9092). */
  brokers?: readonly string[];
  /** Redis URL (default REDIS_URL, else redis://127.0.0.1:6379); redis+cluster:// for a Redis Cluster. */
  redisUrl?: string;
  /** The observation topic (default MUFOLD_TOPIC, else memory-utility-observations). */
  topic?: string;
  /** The Redis key prefix of the projections (default MUFOLD_PREFIX, else mufold). */
  prefix?: string;
  /** The reducer version by-scope reads use (default MUFOLD_REDUCER_VERSION, else memory_utility_reducer_v0). */
  reducerVersion?: string;
  /** Kafka client id (default MUFOLD_CLIENT_ID, else mufold). */
  clientId?: string;
  /** The environment the rest is read from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/** The full settings for these options; throws a MufoldError naming a bad one. */
export function settingsOf(options: ClientOptions = {}): Settings {
  return resolveSettings(
    {
      brokers: options.brokers?.join(","),
      "redis-url": options.redisUrl,
      topic: options.topic,
      prefix: options.prefix,
      "reducer-version": options.reducerVersion,
      "client-id": options.clientId,
    },
    options.env ?? process.env,
  );
}
