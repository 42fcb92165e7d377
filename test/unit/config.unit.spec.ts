/**
 * Security settings: every validation error, the settings → kafkajs and
 * ioredis option mapping, the config receipt's redaction and fingerprint, and
 * docs/security.md showing the ACL rules of infra/redis-acl/roles.acl.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { kafkaClientSettings, kafkaConfig } from "../../src/adapters/kafka/client.js";
import { redisClientPlan, redisClientSettings } from "../../src/adapters/redis/connect.js";
import { RECEIPT_SCHEMA, RECEIPT_SETTINGS, configReceipt, configReceiptJson } from "../../src/cli/config-explain.js";
import { SETTINGS, Secret, resolveSettings, resolveSettingsWithSources, settingFlags } from "../../src/config/settings.js";
import { canonicalJson } from "../../src/core/canonical-json.js";
import { sha256Hex } from "../../src/core/digest.js";
import type { PyObject } from "../../src/core/pyvalue.js";

const require = createRequire(import.meta.url);
const dir = mkdtempSync(join(tmpdir(), "mufold-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUTESTONLY\n-----END CERTIFICATE-----\n";
function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}
const ca = file("ca.pem", PEM);
const notPem = file("not.pem", "hello\n");
const kafkaPasswordFile = file("kafka-password", "file-kafka-secret\n");
const redisPasswordFile = file("redis-password", "file-redis-secret\r\n");
const emptyFile = file("empty", "\n");
const twoLines = file("two-lines", "a\nb\n");
const missing = join(dir, "missing.pem");

const SASL = { KAFKA_SASL_MECHANISM: "scram-sha-512", KAFKA_SASL_USERNAME: "alice", KAFKA_SASL_PASSWORD: "env-kafka-secret" };
const SECRETS = ["env-kafka-secret", "file-kafka-secret", "file-redis-secret", "url-redis-secret", "flag-redis-secret"];

/** The error message of a resolve, or "" when it succeeded. */
function errorOf(flags: Record<string, string | boolean>, env: Record<string, string>): string {
  try {
    resolveSettings(flags, env);
    return "";
  } catch (err) {
    return (err as Error).message;
  }
}

describe("security settings", () => {
  it("default to no TLS, no SASL, no Redis credentials", () => {
    const s = resolveSettings({}, {});
    expect(s).toMatchObject({ kafkaTls: false, kafkaTlsCa: undefined, kafkaSaslMechanism: undefined, kafkaSaslUsername: undefined, kafkaSaslPassword: undefined });
    expect(s).toMatchObject({ redisTlsCa: undefined, redisPassword: undefined, redisPasswordFile: undefined, redisUrl: "redis://127.0.0.1:6379" });
  });

  it("are flags (the password only a file flag) and environment variables; the flag wins", () => {
    const flags = settingFlags();
    expect(flags).toMatchObject({
      "kafka-tls": { type: "boolean" },
      "kafka-tls-ca": { type: "string" },
      "kafka-sasl-mechanism": { type: "string" },
      "kafka-sasl-username": { type: "string" },
      "kafka-sasl-password-file": { type: "string" },
      "redis-tls-ca": { type: "string" },
      "redis-password-file": { type: "string" },
      "allow-finite-retention": { type: "boolean" },
    });
    expect(Object.keys(flags).some((f) => /password$/.test(f))).toBe(false);
    expect(SETTINGS.kafkaSaslPassword).not.toHaveProperty("flag");
    const s = resolveSettings({ "kafka-tls": true, "kafka-sasl-username": "bob" }, { ...SASL, KAFKA_TLS: "false" });
    expect(s.kafkaTls).toBe(true);
    expect(s.kafkaSaslUsername).toBe("bob");
    // Unknown flags named like the password do not exist, so a password never reaches argv.
    expect(resolveSettings({ "kafka-sasl-password": "x" }, SASL).kafkaSaslPassword?.reveal()).toBe("env-kafka-secret");
  });

  it("read the CA files and password files at start", () => {
    const s = resolveSettings(
      { "kafka-tls": true, "kafka-tls-ca": ca, "kafka-sasl-mechanism": "SCRAM-SHA-256", "kafka-sasl-username": "bob", "kafka-sasl-password-file": kafkaPasswordFile },
      { REDIS_URL: "rediss://fold@redis.example:6380/0", REDIS_TLS_CA: ca, REDIS_PASSWORD_FILE: redisPasswordFile },
    );
    expect(s.kafkaTlsCa).toEqual({ path: ca, pem: PEM });
    expect(s.kafkaSaslMechanism).toBe("scram-sha-256");
    expect(s.kafkaSaslPassword?.reveal()).toBe("file-kafka-secret");
    expect(s.redisTlsCa).toEqual({ path: ca, pem: PEM });
    expect(s.redisPassword?.reveal()).toBe("file-redis-secret");
    for (const mechanism of ["plain", "scram-sha-256", "scram-sha-512"]) {
      expect(resolveSettings({}, { ...SASL, KAFKA_SASL_MECHANISM: mechanism }).kafkaSaslMechanism).toBe(mechanism);
    }
    expect(resolveSettings({}, { REDIS_URL: "redis+cluster://fold:url-redis-secret@h1:7100,h2:7101" }).redisUrl).toContain("h2:7101");
    expect(resolveSettings({}, { REDIS_URL: "rediss+cluster://fold@h1:7100", REDIS_PASSWORD_FILE: redisPasswordFile, REDIS_TLS_CA: ca }).redisPassword?.reveal()).toBe("file-redis-secret");
  });

  const invalid: [string, Record<string, string | boolean>, Record<string, string>, RegExp][] = [
    ["an unknown SASL mechanism", {}, { ...SASL, KAFKA_SASL_MECHANISM: "gssapi" }, /^invalid setting kafkaSaslMechanism \(--kafka-sasl-mechanism \/ KAFKA_SASL_MECHANISM\) = "gssapi": must be one of plain, scram-sha-256, scram-sha-512$/],
    ["a mechanism without a username", {}, { KAFKA_SASL_MECHANISM: "plain", KAFKA_SASL_PASSWORD: "env-kafka-secret" }, /^invalid setting kafkaSaslMechanism .*SASL needs a username: set kafkaSaslUsername \(--kafka-sasl-username \/ KAFKA_SASL_USERNAME\)$/],
    ["a mechanism without a password", {}, { KAFKA_SASL_MECHANISM: "plain", KAFKA_SASL_USERNAME: "alice" }, /^invalid setting kafkaSaslMechanism .*SASL needs a password: set KAFKA_SASL_PASSWORD or kafkaSaslPasswordFile/],
    ["a username without a mechanism", {}, { KAFKA_SASL_USERNAME: "alice" }, /^invalid setting kafkaSaslUsername \(--kafka-sasl-username \/ KAFKA_SASL_USERNAME\) = "alice": a SASL username needs a mechanism/],
    ["a password without a mechanism", {}, { KAFKA_SASL_PASSWORD: "env-kafka-secret" }, /^invalid setting kafkaSaslPassword \(KAFKA_SASL_PASSWORD\) = \[redacted\]: a SASL password needs a mechanism/],
    ["a password file without a mechanism", { "kafka-sasl-password-file": kafkaPasswordFile }, {}, /^invalid setting kafkaSaslPasswordFile .*a SASL password needs a mechanism/],
    ["a password and a password file", { "kafka-sasl-password-file": kafkaPasswordFile }, SASL, /^invalid setting kafkaSaslPasswordFile .*also set in KAFKA_SASL_PASSWORD: set only one of them$/],
    ["an unreadable SASL password file", { "kafka-sasl-password-file": missing }, { ...SASL, KAFKA_SASL_PASSWORD: "" }, /^invalid setting kafkaSaslPasswordFile .*missing\.pem": cannot read the file \(ENOENT\)$/],
    ["an empty SASL password file", { "kafka-sasl-password-file": emptyFile }, { ...SASL, KAFKA_SASL_PASSWORD: "" }, /^invalid setting kafkaSaslPasswordFile .*the file is empty$/],
    ["a SASL password file of two lines", { "kafka-sasl-password-file": twoLines }, { ...SASL, KAFKA_SASL_PASSWORD: "" }, /^invalid setting kafkaSaslPasswordFile .*one line$/],
    ["KAFKA_TLS not a boolean", {}, { KAFKA_TLS: "yes" }, /^invalid setting kafkaTls \(--kafka-tls \/ KAFKA_TLS\) = "yes": must be true, false, 1 or 0$/],
    ["a Kafka CA without TLS", { "kafka-tls-ca": ca }, {}, /^invalid setting kafkaTlsCa \(--kafka-tls-ca \/ KAFKA_TLS_CA\) = ".*ca\.pem": a CA needs TLS: set kafkaTls \(--kafka-tls \/ KAFKA_TLS\) too$/],
    ["an unreadable Kafka CA", { "kafka-tls": true, "kafka-tls-ca": missing }, {}, /^invalid setting kafkaTlsCa .*: cannot read the file \(ENOENT\)$/],
    ["a Kafka CA that is not PEM", { "kafka-tls": true, "kafka-tls-ca": notPem }, {}, /^invalid setting kafkaTlsCa .*: is not a PEM file of CA certificates/],
    ["a Redis CA with redis://", {}, { REDIS_TLS_CA: ca }, /^invalid setting redisTlsCa \(--redis-tls-ca \/ REDIS_TLS_CA\) = .*: a CA needs TLS: redisUrl \(--redis-url \/ REDIS_URL\) must be rediss:\/\/ or rediss\+cluster:\/\/, not redis:\/\/$/],
    ["a Redis CA with redis+cluster://", {}, { REDIS_URL: "redis+cluster://h1:7100", REDIS_TLS_CA: ca }, /^invalid setting redisTlsCa .*not redis\+cluster:\/\/$/],
    ["an unreadable Redis CA", { "redis-tls-ca": missing }, { REDIS_URL: "rediss://h:6380" }, /^invalid setting redisTlsCa .*cannot read the file \(ENOENT\)$/],
    ["a Redis CA that is not PEM", { "redis-tls-ca": notPem }, { REDIS_URL: "rediss://h:6380" }, /^invalid setting redisTlsCa .*is not a PEM file/],
    ["a password file and a password in the URL", { "redis-password-file": redisPasswordFile }, { REDIS_URL: "redis://fold:url-redis-secret@h:6379" }, /^invalid setting redisPasswordFile .*already has a password: set only one of them$/],
    ["a password file and a password in a cluster URL", { "redis-password-file": redisPasswordFile }, { REDIS_URL: "redis+cluster://fold:url-redis-secret@h:7100" }, /^invalid setting redisPasswordFile .*already has a password/],
    ["a Redis user without a password", {}, { REDIS_URL: "redis://fold@h:6379" }, /^invalid setting redisUrl \(--redis-url \/ REDIS_URL\) = "redis:\/\/fold@h:6379": has a user but no password/],
    ["an unreadable Redis password file", { "redis-password-file": missing }, {}, /^invalid setting redisPasswordFile .*cannot read the file \(ENOENT\)$/],
    ["an empty Redis password file", { "redis-password-file": emptyFile }, {}, /^invalid setting redisPasswordFile .*the file is empty$/],
    ["a bad Redis URL, shown without its password", { "redis-url": "redis+cluster://fold:flag-redis-secret@h1" }, {}, /^invalid setting redisUrl .* = "redis\+cluster:\/\/fold:\*\*\*@h1": must be/],
  ];
  for (const [what, flags, env, expected] of invalid) {
    it(`refuse ${what}, naming the setting and no secret`, () => {
      const message = errorOf(flags, env);
      expect(message).toMatch(expected);
      for (const secret of SECRETS) expect(message).not.toContain(secret);
    });
  }

  it("keep passwords in Secrets that never print", () => {
    const s = resolveSettings({}, SASL);
    const secret = s.kafkaSaslPassword!;
    expect(secret).toBeInstanceOf(Secret);
    expect(secret.reveal()).toBe("env-kafka-secret");
    expect(String(secret)).toBe("[redacted]");
    expect(JSON.stringify(s)).not.toContain("env-kafka-secret");
    expect(inspect(s, { depth: 5 })).not.toContain("env-kafka-secret");
    expect(JSON.stringify({ ...s })).toContain('"kafkaSaslPassword":"[redacted]"');
  });
});

describe("settings → kafkajs options", () => {
  const base = resolveSettings({}, {});

  it("without security: plaintext, no SASL; the client id gets the component suffix", () => {
    const ks = kafkaClientSettings(base, "-fold");
    expect(ks).toEqual({ brokers: ["127.0.0.1:9092"], clientId: "mufold-fold", retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5_000 }, metadataMaxAgeMs: 30_000 });
    const config = kafkaConfig(ks);
    expect(config).not.toHaveProperty("ssl");
    expect(config).not.toHaveProperty("sasl");
  });

  it("TLS: ssl true with Node's CAs, { ca: [pem] } with a CA file", () => {
    expect(kafkaConfig(kafkaClientSettings(resolveSettings({ "kafka-tls": true }, {}))).ssl).toBe(true);
    expect(kafkaConfig(kafkaClientSettings(resolveSettings({}, { KAFKA_TLS: "1", KAFKA_TLS_CA: ca }))).ssl).toEqual({ ca: [PEM] });
  });

  for (const mechanism of ["plain", "scram-sha-256", "scram-sha-512"] as const) {
    it(`SASL ${mechanism}: mechanism, username and password, the password hidden from JSON and spreads`, () => {
      const config = kafkaConfig(kafkaClientSettings(resolveSettings({ "kafka-tls": true }, { ...SASL, KAFKA_SASL_MECHANISM: mechanism }), "-replay"));
      expect(config.clientId).toBe("mufold-replay");
      expect(config.ssl).toBe(true);
      const sasl = config.sasl as { mechanism: string; username: string; password: string };
      expect(sasl.mechanism).toBe(mechanism);
      expect(sasl.username).toBe("alice");
      expect(sasl.password).toBe("env-kafka-secret");
      expect(JSON.stringify(config)).not.toContain("env-kafka-secret");
      expect(inspect(config, { depth: 5 })).not.toContain("env-kafka-secret");
      expect(Object.keys(sasl).sort()).toEqual(["mechanism", "username"]);
    });
  }

  it("kafkajs's own SASL code reads the hidden password", async () => {
    const plain = kafkaConfig(kafkaClientSettings(resolveSettings({}, { ...SASL, KAFKA_SASL_MECHANISM: "plain" }))).sasl!;
    const provider = require("kafkajs/src/broker/saslAuthenticator/plain.js") as (sasl: unknown) => (o: unknown) => { authenticate(): Promise<void> };
    let sent: Buffer | undefined;
    const logger = { debug: () => undefined, error: () => undefined };
    const saslAuthenticate = async ({ request }: { request: { encode(): Promise<Buffer> } }) => void (sent = await request.encode());
    await provider(plain)({ host: "h", port: 1, logger, saslAuthenticate }).authenticate();
    expect(sent!.toString("utf8")).toContain("\0alice\0env-kafka-secret");

    const scram = kafkaConfig(kafkaClientSettings(resolveSettings({}, SASL))).sasl!;
    const { SCRAM } = require("kafkajs/src/broker/saslAuthenticator/scram.js") as { SCRAM: new (...a: unknown[]) => { encodedPassword(): string; encodedUsername(): string } };
    const client = new SCRAM(scram, "h", 1, logger, saslAuthenticate, { length: 64, type: "sha512", minIterations: 4096 });
    expect(client.encodedUsername()).toBe("alice");
    expect(client.encodedPassword()).toBe("env-kafka-secret");
  });
});

describe("settings → ioredis options", () => {
  it("a plain URL passes through unchanged", () => {
    expect(redisClientPlan(redisClientSettings(resolveSettings({}, {})))).toEqual({
      kind: "node",
      url: "redis://127.0.0.1:6379",
      options: { maxRetriesPerRequest: 20, enableAutoPipelining: true, lazyConnect: false },
    });
  });

  it("a writer's connection can turn auto-pipelining off (the fold's, which coalesces its writes itself)", () => {
    expect(redisClientPlan({ url: "redis://h:6379", autoPipelining: false }).options).toMatchObject({ enableAutoPipelining: false });
    expect(redisClientPlan({ url: "redis://h:6379", autoPipelining: true }).options).toMatchObject({ enableAutoPipelining: true });
  });

  it("the URL's user and password become username/password (decoded), the URL keeps host, port and db", () => {
    const plan = redisClientPlan("redis://fold:p%40ss%3Aw%2Frd@10.0.0.5:6379/3");
    expect(plan).toMatchObject({ kind: "node", url: "redis://10.0.0.5:6379/3", options: { username: "fold", password: "p@ss:w/rd" } });
    expect(redisClientPlan("redis://:only-password@h:6379")).toMatchObject({ url: "redis://h:6379", options: { password: "only-password" } });
    expect(redisClientPlan("redis://:only-password@h:6379").options).not.toHaveProperty("username");
  });

  it("REDIS_PASSWORD_FILE gives the password; REDIS_TLS_CA gives tls.ca for rediss://", () => {
    const s = resolveSettings({}, { REDIS_URL: "rediss://fold@redis.example:6380", REDIS_PASSWORD_FILE: redisPasswordFile, REDIS_TLS_CA: ca });
    const plan = redisClientPlan(redisClientSettings(s));
    expect(plan).toMatchObject({ kind: "node", url: "rediss://redis.example:6380", options: { username: "fold", password: "file-redis-secret", tls: { ca: [PEM] } } });
    // Without a CA, rediss:// still means TLS (ioredis sees the scheme).
    const noCa = redisClientPlan("rediss://h:6380");
    expect(noCa).toMatchObject({ kind: "node", url: "rediss://h:6380" });
    expect(noCa.options).not.toHaveProperty("tls");
  });

  it("a cluster URL keeps the cluster options and carries user, password and TLS CA to every node", () => {
    const s = resolveSettings({}, { REDIS_URL: "rediss+cluster://fold@h1:7100,h2:7101", REDIS_PASSWORD_FILE: redisPasswordFile, REDIS_TLS_CA: ca });
    const plan = redisClientPlan(redisClientSettings(s));
    expect(plan.kind).toBe("cluster");
    if (plan.kind !== "cluster") return;
    expect(plan.seeds).toEqual([{ host: "h1", port: 7100 }, { host: "h2", port: 7101 }]);
    expect(plan.options).toMatchObject({ scaleReads: "master", enableAutoPipelining: false, slotsRefreshInterval: 5000 });
    expect(plan.options.redisOptions).toEqual({ maxRetriesPerRequest: 20, username: "fold", password: "file-redis-secret", tls: { ca: [PEM] } });
    const plainCluster = redisClientPlan("redis+cluster://fold:url-redis-secret@h1:7100");
    expect(plainCluster.kind === "cluster" && plainCluster.options.redisOptions).toEqual({ maxRetriesPerRequest: 20, username: "fold", password: "url-redis-secret" });
  });

  it("refuses a CA for a non-TLS URL and a second password, without printing it", () => {
    expect(() => redisClientPlan({ url: "redis://h:6379", tlsCa: PEM })).toThrow(/TLS CA .* non-TLS/);
    expect(() => redisClientPlan({ url: "redis+cluster://h:7100", tlsCa: PEM })).toThrow(/TLS CA .* non-TLS/);
    expect(() => redisClientPlan({ url: "redis://u:url-redis-secret@h:6379", password: "x" })).toThrow(/already has a password: redis:\/\/u:\*\*\*@h:6379$/);
  });
});

describe("mufold config explain: the receipt", () => {
  const secureEnv = {
    ...SASL,
    KAFKA_TLS: "true",
    KAFKA_TLS_CA: ca,
    KAFKA_BROKERS: "b2.example:9093,b1.example:9093",
    REDIS_URL: "rediss://fold:url-redis-secret@redis.example:6380/0",
    REDIS_TLS_CA: ca,
  };

  it("shows every setting with its source and redacts every credential", () => {
    const receipt = configReceipt(resolveSettingsWithSources({ topic: "obs" }, secureEnv));
    expect(receipt.schema).toBe("mufold_config_receipt_v1");
    const settings = receipt.settings as Record<string, PyObject>;
    expect(Object.keys(settings).sort()).toEqual(RECEIPT_SETTINGS);
    expect(settings.topic).toEqual({ source: "flag", value: "obs" });
    expect(settings.group).toEqual({ source: "default", value: "mufold-fold" });
    expect(settings.brokers).toEqual({ source: "env", value: ["b1.example:9093", "b2.example:9093"] });
    expect(settings.redisUrl).toEqual({ source: "env", value: "rediss://redis.example:6380/0" });
    expect(settings.redisTls).toEqual({ source: "env", value: true });
    expect(settings.kafkaTlsCa).toEqual({ source: "env", value: ca });
    expect(settings.kafkaSaslMechanism).toEqual({ source: "env", value: "scram-sha-512" });
    expect(settings.kafkaSaslUsername).toEqual({ source: "env", present: true, redacted: true });
    expect(settings.kafkaSaslPassword).toEqual({ source: "env", present: true, redacted: true });
    expect(settings.redisUsername).toEqual({ source: "env", present: true, redacted: true });
    expect(settings.redisPassword).toEqual({ source: "env", present: true, redacted: true });
    expect(settings.logLevel).toEqual({ source: "default", value: "info" });
    const text = configReceiptJson(resolveSettingsWithSources({ topic: "obs" }, secureEnv));
    for (const secret of [...SECRETS, "alice", "fold:", PEM.slice(28, 40)]) expect(text).not.toContain(secret);
    expect(text).toBe(canonicalJson(receipt));
  });

  it("marks absent credentials and the password file's path and source", () => {
    const receipt = configReceipt(resolveSettingsWithSources({ "redis-password-file": redisPasswordFile }, { REDIS_URL: "redis://fold@h:6379" }));
    const settings = receipt.settings as Record<string, PyObject>;
    expect(settings.redisPassword).toEqual({ source: "flag", present: true, redacted: true });
    expect(settings.redisPasswordFile).toEqual({ source: "flag", value: redisPasswordFile });
    expect(settings.kafkaSaslPassword).toEqual({ source: "default", present: false, redacted: true });
    expect(JSON.stringify(receipt)).not.toContain("file-redis-secret");
  });

  it("has a fingerprint over the values only: same settings, same fingerprint, whatever their order or source", () => {
    const viaEnv = configReceipt(resolveSettingsWithSources({}, { ...secureEnv, MUFOLD_TOPIC: "obs" }));
    const viaFlags = configReceipt(
      resolveSettingsWithSources(
        { "redis-tls-ca": ca, topic: "obs", "kafka-tls": true, brokers: "b1.example:9093,b2.example:9093", "redis-url": secureEnv.REDIS_URL, "kafka-tls-ca": ca },
        { KAFKA_SASL_PASSWORD: SASL.KAFKA_SASL_PASSWORD, KAFKA_SASL_USERNAME: "alice", KAFKA_SASL_MECHANISM: "SCRAM-SHA-512" },
      ),
    );
    expect(viaFlags.fingerprint).toBe(viaEnv.fingerprint);
    expect(viaFlags).not.toEqual(viaEnv); // the sources differ
    expect(viaEnv.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    // Defaults written out explicitly are the same settings.
    expect(configReceipt(resolveSettingsWithSources({}, { MUFOLD_TOPIC: "memory-utility-observations" })).fingerprint).toBe(configReceipt(resolveSettingsWithSources({}, {})).fingerprint);
    // The documented recipe: sha256 of the canonical JSON of {schema, settings} with only the fingerprinted settings, without sources.
    const settings = viaEnv.settings as Record<string, PyObject>;
    const fingerprinted = ["brokers", "changeFeed", "changeFeedMaxLen", "group", "maxValueBytes", "partitions", "prefix", "proposalsTopic", "redisUrl", "reducerVersion", "replicationFactor", "topic"];
    expect(viaEnv.fingerprinted).toEqual(fingerprinted);
    const stripped: PyObject = {};
    for (const name of fingerprinted) {
      const { source: _source, ...rest } = settings[name]!;
      stripped[name] = rest;
    }
    expect(viaEnv.fingerprint).toBe(`sha256:${sha256Hex(canonicalJson({ schema: RECEIPT_SCHEMA, settings: stripped }))}`);
  });

  it("changes the fingerprint with what is written or where, not with transport security or credentials", () => {
    const fp = (flags: Record<string, string | boolean>, env: Record<string, string>) => configReceipt(resolveSettingsWithSources(flags, env)).fingerprint;
    const reference = fp({}, SASL);
    expect(fp({ topic: "other" }, SASL)).not.toBe(reference);
    expect(fp({ "redis-url": "redis://127.0.0.1:6379/1" }, SASL)).not.toBe(reference);
    expect(fp({ "kafka-tls": true }, SASL)).toBe(reference);
    expect(fp({}, { ...SASL, KAFKA_SASL_MECHANISM: "plain" })).toBe(reference);
    expect(fp({}, {})).toBe(reference);
    expect(fp({}, { ...SASL, KAFKA_SASL_PASSWORD: "another-password" })).toBe(reference);
    expect(fp({}, { ...SASL, KAFKA_SASL_USERNAME: "bob" })).toBe(reference);
  });
});

describe("docs/security.md", () => {
  it("shows the ACL rules of infra/redis-acl/roles.acl, parameterized by ${PREFIX}", () => {
    const doc = readFileSync(new URL("../../docs/security.md", import.meta.url), "utf8");
    const roles = readFileSync(new URL("../../infra/redis-acl/roles.acl", import.meta.url), "utf8");
    const rules = [...roles.matchAll(/^([a-z0-9.-]+):\s+(.+)$/gm)].map((m) => [m[1]!, m[2]!.replaceAll("{prefix}", "${PREFIX}")] as const);
    expect(rules.map(([role]) => role)).toEqual(["fold", "replay", "reader", "cluster", "redis-7.2"]);
    for (const [role, rule] of rules) expect(doc, role).toContain(rule);
    // The replay user's line is the fold's rules and the replay's.
    const rule = (name: string) => rules.find(([role]) => role === name)![1];
    expect(doc).toContain(`ACL SETUSER mufold-replay reset on #<sha256 of the replay password> ${rule("fold")} ${rule("replay")}\n`);
  });

  it("keeps SCAN and KEYS (every key name of the database, other tenants' too) out of the fold role, and only SCAN in the replay's", () => {
    const roles = readFileSync(new URL("../../infra/redis-acl/roles.acl", import.meta.url), "utf8");
    const rules = (name: string) => new RegExp(`^${name}:\\s+(.+)$`, "m").exec(roles)![1]!.split(/\s+/);
    const fold = rules("fold");
    // No category either: @keyspace, @read and @slow hold SCAN and KEYS.
    expect(fold.filter((r) => /^\+(@|scan$|keys$)|^allcommands$/i.test(r))).toEqual([]);
    expect(fold).toContain("-@all");
    expect(rules("replay")).toEqual(["+scan"]);
  });
});

describe("memory and concurrency settings", () => {
  it("default to a 4 MiB fetch, 512 KiB per partition, 4 partitions at once, 256 identity writes in flight", () => {
    const s = resolveSettings({}, {});
    expect([s.fetchMaxBytes, s.partitionFetchMaxBytes, s.partitionsConcurrency, s.identitiesInFlight]).toEqual([4_194_304, 524_288, 4, 256]);
  });

  it("take flags and environment variables, and refuse what cannot work, naming the setting", () => {
    const s = resolveSettings({ "partitions-concurrency": "2" }, { MUFOLD_IDENTITIES_IN_FLIGHT: "16", MUFOLD_FETCH_MAX_BYTES: "65536" });
    expect([s.partitionsConcurrency, s.identitiesInFlight, s.fetchMaxBytes]).toEqual([2, 16, 65_536]);
    expect(errorOf({}, { MUFOLD_PARTITIONS_CONCURRENCY: "0" })).toMatch(/MUFOLD_PARTITIONS_CONCURRENCY|partitions-concurrency|partitionsConcurrency/);
    expect(errorOf({ "identities-in-flight": "x" }, {})).toMatch(/identities-in-flight|identitiesInFlight/);
    expect(errorOf({}, { MUFOLD_PARTITION_FETCH_MAX_BYTES: "10" })).toMatch(/MUFOLD_PARTITION_FETCH_MAX_BYTES|partitionFetchMaxBytes/);
  });
});
