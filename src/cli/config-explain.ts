/**
 * `mufold config explain [setting flags]`: the effective configuration as a
 * content-free JSON receipt (schema `mufold_config_receipt_v1`), one line of
 * canonical JSON on stdout:
 *
 *   {"fingerprint":"sha256:…","fingerprinted":[…],"schema":"mufold_config_receipt_v1","settings":{"<name>":{"source":"flag"|"env"|"default","value":…},…}}
 *
 * Every setting of the registry (src/config/settings.ts) is there, plus what
 * REDIS_URL carries (`redisUsername`, `redisPassword`, `redisTls`).
 * Credentials are never shown: the Kafka SASL username and password and the
 * Redis user and password appear as `{"present":true|false,"redacted":true,"source":…}`,
 * and redisUrl is shown without its user and password. Hosts, ports, topic,
 * prefix and file paths do appear; file contents (CA certificates, password
 * files) never do. An unset optional setting shows as null.
 *
 * `fingerprint` is `sha256:` + sha256 of the canonical JSON of
 * `{"schema", "settings"}` where settings holds only the `fingerprinted` ones
 * (those that change what mufold writes to Kafka or Redis, or where: the
 * registry's `fingerprint` mark), without their `source`: hosts that write
 * the same bytes to the same places share it whatever their order or source
 * of settings, log level, timeouts, retry budgets, HTTP or credentials.
 * Brokers are listed sorted (a bootstrap set).
 *
 * An invalid configuration exits 2 with the error on stderr (naming the
 * setting, never a secret).
 */
import { canonicalJson } from "../core/canonical-json.js";
import { sha256Hex } from "../core/digest.js";
import type { PyObject, PyValue } from "../core/pyvalue.js";
import {
  FINGERPRINT_SETTINGS,
  SETTINGS,
  SETTING_NAMES,
  redisUrlParts,
  resolveSettingsWithSources,
  settingSpec,
  type ResolvedSettings,
  type SettingName,
  type SettingSource,
  type Settings,
} from "../config/settings.js";
import { redactRedisUrl } from "../config/redis-url.js";
import { commandFlags } from "./command.js";
import { writeOut } from "./io.js";
import { CONFIG_EXPLAIN } from "./specs.js";

export const RECEIPT_SCHEMA = "mufold_config_receipt_v1";

type Entry = { source: SettingSource; value: PyValue } | { source: SettingSource; present: boolean; redacted: true };

/** Settings whose value is not shown as it is: a sorted list, a URL without credentials, a file's path, a credential. */
const SHOWN: Partial<Record<SettingName, (s: Settings, sources: Record<SettingName, SettingSource>) => Entry>> = {
  brokers: (s, src) => ({ source: src.brokers, value: [...s.brokers].sort() }),
  // Parsed for display (redactRedisUrl): nothing before a stray '@' is shown.
  redisUrl: (s, src) => ({ source: src.redisUrl, value: redactRedisUrl(s.redisUrl, { keepUser: false }) }),
  kafkaTlsCa: (s, src) => ({ source: src.kafkaTlsCa, value: s.kafkaTlsCa?.path ?? null }),
  redisTlsCa: (s, src) => ({ source: src.redisTlsCa, value: s.redisTlsCa?.path ?? null }),
  kafkaSaslUsername: (s, src) => ({ source: src.kafkaSaslUsername, present: s.kafkaSaslUsername !== undefined, redacted: true }),
  kafkaSaslPassword: (s, src) => ({
    source: s.kafkaSaslPasswordFile !== undefined ? src.kafkaSaslPasswordFile : src.kafkaSaslPassword,
    present: s.kafkaSaslPassword !== undefined,
    redacted: true,
  }),
};

/** A plain setting's value as JSON: a string, number, boolean or list of strings; unset is null. Anything else is a bug here, not a leak. */
function plainValue(name: SettingName, value: unknown): PyValue {
  if (value === undefined || value === null) return null;
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number" && Number.isInteger(value)) return value;
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value as string[];
  throw new Error(`config explain: setting ${name} has a value it does not know how to show`);
}

/** The receipt of resolved settings: every value with its source, credentials as presence only, and the fingerprint. */
export function configReceipt(resolved: ResolvedSettings): PyObject {
  const { settings: s, sources } = resolved;
  const entries: Record<string, Entry> = {};
  for (const name of SETTING_NAMES) {
    const show = SHOWN[name];
    if (show !== undefined) entries[name] = show(s, sources);
    else if (settingSpec(name).secret) throw new Error(`config explain: secret setting ${name} has no redacted form`);
    else entries[name] = { source: sources[name], value: plainValue(name, s[name]) };
  }
  // What REDIS_URL carries, split out so that it can be shown without the credentials.
  const url = redisUrlParts(s.redisUrl);
  const presence = (present: boolean, source: SettingSource): Entry => ({ source, present, redacted: true });
  entries.redisTls = { source: sources.redisUrl, value: url.tls };
  entries.redisUsername = presence(url.username !== undefined, url.username !== undefined ? sources.redisUrl : "default");
  const redisPasswordSource: SettingSource = s.redisPassword !== undefined ? sources.redisPasswordFile : url.password !== undefined ? sources.redisUrl : "default";
  entries.redisPassword = presence(s.redisPassword !== undefined || url.password !== undefined, redisPasswordSource);

  const fingerprinted: PyObject = {};
  const withSources: PyObject = {};
  for (const [name, entry] of Object.entries(entries)) {
    const { source, ...rest } = entry;
    if ((FINGERPRINT_SETTINGS as readonly string[]).includes(name)) fingerprinted[name] = rest as PyObject;
    withSources[name] = { ...(rest as PyObject), source };
  }
  const fingerprint = `sha256:${sha256Hex(canonicalJson({ schema: RECEIPT_SCHEMA, settings: fingerprinted }))}`;
  return { fingerprint, fingerprinted: [...FINGERPRINT_SETTINGS].sort(), schema: RECEIPT_SCHEMA, settings: withSources };
}

/** The receipt as a one-line canonical JSON text. */
export function configReceiptJson(resolved: ResolvedSettings): string {
  return canonicalJson(configReceipt(resolved));
}

/** `mufold config explain`: exit 0 with the receipt, or (through main's handler) exit 2 with the error. */
export async function configExplainCommand(args: string[]): Promise<number> {
  const values = await commandFlags(CONFIG_EXPLAIN, args);
  if (values === undefined) return 0;
  const resolved = resolveSettingsWithSources(values);
  await writeOut(configReceiptJson(resolved) + "\n");
  return 0;
}

/** Every setting name the receipt shows (the registry's and the ones REDIS_URL carries). */
export const RECEIPT_SETTINGS = [...Object.keys(SETTINGS), "redisTls", "redisUsername", "redisPassword"].sort();
