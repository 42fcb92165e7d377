/**
 * Settings of the streaming commands: flags win over environment variables,
 * which win over defaults. Validated once at start, with errors that name the
 * setting.
 *
 * Security settings (docs/security.md): Kafka TLS and SASL, Redis credentials
 * (in REDIS_URL, or its password in REDIS_PASSWORD_FILE) and TLS CAs. Files
 * are read here, at start, so an unreadable one stops the command before it
 * connects anywhere. Passwords are held in `Secret`s, which print, log and
 * serialize as "[redacted]"; no error message ever contains one.
 */
import { readFileSync } from "node:fs";
import { inspect } from "node:util";
import { MufoldError } from "../errors.js";
import { isClusterUrl, parseClusterUrl, redactRedisUrl } from "./redis-url.js";

const OPAQUE_REF = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$/;

export interface SettingSpec {
  env: string;
  /**
   * Absent for a setting taken from the environment only: a password (never on a command line), the
   * log level (read before the command's flags), the change feed and the retry budgets (deployment tuning).
   */
  flag?: string;
  default: string;
  help: string;
  /** A boolean flag (`--x`, no value); the environment variable takes true/false/1/0. */
  boolean?: boolean;
  /**
   * Changes what mufold writes to Kafka or Redis, or where: part of the config fingerprint
   * (`mufold config explain`), so two hosts with one fingerprint write the same bytes to the same places.
   */
  fingerprint?: true;
  /** A credential: never shown (errors, `config explain`), only its presence. */
  secret?: true;
}

export const SETTINGS = {
  brokers: { env: "KAFKA_BROKERS", flag: "brokers", default: "127.0.0.1:9092", fingerprint: true, help: "Kafka bootstrap brokers, comma-separated host:port" },
  redisUrl: { env: "REDIS_URL", flag: "redis-url", default: "redis://127.0.0.1:6379", fingerprint: true, help: "Redis URL: redis://[user:password@]host:port[/db] or rediss:// (TLS) for one node; redis+cluster://[user:password@]host:port[,host:port...] (or rediss+cluster://) for a Redis Cluster" },
  topic: { env: "MUFOLD_TOPIC", flag: "topic", default: "memory-utility-observations", fingerprint: true, help: "observation topic (the DLQ is <topic>.dlq)" },
  group: { env: "MUFOLD_GROUP", flag: "group", default: "mufold-fold", fingerprint: true, help: "consumer group of the fold" },
  prefix: { env: "MUFOLD_PREFIX", flag: "prefix", default: "mufold", fingerprint: true, help: "Redis key prefix" },
  reducerVersion: { env: "MUFOLD_REDUCER_VERSION", flag: "reducer-version", default: "memory_utility_reducer_v0", fingerprint: true, help: "reducer_version of the projections" },
  partitions: { env: "MUFOLD_PARTITIONS", flag: "partitions", default: "12", fingerprint: true, help: "partitions when mufold creates the topic" },
  replicationFactor: { env: "MUFOLD_REPLICATION_FACTOR", flag: "replication-factor", default: "broker", fingerprint: true, help: "replication factor when mufold creates a topic: broker (the broker's default.replication.factor) or a number from 1; with 3, give the topics min.insync.replicas=2 (docs/operations.md)" },
  cacheSize: { env: "MUFOLD_CACHE_SIZE", flag: "cache-size", default: "10000", help: "identities a worker keeps in memory" },
  cacheMaxBytes: { env: "MUFOLD_CACHE_MAX_BYTES", flag: "cache-max-bytes", default: "268435456", help: "bytes the identities a worker keeps in memory may hold together (V8 heap and shelved observations), estimated (7 KiB + 1.5 KiB per observation each holds); with the cache size, whichever is reached first bounds the cache" },
  maxValueBytes: { env: "MUFOLD_MAX_VALUE_BYTES", flag: "max-value-bytes", default: "65536", fingerprint: true, help: "larger record values go to the DLQ" },
  allowFiniteRetention: { env: "MUFOLD_ALLOW_FINITE_RETENTION", flag: "allow-finite-retention", default: "false", boolean: true, help: "run on a topic that deletes records" },
  allowEvictingPolicy: { env: "MUFOLD_ALLOW_EVICTING_POLICY", flag: "allow-evicting-policy", default: "false", boolean: true, help: "fold even when Redis may evict mufold's keys (maxmemory-policy allkeys-*): evicted projection state is lost without an error" },
  clientId: { env: "MUFOLD_CLIENT_ID", flag: "client-id", default: "mufold", help: "Kafka client id" },
  kafkaTls: { env: "KAFKA_TLS", flag: "kafka-tls", default: "false", boolean: true, help: "connect to the Kafka brokers over TLS" },
  kafkaTlsCa: { env: "KAFKA_TLS_CA", flag: "kafka-tls-ca", default: "", help: "PEM file of the CA certificate(s) of the brokers (default: Node's trusted CAs); needs --kafka-tls" },
  kafkaSaslMechanism: { env: "KAFKA_SASL_MECHANISM", flag: "kafka-sasl-mechanism", default: "", help: "Kafka SASL mechanism: plain, scram-sha-256 or scram-sha-512 (empty: no SASL)" },
  kafkaSaslUsername: { env: "KAFKA_SASL_USERNAME", flag: "kafka-sasl-username", default: "", help: "Kafka SASL username" },
  kafkaSaslPassword: { env: "KAFKA_SASL_PASSWORD", default: "", secret: true, help: "Kafka SASL password (environment only, or --kafka-sasl-password-file)" },
  kafkaSaslPasswordFile: { env: "KAFKA_SASL_PASSWORD_FILE", flag: "kafka-sasl-password-file", default: "", help: "file whose content is the Kafka SASL password" },
  redisTlsCa: { env: "REDIS_TLS_CA", flag: "redis-tls-ca", default: "", help: "PEM file of the CA certificate(s) of Redis (needs a rediss:// or rediss+cluster:// URL)" },
  redisPasswordFile: { env: "REDIS_PASSWORD_FILE", flag: "redis-password-file", default: "", help: "file whose content is the Redis password (instead of one in REDIS_URL)" },
  sessionTimeoutMs: { env: "MUFOLD_SESSION_TIMEOUT_MS", flag: "session-timeout-ms", default: "10000", help: "consumer group session timeout: a worker silent this long is replaced (broker bounds: group.min/max.session.timeout.ms)" },
  heartbeatIntervalMs: { env: "MUFOLD_HEARTBEAT_INTERVAL_MS", flag: "heartbeat-interval-ms", default: "1000", help: "consumer group heartbeat interval (at most a third of the session timeout)" },
  metadataMaxAgeSeconds: { env: "MUFOLD_METADATA_MAX_AGE_SECONDS", flag: "metadata-max-age-seconds", default: "30", help: "how often a Kafka consumer or producer refreshes the topics' metadata (kafkajs metadataMaxAge): partitions added to the topic are folded from the first refresh after" },
  outageToleranceSeconds: { env: "MUFOLD_OUTAGE_TOLERANCE_SECONDS", flag: "outage-tolerance-seconds", default: "300", help: "how long the fold rides out Redis or Kafka being unreachable (holding its batch, not ready) before it exits" },
  connectTimeoutMs: { env: "MUFOLD_CONNECT_TIMEOUT_MS", flag: "connect-timeout-ms", default: "10000", help: "how long a command waits for Redis or Kafka at start before it gives up with one line naming the endpoint" },
  fetchMaxBytes: { env: "MUFOLD_FETCH_MAX_BYTES", flag: "fetch-max-bytes", default: "4194304", help: "most record bytes (as stored: compressed) one fetch brings a worker or a replay reader (all its partitions); with the next two, what bounds a worker's memory (docs/operations.md, capacity)" },
  partitionFetchMaxBytes: { env: "MUFOLD_PARTITION_FETCH_MAX_BYTES", flag: "partition-fetch-max-bytes", default: "524288", help: "most record bytes (as stored: compressed) one fetch brings of one partition: the size of one batch" },
  partitionsConcurrency: { env: "MUFOLD_PARTITIONS_CONCURRENCY", flag: "partitions-concurrency", default: "4", help: "batches (of different partitions) a worker folds at once" },
  identitiesInFlight: { env: "MUFOLD_IDENTITIES_IN_FLIGHT", flag: "identities-in-flight", default: "256", help: "identity writes a worker has in flight at once (across its batches)" },
  warmUpRecords: { env: "MUFOLD_WARM_UP_RECORDS", flag: "warm-up-records", default: "3000", help: "synthetic records a fold worker runs through its engine (in memory, no IO) before it joins the group, so its first seconds of records do not run in unoptimised code (0: none)" },
  pauseLeaseSeconds: { env: "MUFOLD_PAUSE_LEASE_SECONDS", flag: "pause-lease-seconds", default: "30", help: "lease of a promote's fleet pause: if the replay stops renewing it (crash, kill), the folds resume after this" },
  // The change feed (consumers/feed/change-feed.ts): what the fold and the replay write besides the packets.
  changeFeed: { env: "MUFOLD_CHANGE_FEED", default: "on", fingerprint: true, help: "on or off: the fold stores each packet's digest, appends every change to the generation's Redis stream and produces review proposals (off: none of them)" },
  changeFeedMaxLen: { env: "MUFOLD_CHANGE_FEED_MAXLEN", default: "100000", fingerprint: true, help: "approximate cap (XADD MAXLEN ~) of each generation's change stream" },
  proposalsTopic: { env: "MUFOLD_PROPOSALS_TOPIC", default: "", fingerprint: true, help: "Kafka topic for review proposals, created by mufold setup (empty: no proposals; ignored with the change feed off)" },
  // HTTP: `fold` serves it only with a port; `serve` takes --port/--host too and listens on 8080 by default.
  httpPort: { env: "MUFOLD_HTTP_PORT", flag: "http-port", default: "", help: "port of the HTTP API, /metrics, /healthz and /readyz: fold serves them only when set; serve (also --port) listens on 8080 when unset" },
  httpHost: { env: "MUFOLD_HTTP_HOST", flag: "http-host", default: "127.0.0.1", help: "address the HTTP API listens on (serve: also --host)" },
  logLevel: { env: "MUFOLD_LOG_LEVEL", default: "info", help: "debug, info, warn, error or silent (JSON lines on stderr)" },
  // Retry budgets: how long a command insists before an error surfaces.
  casMaxAttempts: { env: "MUFOLD_CAS_MAX_ATTEMPTS", default: "20", help: "attempts of one identity's version-checked write while other writers keep moving its version; then the batch fails and is retried" },
  redisMaxRetriesPerRequest: { env: "MUFOLD_REDIS_MAX_RETRIES_PER_REQUEST", default: "20", help: "reconnections a Redis command waits through before it fails (ioredis maxRetriesPerRequest), for every connection but the fold's" },
  foldRedisMaxRetriesPerRequest: { env: "MUFOLD_FOLD_REDIS_MAX_RETRIES_PER_REQUEST", default: "1", help: "the same for the fold's Redis connection: kept low, so a command fails fast while Redis is down and the fold's outage loop takes over (heartbeats, outage clock)" },
  positionCheckMs: { env: "MUFOLD_POSITION_CHECK_MS", default: "2000", help: "how often a fold worker compares its partitions' marks in Redis with where it stands, idle too: a Redis that went back in time is refolded from its marks within about this long" },
  foldRedisCommandTimeoutMs: { env: "MUFOLD_FOLD_REDIS_COMMAND_TIMEOUT_MS", default: "10000", help: "a fold's Redis command without a reply this long fails (a hung connection), and the batch is retried" },
  kafkaRetries: { env: "MUFOLD_KAFKA_RETRIES", default: "8", help: "retries of a failed Kafka request (kafkajs retry.retries), with exponential backoff between the next two. With the three defaults this retry budget is about 21 s (200+400+…+5000 ms): produce, simulate and ObservationProducer ride out a broker outage that long, then fail with one line" },
  kafkaInitialRetryTimeMs: { env: "MUFOLD_KAFKA_INITIAL_RETRY_TIME_MS", default: "200", help: "first backoff of a Kafka retry (kafkajs retry.initialRetryTime)" },
  kafkaMaxRetryTimeMs: { env: "MUFOLD_KAFKA_MAX_RETRY_TIME_MS", default: "5000", help: "longest backoff of a Kafka retry (kafkajs retry.maxRetryTime); at least the first one" },
  kafkaConsumerRetries: { env: "MUFOLD_KAFKA_CONSUMER_RETRIES", default: "10", help: "retries of the fold's group consumer (kafkajs consumer retry.retries) before it crashes: restarted for a retriable error, else the fold exits" },
} as const satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof SETTINGS;
export type SettingSource = "flag" | "env" | "default";

export const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[];

/** The settings in the config fingerprint (`mufold config explain`): those that change what mufold writes to Kafka or Redis, or where. */
export const FINGERPRINT_SETTINGS: readonly SettingName[] = SETTING_NAMES.filter((name) => settingSpec(name).fingerprint === true);

export function settingSpec(name: SettingName): SettingSpec {
  return SETTINGS[name];
}

/** `--flag / ENV`, or `ENV` for a setting without a flag. */
export function describeSetting(name: SettingName): string {
  const spec = settingSpec(name);
  return spec.flag === undefined ? spec.env : `--${spec.flag} / ${spec.env}`;
}

/** A credential: usable through `reveal()`, "[redacted]" everywhere else (String, JSON, logs, util.inspect). */
export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  toString(): string {
    return "[redacted]";
  }
  toJSON(): string {
    return "[redacted]";
  }
  [inspect.custom](): string {
    return "Secret([redacted])";
  }
}

/** A PEM file read at start. */
export interface PemFile {
  path: string;
  pem: string;
}

export const KAFKA_SASL_MECHANISMS = ["plain", "scram-sha-256", "scram-sha-512"] as const;
export const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const KAFKA_TOPIC = /^[A-Za-z0-9._-]{1,200}$/;
const FEED_ON = ["on", "true", "1", "yes"];
const FEED_OFF = ["off", "false", "0", "no"];

/**
 * A setting's rule: its raw text to its value, or a RuleBroken with what an
 * operator reads after the setting's name. Plain functions: a validation
 * library cost every mufold process ~70 ms of CPU to load.
 */
type Rule<T> = (raw: string) => T;

class RuleBroken extends Error {}

function broken(message: string): never {
  throw new RuleBroken(message);
}

const bool: Rule<boolean> = (s) => (s === "true" || s === "1" ? true : s === "false" || s === "0" ? false : broken("must be true, false, 1 or 0"));
const optional: Rule<string | undefined> = (s) => (s.trim() === "" ? undefined : s);
const nonEmpty: Rule<string> = (s) => (s !== "" ? s : broken("must not be empty"));
const matching = (re: RegExp, message: string): Rule<string> => (s) => (re.test(s) ? s : broken(message));
const oneOf = <T extends string>(values: readonly T[], message: string): Rule<T> => (s) => ((values as readonly string[]).includes(s) ? (s as T) : broken(message));

const saslMechanism = oneOf(KAFKA_SASL_MECHANISMS, `must be one of ${KAFKA_SASL_MECHANISMS.join(", ")}`);

/** A decimal integer in [min, max] (no sign, exponent, hex or empty string: a typo is refused, not read as 0). */
function integer(min: number, max: number, message = `must be an integer from ${min} to ${max}`): Rule<number> {
  return (s) => {
    const v = s.trim();
    const n = /^\d{1,16}$/.test(v) ? Number(v) : NaN;
    return Number.isSafeInteger(n) && n >= min && n <= max ? n : broken(message);
  };
}

const schema = {
  brokers: (s: string): string[] => {
    const brokers = s.split(",").map((b) => b.trim()).filter(Boolean);
    if (brokers.length === 0) broken("at least one broker");
    for (const b of brokers) if (!/^[^\s:]+:\d{1,5}$/.test(b)) broken("each broker must be host:port");
    return brokers;
  },
  redisUrl: matching(
    /^(rediss?:\/\/|rediss?\+cluster:\/\/([^\s/@]*@)?[^\s:/@,]+:\d{1,5}(,[^\s:/@,]+:\d{1,5})*\/?$)/,
    "must be redis:// or rediss:// (one node), or redis+cluster://[user:password@]host:port[,host:port...] (Redis Cluster seed nodes; rediss+cluster:// for TLS)",
  ),
  topic: matching(KAFKA_TOPIC, "must be a valid Kafka topic name"),
  group: nonEmpty,
  prefix: matching(/^[A-Za-z0-9_.:-]{1,100}$/, "letters, digits, _ . : - only"),
  reducerVersion: matching(OPAQUE_REF, "must be an opaque reference"),
  partitions: integer(1, 10_000),
  // "broker" lets the broker apply its default.replication.factor (kafkajs sends -1; see topics.ts).
  replicationFactor: (s: string): number | "broker" => {
    const v = s.trim().toLowerCase();
    if (v === "broker") return "broker";
    if (/^\d{1,5}$/.test(v) && Number(v) >= 1 && Number(v) <= 32_767) return Number(v);
    return broken("must be broker (the broker's default.replication.factor) or an integer from 1 to 32767");
  },
  cacheSize: integer(1, Number.MAX_SAFE_INTEGER),
  cacheMaxBytes: integer(1024 * 1024, Number.MAX_SAFE_INTEGER),
  maxValueBytes: integer(1024, 16 * 1024 * 1024),
  allowFiniteRetention: bool,
  allowEvictingPolicy: bool,
  clientId: nonEmpty,
  kafkaTls: bool,
  kafkaTlsCa: optional,
  kafkaSaslMechanism: (s: string): (typeof KAFKA_SASL_MECHANISMS)[number] | undefined => {
    const v = s.trim().toLowerCase();
    return v === "" ? undefined : saslMechanism(v);
  },
  kafkaSaslUsername: optional,
  kafkaSaslPassword: (s: string): string | undefined => (s === "" ? undefined : s),
  kafkaSaslPasswordFile: optional,
  redisTlsCa: optional,
  redisPasswordFile: optional,
  sessionTimeoutMs: integer(1_000, 3_600_000),
  heartbeatIntervalMs: integer(100, 1_200_000),
  metadataMaxAgeSeconds: integer(1, 86_400),
  outageToleranceSeconds: integer(0, 86_400),
  connectTimeoutMs: integer(100, 600_000),
  pauseLeaseSeconds: integer(2, 3_600),
  fetchMaxBytes: integer(1024, 1024 * 1024 * 1024),
  partitionFetchMaxBytes: integer(1024, 1024 * 1024 * 1024),
  partitionsConcurrency: integer(1, 1024),
  identitiesInFlight: integer(1, 100_000),
  warmUpRecords: integer(0, 20_000), // all of them are built at once: a warm-up is not a workload
  changeFeed: (s: string): boolean => {
    const v = s.trim().toLowerCase();
    if (FEED_ON.includes(v)) return true;
    if (FEED_OFF.includes(v)) return false;
    return broken("must be on or off");
  },
  changeFeedMaxLen: integer(1, Number.MAX_SAFE_INTEGER, "must be a positive integer"),
  proposalsTopic: (s: string): string | null => {
    const v = s.trim();
    if (v === "") return null;
    return KAFKA_TOPIC.test(v) ? v : broken("must be a valid Kafka topic name (or empty for none)");
  },
  httpPort: (s: string): number | undefined => {
    if (s === "") return undefined;
    const port = /^\d{1,5}$/.test(s) ? Number(s) : NaN;
    return port >= 0 && port <= 65_535 ? port : broken("must be a port number from 0 to 65535");
  },
  httpHost: (s: string): string => (s.trim() !== "" ? s : broken("must not be empty")),
  logLevel: oneOf(LOG_LEVELS, `must be one of ${LOG_LEVELS.join(", ")}`),
  casMaxAttempts: integer(1, 1_000),
  redisMaxRetriesPerRequest: integer(0, 1_000),
  foldRedisMaxRetriesPerRequest: integer(0, 100),
  positionCheckMs: integer(100, 600_000),
  foldRedisCommandTimeoutMs: integer(100, 600_000),
  kafkaRetries: integer(0, 100),
  kafkaInitialRetryTimeMs: integer(1, 60_000),
  kafkaMaxRetryTimeMs: integer(1, 600_000),
  kafkaConsumerRetries: integer(0, 100),
} satisfies Record<SettingName, Rule<unknown>>;

type Fields = typeof schema;
type Parsed = { [N in SettingName]: ReturnType<Fields[N]> };

/** Apply `name`'s rule to `raw`: its value, or a MufoldError naming the setting. */
function checked<N extends SettingName>(name: N, raw: string, describe?: string): ReturnType<Fields[N]> {
  try {
    return schema[name](raw) as ReturnType<Fields[N]>;
  } catch (error) {
    if (error instanceof RuleBroken) throw invalid(name, raw, error.message, describe);
    throw error;
  }
}


export type Settings = Omit<Parsed, "kafkaTlsCa" | "kafkaSaslPassword" | "redisTlsCa"> & {
  /** The brokers' CA, read at start (only with kafkaTls). */
  kafkaTlsCa: PemFile | undefined;
  /** From KAFKA_SASL_PASSWORD or the file of kafkaSaslPasswordFile. */
  kafkaSaslPassword: Secret | undefined;
  /** Redis's CA, read at start (only with a rediss URL). */
  redisTlsCa: PemFile | undefined;
  /** The Redis password read from redisPasswordFile (a password in redisUrl stays in the URL). */
  redisPassword: Secret | undefined;
};

export interface ResolvedSettings {
  settings: Settings;
  /** Where each setting's value came from. */
  sources: Record<SettingName, SettingSource>;
}

/**
 * The environment that gives a spawned mufold command exactly these settings: every setting of the
 * registry by its variable (lists comma-joined, unset as empty, CA files by their path). Credentials
 * are not written out: a password from a file goes by its file setting, one from the environment is
 * inherited with the rest of it.
 */
export function settingsEnv(settings: Settings): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of SETTING_NAMES) {
    const spec = settingSpec(name);
    if (spec.secret === true) continue;
    const value: unknown = (settings as Record<string, unknown>)[name];
    env[spec.env] =
      value === undefined || value === null
        ? ""
        : Array.isArray(value)
          ? value.join(",")
          : typeof value === "object" && "path" in value
            ? String((value as PemFile).path)
            : String(value);
  }
  return env;
}

/** Credentials in a Redis URL, and whether it uses TLS. */
export interface RedisUrlParts {
  tls: boolean;
  cluster: boolean;
  username: string | undefined;
  password: string | undefined;
  /** The URL without user and password. */
  redacted: string;
}

/** Parse a Redis URL of any supported form; throws MufoldError (without the password) when it is not one. */
export function redisUrlParts(url: string): RedisUrlParts {
  if (isClusterUrl(url)) {
    const c = parseClusterUrl(url);
    const scheme = c.tls ? "rediss+cluster" : "redis+cluster";
    return { tls: c.tls, cluster: true, username: c.username, password: c.password, redacted: `${scheme}://${c.seeds.map((s) => `${s.host}:${s.port}`).join(",")}` };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new MufoldError("is not a valid URL");
  }
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      throw new MufoldError("has a user or password that is not valid percent-encoding");
    }
  };
  const username = parsed.username === "" ? undefined : decode(parsed.username);
  const password = parsed.password === "" ? undefined : decode(parsed.password);
  parsed.username = "";
  parsed.password = "";
  return { tls: url.startsWith("rediss://"), cluster: false, username, password, redacted: parsed.toString() };
}

/** A URL for messages: user kept, password replaced; parsed, so a password with `@`, `:` or `%` never shows (connect.ts). */
export function redactUrl(url: string): string {
  return redactRedisUrl(url);
}

function shown(name: SettingName, raw: string | undefined): string {
  if (settingSpec(name).secret) return "[redacted]";
  if (name === "redisUrl" && raw !== undefined) return JSON.stringify(redactUrl(raw));
  return JSON.stringify(raw);
}

/** `describe` names the setting as the user gave it (a command's own flag for it, see ResolveOptions.aliases). */
function invalid(name: SettingName, raw: string | undefined, message: string, describe = describeSetting(name)): MufoldError {
  return new MufoldError(`invalid setting ${name} (${describe}) = ${shown(name, raw)}: ${message}`);
}

function readSettingFile(name: SettingName, path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    const code = (err as { code?: string }).code ?? (err as Error).message;
    throw invalid(name, path, `cannot read the file (${code})`);
  }
}

function readPem(name: SettingName, path: string): PemFile {
  const pem = readSettingFile(name, path);
  if (!/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.test(pem)) throw invalid(name, path, "is not a PEM file of CA certificates (no BEGIN CERTIFICATE block)");
  return { path, pem };
}

function readPassword(name: SettingName, path: string): Secret {
  const text = readSettingFile(name, path).replace(/\r?\n$/, "");
  if (text === "") throw invalid(name, path, "the file is empty");
  if (/[\r\n]/.test(text)) throw invalid(name, path, "the file must hold the password on one line");
  return new Secret(text);
}

export interface ResolveOptions {
  /**
   * A command's own flag for a setting, taken instead of the setting's flag and named in its errors
   * (`mufold serve --port` for httpPort). Giving both is refused.
   */
  aliases?: Partial<Record<SettingName, string>>;
}

type Flags = Partial<Record<string, string | boolean | undefined>>;

/** Resolve settings from flags and the environment, with the source of each; throws a MufoldError naming the bad setting. */
export function resolveSettingsWithSources(flags: Flags = {}, env: NodeJS.ProcessEnv = process.env, options: ResolveOptions = {}): ResolvedSettings {
  const raw = {} as Record<SettingName, string>;
  const sources = {} as Record<SettingName, SettingSource>;
  const described: Partial<Record<SettingName, string>> = {};
  for (const name of SETTING_NAMES) {
    const spec = settingSpec(name);
    const alias = options.aliases?.[name];
    const own = spec.flag === undefined ? undefined : flags[spec.flag];
    const aliased = alias === undefined ? undefined : flags[alias];
    if (aliased !== undefined && own !== undefined) throw new MufoldError(`--${alias} and --${spec.flag} both set ${name}: give one of them`);
    if (aliased !== undefined) described[name] = `--${alias} / ${spec.env}`;
    const flag = aliased ?? own;
    const fromEnv = env[spec.env];
    if (flag !== undefined) {
      raw[name] = String(flag);
      sources[name] = "flag";
    } else if (fromEnv !== undefined) {
      raw[name] = fromEnv;
      sources[name] = "env";
    } else {
      raw[name] = spec.default;
      sources[name] = "default";
    }
  }
  // Each setting by its rule, in the schema's order: the first broken rule is the one reported.
  const parsed: Partial<Parsed> = {};
  for (const name of Object.keys(schema) as SettingName[]) (parsed as Record<SettingName, unknown>)[name] = checked(name, raw[name], described[name]);
  return { settings: secure(parsed as Parsed, raw), sources };
}

/** Resolve settings from flags and the environment; throws a MufoldError naming the bad setting. */
export function resolveSettings(flags: Flags = {}, env: NodeJS.ProcessEnv = process.env, options: ResolveOptions = {}): Settings {
  return resolveSettingsWithSources(flags, env, options).settings;
}

/**
 * One setting from the environment alone (or its default), checked by the same rule as in
 * resolveSettings: for what is needed before the flags are parsed (the log level).
 */
export function settingFromEnv<N extends SettingName>(name: N, env: NodeJS.ProcessEnv = process.env): ReturnType<Fields[N]> {
  return checked(name, env[settingSpec(name).env] ?? settingSpec(name).default);
}

/** A setting's default, parsed: for an adapter's fallback when a caller passes no value (one place for each default). */
export function settingDefault<N extends SettingName>(name: N): ReturnType<Fields[N]> {
  return settingFromEnv(name, {});
}

/** The cross-setting checks of the security settings, and the files they name. */
function secure(p: Parsed, raw: Record<SettingName, string>): Settings {
  // Kafka TLS.
  if (p.kafkaTlsCa !== undefined && !p.kafkaTls) throw invalid("kafkaTlsCa", p.kafkaTlsCa, `a CA needs TLS: set kafkaTls (${describeSetting("kafkaTls")}) too`);
  const kafkaTlsCa = p.kafkaTlsCa === undefined ? undefined : readPem("kafkaTlsCa", p.kafkaTlsCa);

  // Kafka SASL: a mechanism, a username and exactly one password source, or none of them.
  if (p.kafkaSaslPassword !== undefined && p.kafkaSaslPasswordFile !== undefined) {
    throw invalid("kafkaSaslPasswordFile", p.kafkaSaslPasswordFile, `the password is also set in ${SETTINGS.kafkaSaslPassword.env}: set only one of them`);
  }
  const hasPassword = p.kafkaSaslPassword !== undefined || p.kafkaSaslPasswordFile !== undefined;
  if (p.kafkaSaslMechanism === undefined) {
    if (p.kafkaSaslUsername !== undefined) throw invalid("kafkaSaslUsername", p.kafkaSaslUsername, `a SASL username needs a mechanism: set kafkaSaslMechanism (${describeSetting("kafkaSaslMechanism")})`);
    if (p.kafkaSaslPassword !== undefined) throw invalid("kafkaSaslPassword", p.kafkaSaslPassword, `a SASL password needs a mechanism: set kafkaSaslMechanism (${describeSetting("kafkaSaslMechanism")})`);
    if (p.kafkaSaslPasswordFile !== undefined) throw invalid("kafkaSaslPasswordFile", p.kafkaSaslPasswordFile, `a SASL password needs a mechanism: set kafkaSaslMechanism (${describeSetting("kafkaSaslMechanism")})`);
  } else {
    if (p.kafkaSaslUsername === undefined) throw invalid("kafkaSaslMechanism", raw.kafkaSaslMechanism, `SASL needs a username: set kafkaSaslUsername (${describeSetting("kafkaSaslUsername")})`);
    if (!hasPassword) {
      throw invalid("kafkaSaslMechanism", raw.kafkaSaslMechanism, `SASL needs a password: set ${SETTINGS.kafkaSaslPassword.env} or kafkaSaslPasswordFile (${describeSetting("kafkaSaslPasswordFile")})`);
    }
  }
  const kafkaSaslPassword =
    p.kafkaSaslPasswordFile !== undefined ? readPassword("kafkaSaslPasswordFile", p.kafkaSaslPasswordFile) : p.kafkaSaslPassword === undefined ? undefined : new Secret(p.kafkaSaslPassword);

  // Redis: credentials in the URL (or its password in a file), a CA only for TLS.
  let url: RedisUrlParts;
  try {
    url = redisUrlParts(p.redisUrl);
  } catch (err) {
    throw invalid("redisUrl", p.redisUrl, err instanceof MufoldError ? err.message : String(err));
  }
  if (p.redisTlsCa !== undefined && !url.tls) {
    throw invalid("redisTlsCa", p.redisTlsCa, `a CA needs TLS: redisUrl (${describeSetting("redisUrl")}) must be rediss:// or rediss+cluster://, not ${url.cluster ? "redis+cluster" : "redis"}://`);
  }
  const redisTlsCa = p.redisTlsCa === undefined ? undefined : readPem("redisTlsCa", p.redisTlsCa);
  if (p.redisPasswordFile !== undefined && url.password !== undefined) {
    throw invalid("redisPasswordFile", p.redisPasswordFile, `redisUrl (${describeSetting("redisUrl")}) already has a password: set only one of them`);
  }
  if (url.username !== undefined && url.password === undefined && p.redisPasswordFile === undefined) {
    throw invalid("redisUrl", p.redisUrl, `has a user but no password: add it to the URL or set redisPasswordFile (${describeSetting("redisPasswordFile")})`);
  }
  if (p.heartbeatIntervalMs * 3 > p.sessionTimeoutMs) {
    throw invalid("heartbeatIntervalMs", raw.heartbeatIntervalMs, `must be at most a third of sessionTimeoutMs (${describeSetting("sessionTimeoutMs")}) = ${p.sessionTimeoutMs}`);
  }
  if (p.kafkaMaxRetryTimeMs < p.kafkaInitialRetryTimeMs) {
    throw invalid("kafkaMaxRetryTimeMs", raw.kafkaMaxRetryTimeMs, `must be at least kafkaInitialRetryTimeMs (${describeSetting("kafkaInitialRetryTimeMs")}) = ${p.kafkaInitialRetryTimeMs}`);
  }
  const redisPassword = p.redisPasswordFile === undefined ? undefined : readPassword("redisPasswordFile", p.redisPasswordFile);

  return { ...p, kafkaTlsCa, kafkaSaslPassword, redisTlsCa, redisPassword };
}

/** parseArgs options for every setting flag. */
export function settingFlags(): Record<string, { type: "string" | "boolean" }> {
  const out: Record<string, { type: "string" | "boolean" }> = {};
  for (const name of SETTING_NAMES) {
    const spec = settingSpec(name);
    if (spec.flag !== undefined) out[spec.flag] = { type: spec.boolean ? "boolean" : "string" };
  }
  return out;
}
