/**
 * `mufold config explain [setting flags]`: the effective configuration as a
 * content-free JSON receipt (schema `mufold_config_receipt_v0`), one line of
 * canonical JSON on stdout:
 *
 *   {"fingerprint":"sha256:…","schema":"mufold_config_receipt_v0","settings":{"<name>":{"source":"flag"|"env"|"default","value":…},…}}
 *
 * Every setting of config.ts is there, plus `logLevel` and what REDIS_URL
 * carries (`redisUsername`, `redisPassword`, `redisTls`). Credentials are
 * never shown: the Kafka SASL username and password and the Redis user and
 * password appear as `{"present":true|false,"redacted":true,"source":…}`, and
 * redisUrl is shown without its user and password. Hosts, ports, topic, prefix
 * and file paths do appear; file contents (CA certificates, password files)
 * never do.
 *
 * `fingerprint` is `sha256:` + sha256 of the canonical JSON of the receipt
 * without `fingerprint` and without the `source` fields: the same effective
 * settings give the same fingerprint whatever their order or source (flag,
 * environment or default). Brokers are listed sorted (a bootstrap set).
 *
 * An invalid configuration exits 2 with the error on stderr (naming the
 * setting, never a secret).
 */
import { canonicalJson } from "../core/canonical-json.js";
import { sha256Hex } from "../core/digest.js";
import type { PyObject, PyValue } from "../core/pyvalue.js";
import { SETTINGS, redisUrlParts, resolveSettingsWithSources, type ResolvedSettings, type SettingName, type SettingSource } from "../config/settings.js";
import { redactRedisUrl } from "../config/redis-url.js";
import { logLevelFromEnv } from "../observability/log.js";
import { commandFlags } from "./command.js";
import { writeOut } from "./io.js";
import { CONFIG_EXPLAIN } from "./specs.js";

export const RECEIPT_SCHEMA = "mufold_config_receipt_v0";

type Entry = { source: SettingSource; value: PyValue } | { source: SettingSource; present: boolean; redacted: true };

/** The receipt of resolved settings: every value with its source, credentials as presence only, and the fingerprint. */
export function configReceipt(resolved: ResolvedSettings, env: NodeJS.ProcessEnv = process.env): PyObject {
  const { settings: s, sources } = resolved;
  const url = redisUrlParts(s.redisUrl);
  const entries: Record<string, Entry> = {};
  const plain = (name: SettingName, value: PyValue) => (entries[name] = { source: sources[name], value });
  const presence = (name: string, present: boolean, source: SettingSource) => (entries[name] = { source, present, redacted: true });

  plain("brokers", [...s.brokers].sort());
  // Parsed for display (redactRedisUrl): nothing before a stray '@' is shown.
  plain("redisUrl", redactRedisUrl(s.redisUrl, { keepUser: false }));
  plain("topic", s.topic);
  plain("group", s.group);
  plain("prefix", s.prefix);
  plain("reducerVersion", s.reducerVersion);
  plain("partitions", s.partitions);
  plain("replicationFactor", s.replicationFactor);
  plain("cacheSize", s.cacheSize);
  plain("maxValueBytes", s.maxValueBytes);
  plain("allowFiniteRetention", s.allowFiniteRetention);
  plain("allowEvictingPolicy", s.allowEvictingPolicy);
  plain("clientId", s.clientId);
  plain("sessionTimeoutMs", s.sessionTimeoutMs);
  plain("heartbeatIntervalMs", s.heartbeatIntervalMs);
  plain("outageToleranceSeconds", s.outageToleranceSeconds);
  plain("connectTimeoutMs", s.connectTimeoutMs);
  plain("pauseLeaseSeconds", s.pauseLeaseSeconds);
  plain("fetchMaxBytes", s.fetchMaxBytes);
  plain("partitionFetchMaxBytes", s.partitionFetchMaxBytes);
  plain("partitionsConcurrency", s.partitionsConcurrency);
  plain("identitiesInFlight", s.identitiesInFlight);
  plain("kafkaTls", s.kafkaTls);
  plain("kafkaTlsCa", s.kafkaTlsCa?.path ?? null);
  plain("kafkaSaslMechanism", s.kafkaSaslMechanism ?? null);
  presence("kafkaSaslUsername", s.kafkaSaslUsername !== undefined, sources.kafkaSaslUsername);
  presence(
    "kafkaSaslPassword",
    s.kafkaSaslPassword !== undefined,
    s.kafkaSaslPasswordFile !== undefined ? sources.kafkaSaslPasswordFile : sources.kafkaSaslPassword,
  );
  plain("kafkaSaslPasswordFile", s.kafkaSaslPasswordFile ?? null);
  plain("redisTlsCa", s.redisTlsCa?.path ?? null);
  plain("redisPasswordFile", s.redisPasswordFile ?? null);
  // What REDIS_URL carries, split out so that it can be shown without the credentials.
  entries.redisTls = { source: sources.redisUrl, value: url.tls };
  presence("redisUsername", url.username !== undefined, url.username !== undefined ? sources.redisUrl : "default");
  const redisPasswordSource: SettingSource = s.redisPassword !== undefined ? sources.redisPasswordFile : url.password !== undefined ? sources.redisUrl : "default";
  presence("redisPassword", s.redisPassword !== undefined || url.password !== undefined, redisPasswordSource);
  entries.logLevel = { source: env.MUFOLD_LOG_LEVEL === undefined ? "default" : "env", value: logLevelFromEnv(env) };

  const fingerprintInput: PyObject = { schema: RECEIPT_SCHEMA, settings: {} };
  const withSources: PyObject = {};
  for (const [name, entry] of Object.entries(entries)) {
    const { source, ...rest } = entry;
    (fingerprintInput.settings as PyObject)[name] = rest as PyObject;
    withSources[name] = { ...(rest as PyObject), source };
  }
  return { fingerprint: `sha256:${sha256Hex(canonicalJson(fingerprintInput))}`, schema: RECEIPT_SCHEMA, settings: withSources };
}

/** The receipt as a one-line canonical JSON text. */
export function configReceiptJson(resolved: ResolvedSettings, env: NodeJS.ProcessEnv = process.env): string {
  return canonicalJson(configReceipt(resolved, env));
}

/** `mufold config explain`: exit 0 with the receipt, or (through main's handler) exit 2 with the error. */
export async function configExplainCommand(args: string[]): Promise<number> {
  const values = await commandFlags(CONFIG_EXPLAIN, args);
  if (values === undefined) return 0;
  const resolved = resolveSettingsWithSources(values);
  await writeOut(configReceiptJson(resolved) + "\n");
  return 0;
}

/** Every setting name the receipt shows (the settings of config.ts and the derived ones). */
export const RECEIPT_SETTINGS = [...Object.keys(SETTINGS), "redisTls", "redisUsername", "redisPassword", "logLevel"].sort();
