/**
 * The one settings registry (src/config/settings.ts): its shape (unique
 * names, help, defaults that pass their own checks), the settings that moved
 * into it (change feed, HTTP, log level, retry budgets) with their checks and
 * errors, where the adapters take the retry budgets from, `config explain`
 * showing them all, the fingerprint covering what changes what is written,
 * and docs/operations.md and --help listing every setting.
 */
import { readFileSync } from "node:fs";
import type { Kafka } from "kafkajs";
import { describe, expect, it } from "vitest";
import { kafkaClientSettings, kafkaConfig } from "../../src/adapters/kafka/client.js";
import { GroupConsumer } from "../../src/adapters/kafka/consumer.js";
import { redisClientPlan, redisClientSettings } from "../../src/adapters/redis/connect.js";
import { RECEIPT_SETTINGS, configReceipt } from "../../src/cli/config-explain.js";
import { CONFIG_EXPLAIN, DEMO, FOLD, PRODUCE, READ, REPLAY, SERVE, SETUP, SIMULATE } from "../../src/cli/specs.js";
import {
  FINGERPRINT_SETTINGS,
  SETTINGS,
  SETTING_NAMES,
  resolveSettings,
  resolveSettingsWithSources,
  settingDefault,
  settingFlags,
  settingFromEnv,
  settingSpec,
  settingsEnv,
} from "../../src/config/settings.js";
import type { PyObject } from "../../src/core/pyvalue.js";
import { MufoldError } from "../../src/errors.js";
import { DEFAULT_CAS_ATTEMPTS } from "../../src/fold/identity-applier.js";

/** The message of the MufoldError a resolve throws. */
function refusal(env: Record<string, string>, flags: Record<string, string> = {}): string {
  try {
    resolveSettings(flags, env);
  } catch (err) {
    expect(err).toBeInstanceOf(MufoldError);
    return (err as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(env)} to be refused`);
}

describe("the registry", () => {
  const specs = SETTING_NAMES.map((name) => [name, settingSpec(name)] as const);

  it("names every environment variable and flag once", () => {
    const envs = specs.map(([, s]) => s.env);
    expect(new Set(envs).size).toBe(envs.length);
    const flags = specs.flatMap(([, s]) => (s.flag === undefined ? [] : [s.flag]));
    expect(new Set(flags).size).toBe(flags.length);
  });

  it("gives every setting a help text and a default that passes its own check", () => {
    for (const [name, spec] of specs) {
      expect(spec.help.trim().length, name).toBeGreaterThan(10);
      expect(() => settingFromEnv(name, {}), name).not.toThrow();
      // Written out, the default is the same setting as left unset.
      expect(resolveSettings({}, { [spec.env]: spec.default })[name], name).toEqual(resolveSettings({}, {})[name]);
    }
  });

  it("keeps secrets off the command line", () => {
    for (const [name, spec] of specs) if (spec.secret) expect(spec.flag, name).toBeUndefined();
  });

  it("lets no command's own flag shadow a setting flag", () => {
    const settingFlagNames = Object.keys(settingFlags());
    for (const spec of [PRODUCE, SIMULATE, FOLD, READ, REPLAY, SERVE, DEMO, SETUP, CONFIG_EXPLAIN]) {
      for (const flag of settingFlagNames) expect(spec.flags[flag], `${spec.name} --${flag}`).toEqual(settingFlags()[flag]);
    }
    // serve's own names of two settings are flags of serve only.
    expect(SERVE.flags.port).toEqual({ type: "string" });
    expect(settingFlags().port).toBeUndefined();
  });
});

describe("settingsEnv: what a spawned worker is given", () => {
  it("round-trips every setting of the registry through the environment", () => {
    const env = {
      MUFOLD_REDUCER_VERSION: "memory_utility_reducer_v1",
      MUFOLD_CACHE_SIZE: "7",
      MUFOLD_CHANGE_FEED: "off",
      MUFOLD_PROPOSALS_TOPIC: "review.proposals",
      MUFOLD_HTTP_PORT: "9001",
      MUFOLD_PARTITIONS: "3",
      MUFOLD_REPLICATION_FACTOR: "2",
      KAFKA_BROKERS: "b1:9092,b2:9093",
      MUFOLD_ALLOW_EVICTING_POLICY: "true",
      MUFOLD_KAFKA_RETRIES: "3",
    };
    for (const given of [{}, env]) {
      const settings = resolveSettings({}, given);
      const passed = settingsEnv(settings);
      // Every setting but the secret one is written out, by the registry's variable name.
      expect(Object.keys(passed).sort()).toEqual(SETTING_NAMES.filter((n) => SETTINGS[n].env !== "KAFKA_SASL_PASSWORD").map((n) => SETTINGS[n].env).sort());
      expect(resolveSettings({}, passed)).toEqual(settings);
    }
    expect(settingsEnv(resolveSettings({}, env))).toMatchObject({ MUFOLD_REDUCER_VERSION: "memory_utility_reducer_v1", MUFOLD_CACHE_SIZE: "7", KAFKA_BROKERS: "b1:9092,b2:9093" });
  });
});

describe("integer settings", () => {
  it("refuse an empty value, hex, exponents and signs instead of reading them as numbers", () => {
    for (const [env, bad] of [
      ["MUFOLD_OUTAGE_TOLERANCE_SECONDS", ""],
      ["MUFOLD_OUTAGE_TOLERANCE_SECONDS", " "],
      ["MUFOLD_SESSION_TIMEOUT_MS", "0x2710"],
      ["MUFOLD_CACHE_SIZE", "1e3"],
      ["MUFOLD_PARTITIONS", "+4"],
      ["MUFOLD_FETCH_MAX_BYTES", "4194304.5"],
    ] as const) {
      expect(() => resolveSettings({}, { [env]: bad }), `${env}=${JSON.stringify(bad)}`).toThrow(new RegExp(`${env}.*must be an integer`));
    }
    expect(resolveSettings({}, { MUFOLD_SESSION_TIMEOUT_MS: " 10000 " }).sessionTimeoutMs).toBe(10_000);
  });
});

describe("the settings that moved into the registry", () => {
  it("have today's defaults", () => {
    const s = resolveSettings({}, {});
    expect({
      changeFeed: s.changeFeed,
      changeFeedMaxLen: s.changeFeedMaxLen,
      proposalsTopic: s.proposalsTopic,
      httpPort: s.httpPort,
      httpHost: s.httpHost,
      logLevel: s.logLevel,
      casMaxAttempts: s.casMaxAttempts,
      redisMaxRetriesPerRequest: s.redisMaxRetriesPerRequest,
      foldRedisMaxRetriesPerRequest: s.foldRedisMaxRetriesPerRequest,
      foldRedisCommandTimeoutMs: s.foldRedisCommandTimeoutMs,
      kafkaRetries: s.kafkaRetries,
      kafkaInitialRetryTimeMs: s.kafkaInitialRetryTimeMs,
      kafkaMaxRetryTimeMs: s.kafkaMaxRetryTimeMs,
      kafkaConsumerRetries: s.kafkaConsumerRetries,
    }).toEqual({
      changeFeed: true,
      changeFeedMaxLen: 100_000,
      proposalsTopic: null,
      httpPort: undefined,
      httpHost: "127.0.0.1",
      logLevel: "info",
      casMaxAttempts: 20,
      redisMaxRetriesPerRequest: 20,
      foldRedisMaxRetriesPerRequest: 1,
      foldRedisCommandTimeoutMs: 10_000,
      kafkaRetries: 8,
      kafkaInitialRetryTimeMs: 200,
      kafkaMaxRetryTimeMs: 5_000,
      kafkaConsumerRetries: 10,
    });
  });

  it("take their environment variables (the change feed as before: on/off words, trimmed, any case)", () => {
    const s = resolveSettings({}, { MUFOLD_CHANGE_FEED: "off", MUFOLD_CHANGE_FEED_MAXLEN: "500", MUFOLD_PROPOSALS_TOPIC: "review.proposals" });
    expect([s.changeFeed, s.changeFeedMaxLen, s.proposalsTopic]).toEqual([false, 500, "review.proposals"]);
    for (const on of ["on", "ON", " true ", "1", "yes"]) expect(resolveSettings({}, { MUFOLD_CHANGE_FEED: on }).changeFeed, on).toBe(true);
    for (const off of ["off", "False", "0", "no "]) expect(resolveSettings({}, { MUFOLD_CHANGE_FEED: off }).changeFeed, off).toBe(false);
    expect(resolveSettings({}, { MUFOLD_PROPOSALS_TOPIC: "  " }).proposalsTopic).toBeNull();
    const t = resolveSettings(
      {},
      {
        MUFOLD_LOG_LEVEL: "silent",
        MUFOLD_CAS_MAX_ATTEMPTS: "5",
        MUFOLD_REDIS_MAX_RETRIES_PER_REQUEST: "0",
        MUFOLD_FOLD_REDIS_MAX_RETRIES_PER_REQUEST: "3",
        MUFOLD_FOLD_REDIS_COMMAND_TIMEOUT_MS: "2500",
        MUFOLD_KAFKA_RETRIES: "2",
        MUFOLD_KAFKA_INITIAL_RETRY_TIME_MS: "50",
        MUFOLD_KAFKA_MAX_RETRY_TIME_MS: "50",
        MUFOLD_KAFKA_CONSUMER_RETRIES: "0",
      },
    );
    expect([t.logLevel, t.casMaxAttempts, t.redisMaxRetriesPerRequest, t.foldRedisMaxRetriesPerRequest, t.foldRedisCommandTimeoutMs]).toEqual(["silent", 5, 0, 3, 2500]);
    expect([t.kafkaRetries, t.kafkaInitialRetryTimeMs, t.kafkaMaxRetryTimeMs, t.kafkaConsumerRetries]).toEqual([2, 50, 50, 0]);
  });

  const refused: [Record<string, string>, string][] = [
    [{ MUFOLD_CHANGE_FEED: "maybe" }, 'invalid setting changeFeed (MUFOLD_CHANGE_FEED) = "maybe": must be on or off'],
    [{ MUFOLD_CHANGE_FEED: "" }, 'invalid setting changeFeed (MUFOLD_CHANGE_FEED) = "": must be on or off'],
    [{ MUFOLD_CHANGE_FEED_MAXLEN: "0" }, 'invalid setting changeFeedMaxLen (MUFOLD_CHANGE_FEED_MAXLEN) = "0": must be a positive integer'],
    [{ MUFOLD_CHANGE_FEED_MAXLEN: "1e5" }, 'invalid setting changeFeedMaxLen (MUFOLD_CHANGE_FEED_MAXLEN) = "1e5": must be a positive integer'],
    [{ MUFOLD_CHANGE_FEED_MAXLEN: "-5" }, 'invalid setting changeFeedMaxLen (MUFOLD_CHANGE_FEED_MAXLEN) = "-5": must be a positive integer'],
    [{ MUFOLD_PROPOSALS_TOPIC: "bad topic" }, 'invalid setting proposalsTopic (MUFOLD_PROPOSALS_TOPIC) = "bad topic": must be a valid Kafka topic name (or empty for none)'],
    [{ MUFOLD_HTTP_PORT: "65536" }, 'invalid setting httpPort (--http-port / MUFOLD_HTTP_PORT) = "65536": must be a port number from 0 to 65535'],
    [{ MUFOLD_HTTP_HOST: "" }, 'invalid setting httpHost (--http-host / MUFOLD_HTTP_HOST) = "": must not be empty'],
    [{ MUFOLD_LOG_LEVEL: "INFO" }, 'invalid setting logLevel (MUFOLD_LOG_LEVEL) = "INFO": must be one of debug, info, warn, error, silent'],
    [{ MUFOLD_CAS_MAX_ATTEMPTS: "0" }, 'invalid setting casMaxAttempts (MUFOLD_CAS_MAX_ATTEMPTS) = "0": must be an integer from 1 to 1000'],
    [{ MUFOLD_REDIS_MAX_RETRIES_PER_REQUEST: "" }, 'invalid setting redisMaxRetriesPerRequest (MUFOLD_REDIS_MAX_RETRIES_PER_REQUEST) = "": must be an integer from 0 to 1000'],
    [{ MUFOLD_FOLD_REDIS_MAX_RETRIES_PER_REQUEST: "1.5" }, 'invalid setting foldRedisMaxRetriesPerRequest (MUFOLD_FOLD_REDIS_MAX_RETRIES_PER_REQUEST) = "1.5": must be an integer from 0 to 100'],
    [{ MUFOLD_FOLD_REDIS_COMMAND_TIMEOUT_MS: "99" }, 'invalid setting foldRedisCommandTimeoutMs (MUFOLD_FOLD_REDIS_COMMAND_TIMEOUT_MS) = "99": must be an integer from 100 to 600000'],
    [{ MUFOLD_KAFKA_RETRIES: "ten" }, 'invalid setting kafkaRetries (MUFOLD_KAFKA_RETRIES) = "ten": must be an integer from 0 to 100'],
    [{ MUFOLD_KAFKA_INITIAL_RETRY_TIME_MS: "0" }, 'invalid setting kafkaInitialRetryTimeMs (MUFOLD_KAFKA_INITIAL_RETRY_TIME_MS) = "0": must be an integer from 1 to 60000'],
    [{ MUFOLD_KAFKA_MAX_RETRY_TIME_MS: "0x10" }, 'invalid setting kafkaMaxRetryTimeMs (MUFOLD_KAFKA_MAX_RETRY_TIME_MS) = "0x10": must be an integer from 1 to 600000'],
    [
      { MUFOLD_KAFKA_INITIAL_RETRY_TIME_MS: "300", MUFOLD_KAFKA_MAX_RETRY_TIME_MS: "200" },
      'invalid setting kafkaMaxRetryTimeMs (MUFOLD_KAFKA_MAX_RETRY_TIME_MS) = "200": must be at least kafkaInitialRetryTimeMs (MUFOLD_KAFKA_INITIAL_RETRY_TIME_MS) = 300',
    ],
    [{ MUFOLD_KAFKA_CONSUMER_RETRIES: "101" }, 'invalid setting kafkaConsumerRetries (MUFOLD_KAFKA_CONSUMER_RETRIES) = "101": must be an integer from 0 to 100'],
    [{ KAFKA_BROKERS: " , " }, 'invalid setting brokers (--brokers / KAFKA_BROKERS) = " , ": at least one broker'],
    [{ KAFKA_BROKERS: "a:9092,localhost" }, 'invalid setting brokers (--brokers / KAFKA_BROKERS) = "a:9092,localhost": each broker must be host:port'],
    [{ MUFOLD_GROUP: "" }, 'invalid setting group (--group / MUFOLD_GROUP) = "": must not be empty'],
    [{ MUFOLD_REPLICATION_FACTOR: "0" }, 'invalid setting replicationFactor (--replication-factor / MUFOLD_REPLICATION_FACTOR) = "0": must be broker (the broker\'s default.replication.factor) or an integer from 1 to 32767'],
    // Two broken: the first in the settings' order is the one named.
    [{ MUFOLD_TOPIC: "bad topic", MUFOLD_CAS_MAX_ATTEMPTS: "0" }, 'invalid setting topic (--topic / MUFOLD_TOPIC) = "bad topic": must be a valid Kafka topic name'],
  ];
  for (const [env, message] of refused) {
    it(`refuse ${JSON.stringify(env)}, naming the variable`, () => {
      expect(refusal(env)).toBe(message);
    });
  }

  it("the log level read alone, before the flags, follows the same rule", () => {
    expect(settingFromEnv("logLevel", {})).toBe("info");
    expect(settingFromEnv("logLevel", { MUFOLD_LOG_LEVEL: "debug" })).toBe("debug");
    expect(() => settingFromEnv("logLevel", { MUFOLD_LOG_LEVEL: "verbose" })).toThrow('invalid setting logLevel (MUFOLD_LOG_LEVEL) = "verbose": must be one of debug, info, warn, error, silent');
  });
});

describe("the retry budgets reach the clients", () => {
  it("kafkajs: the client retry from the settings, and the registry's defaults for a client built without them", () => {
    const tuned = resolveSettings({}, { MUFOLD_KAFKA_RETRIES: "3", MUFOLD_KAFKA_INITIAL_RETRY_TIME_MS: "100", MUFOLD_KAFKA_MAX_RETRY_TIME_MS: "900" });
    expect(kafkaConfig(kafkaClientSettings(tuned)).retry).toEqual({ retries: 3, initialRetryTime: 100, maxRetryTime: 900 });
    expect(kafkaConfig({ brokers: ["b:9092"], clientId: "c" }).retry).toEqual({ retries: 8, initialRetryTime: 200, maxRetryTime: 5_000 });
  });

  it("kafkajs: the group consumer's retries from its options, else the registry's default", async () => {
    const seen: unknown[] = [];
    const kafka = {
      consumer: (config: { retry?: unknown }) => {
        seen.push(config.retry);
        return { events: {}, on: () => undefined, connect: async () => Promise.reject(new Error("no broker here")) };
      },
    } as unknown as Kafka;
    const options = { groupId: "g", topic: "t", fromBeginning: true, onBatch: async () => undefined };
    await expect(GroupConsumer.start(kafka, { ...options, retries: 2 })).rejects.toThrow("no broker here");
    await expect(GroupConsumer.start(kafka, options)).rejects.toThrow("no broker here");
    expect(seen).toEqual([{ retries: 2 }, { retries: 10 }]);
  });

  it("ioredis: maxRetriesPerRequest from the settings, the registry's default for a bare URL", () => {
    const plan = redisClientPlan(redisClientSettings(resolveSettings({}, { MUFOLD_REDIS_MAX_RETRIES_PER_REQUEST: "4" })));
    expect(plan.kind === "node" && plan.options.maxRetriesPerRequest).toBe(4);
    const bare = redisClientPlan("redis://127.0.0.1:6379");
    expect(bare.kind === "node" && bare.options.maxRetriesPerRequest).toBe(20);
  });

  it("the fold engine's own fallback is the casMaxAttempts default (the engine reads no settings)", () => {
    expect(DEFAULT_CAS_ATTEMPTS).toBe(settingDefault("casMaxAttempts"));
    expect(SETTINGS.casMaxAttempts.default).toBe("20");
  });
});

describe("mufold config explain and the fingerprint", () => {
  const receipt = (env: Record<string, string>) => configReceipt(resolveSettingsWithSources({}, env));
  const fingerprint = (env: Record<string, string>) => receipt(env).fingerprint;

  it("lists every setting of the registry, with its value and source", () => {
    for (const name of SETTING_NAMES) expect(RECEIPT_SETTINGS, name).toContain(name);
    const settings = receipt({ MUFOLD_CHANGE_FEED: "off", MUFOLD_KAFKA_RETRIES: "3", MUFOLD_HTTP_PORT: "9100" }).settings as Record<string, PyObject>;
    expect(Object.keys(settings).sort()).toEqual(RECEIPT_SETTINGS);
    expect(settings.changeFeed).toEqual({ source: "env", value: false });
    expect(settings.changeFeedMaxLen).toEqual({ source: "default", value: 100_000 });
    expect(settings.proposalsTopic).toEqual({ source: "default", value: null });
    expect(settings.httpPort).toEqual({ source: "env", value: 9100 });
    expect(settings.httpHost).toEqual({ source: "default", value: "127.0.0.1" });
    expect(settings.kafkaRetries).toEqual({ source: "env", value: 3 });
    expect(settings.casMaxAttempts).toEqual({ source: "default", value: 20 });
    expect(settings.logLevel).toEqual({ source: "default", value: "info" });
    expect((receipt({ MUFOLD_LOG_LEVEL: "warn" }).settings as Record<string, PyObject>).logLevel).toEqual({ source: "env", value: "warn" });
  });

  it("fingerprints the change feed: MUFOLD_CHANGE_FEED, its stream cap and the proposals topic change what is written", () => {
    const reference = fingerprint({});
    expect(fingerprint({ MUFOLD_CHANGE_FEED: "off" })).not.toBe(reference);
    expect(fingerprint({ MUFOLD_CHANGE_FEED_MAXLEN: "500" })).not.toBe(reference);
    expect(fingerprint({ MUFOLD_PROPOSALS_TOPIC: "review.proposals" })).not.toBe(reference);
    // The same effective value, however it is spelled.
    expect(fingerprint({ MUFOLD_CHANGE_FEED: " YES " })).toBe(reference);
  });

  it("does not fingerprint what leaves the written bytes alone: log level, retry budgets, HTTP, memory", () => {
    const reference = fingerprint({});
    const unfingerprinted: Record<string, string>[] = [
      { MUFOLD_LOG_LEVEL: "debug" },
      { MUFOLD_CAS_MAX_ATTEMPTS: "3" },
      { MUFOLD_KAFKA_RETRIES: "2" },
      { MUFOLD_FOLD_REDIS_COMMAND_TIMEOUT_MS: "500" },
      { MUFOLD_HTTP_PORT: "9100" },
      { MUFOLD_CACHE_SIZE: "5" },
      { MUFOLD_CONNECT_TIMEOUT_MS: "2000" },
    ];
    for (const env of unfingerprinted) {
      expect(fingerprint(env), JSON.stringify(env)).toBe(reference);
    }
  });

  it("names the fingerprinted settings in the receipt and in config explain --help", () => {
    expect(receipt({}).fingerprinted).toEqual([...FINGERPRINT_SETTINGS].sort());
    for (const name of ["changeFeed", "changeFeedMaxLen", "proposalsTopic", "topic", "prefix", "reducerVersion"]) expect(FINGERPRINT_SETTINGS, name).toContain(name);
    for (const name of ["logLevel", "casMaxAttempts", "kafkaRetries", "httpPort"]) expect(FINGERPRINT_SETTINGS, name).not.toContain(name);
    const help = CONFIG_EXPLAIN.usage.replace(/\s+/g, " ");
    for (const name of FINGERPRINT_SETTINGS) expect(help, name).toMatch(new RegExp(`[ ,]${name}[,.]`));
  });
});

describe("every setting is listed", () => {
  it("by --help, with its variable and default", () => {
    for (const name of SETTING_NAMES) {
      const spec = settingSpec(name);
      expect(FOLD.usage, name).toContain(spec.flag === undefined ? `  ${spec.env}` : `--${spec.flag} / ${spec.env}`);
      if (spec.default !== "") expect(FOLD.usage, name).toContain(`${spec.env} [${spec.default}]`);
    }
  });

  it("by docs/operations.md's Settings section, with its flag, default and fingerprint mark", () => {
    const page = readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8");
    const start = page.indexOf("## Settings\n");
    expect(start).toBeGreaterThanOrEqual(0);
    const section = page.slice(start, page.indexOf("\n## ", start + 1));
    const rows = new Map(
      section
        .split("\n")
        .filter((line) => line.startsWith("| ") && line.includes("`"))
        .map((line) => {
          const cells = line.split(" | ").map((c) => c.replace(/^\| ?| ?\|$/g, "").trim());
          return [cells[1]!.replaceAll("`", ""), cells] as const;
        }),
    );
    for (const name of SETTING_NAMES) {
      const spec = settingSpec(name);
      const row = rows.get(spec.env);
      expect(row, spec.env).toBeDefined();
      expect(row![0], spec.env).toBe(spec.flag === undefined ? "" : `\`--${spec.flag}\``);
      if (spec.default !== "") expect(row![2], spec.env).toBe(`\`${spec.default}\``);
      expect(row![3]!.startsWith("✓"), spec.env).toBe(spec.fingerprint === true);
    }
    expect(rows.size).toBe(SETTING_NAMES.length);
  });
});
