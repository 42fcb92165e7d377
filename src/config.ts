/**
 * Settings of the streaming commands: flags win over environment variables,
 * which win over defaults. Validated once at start, with errors that name the
 * setting.
 */
import { z } from "zod";
import { MufoldError } from "./errors.js";

const OPAQUE_REF = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$/;

export const SETTINGS = {
  brokers: { env: "KAFKA_BROKERS", flag: "brokers", default: "127.0.0.1:9092", help: "Kafka bootstrap brokers, comma-separated host:port" },
  redisUrl: { env: "REDIS_URL", flag: "redis-url", default: "redis://127.0.0.1:6379", help: "Redis URL: redis:// or rediss:// for one node; redis+cluster://[user:password@]host:port[,host:port...] (or rediss+cluster://) for a Redis Cluster" },
  topic: { env: "MUFOLD_TOPIC", flag: "topic", default: "memory-utility-observations", help: "observation topic (the DLQ is <topic>.dlq)" },
  group: { env: "MUFOLD_GROUP", flag: "group", default: "mufold-fold", help: "consumer group of the fold" },
  prefix: { env: "MUFOLD_PREFIX", flag: "prefix", default: "mufold", help: "Redis key prefix" },
  reducerVersion: { env: "MUFOLD_REDUCER_VERSION", flag: "reducer-version", default: "memory_utility_reducer_v0", help: "reducer_version of the projections" },
  partitions: { env: "MUFOLD_PARTITIONS", flag: "partitions", default: "12", help: "partitions when mufold creates the topic" },
  cacheSize: { env: "MUFOLD_CACHE_SIZE", flag: "cache-size", default: "10000", help: "identities a worker keeps in memory" },
  maxValueBytes: { env: "MUFOLD_MAX_VALUE_BYTES", flag: "max-value-bytes", default: "65536", help: "larger record values go to the DLQ" },
  allowFiniteRetention: { env: "MUFOLD_ALLOW_FINITE_RETENTION", flag: "allow-finite-retention", default: "false", help: "run on a topic that deletes records" },
  clientId: { env: "MUFOLD_CLIENT_ID", flag: "client-id", default: "mufold", help: "Kafka client id" },
} as const;

export type SettingName = keyof typeof SETTINGS;

const schema = z.object({
  brokers: z
    .string()
    .transform((s) => s.split(",").map((b) => b.trim()).filter(Boolean))
    .pipe(z.array(z.string().regex(/^[^\s:]+:\d{1,5}$/, "each broker must be host:port")).min(1, "at least one broker")),
  redisUrl: z
    .string()
    .regex(
      /^(rediss?:\/\/|rediss?\+cluster:\/\/([^\s/@]*@)?[^\s:/@,]+:\d{1,5}(,[^\s:/@,]+:\d{1,5})*\/?$)/,
      "must be redis:// or rediss:// (one node), or redis+cluster://[user:password@]host:port[,host:port...] (Redis Cluster seed nodes; rediss+cluster:// for TLS)",
    ),
  topic: z.string().regex(/^[A-Za-z0-9._-]{1,200}$/, "must be a valid Kafka topic name"),
  group: z.string().min(1),
  prefix: z.string().regex(/^[A-Za-z0-9_.:-]{1,100}$/, "letters, digits, _ . : - only"),
  reducerVersion: z.string().regex(OPAQUE_REF, "must be an opaque reference"),
  partitions: z.coerce.number().int().min(1).max(10_000),
  cacheSize: z.coerce.number().int().min(1),
  maxValueBytes: z.coerce.number().int().min(1024).max(16 * 1024 * 1024),
  allowFiniteRetention: z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1"),
  clientId: z.string().min(1),
});

export type Settings = z.infer<typeof schema>;

/** Resolve settings from flags and the environment; throws a MufoldError naming the bad setting. */
export function resolveSettings(flags: Partial<Record<string, string | boolean | undefined>> = {}, env: NodeJS.ProcessEnv = process.env): Settings {
  const raw: Record<string, string> = {};
  for (const [name, spec] of Object.entries(SETTINGS)) {
    const flag = flags[spec.flag];
    raw[name] = flag !== undefined ? String(flag) : (env[spec.env] ?? spec.default);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0]) as SettingName;
    const spec = SETTINGS[name];
    throw new MufoldError(`invalid setting ${name} (--${spec.flag} / ${spec.env}) = ${JSON.stringify(raw[name])}: ${issue.message}`);
  }
  return parsed.data;
}

/** parseArgs options for every setting flag. */
export function settingFlags(): Record<string, { type: "string" | "boolean" }> {
  const out: Record<string, { type: "string" | "boolean" }> = {};
  for (const spec of Object.values(SETTINGS)) out[spec.flag] = { type: spec.flag === "allow-finite-retention" ? "boolean" : "string" };
  return out;
}
