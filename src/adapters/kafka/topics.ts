/** Topic administration: create the observation topic and its DLQ, and check retention. */
import kafkajs from "kafkajs";
import type { Admin } from "kafkajs";
import { MufoldError } from "../../errors.js";

const { ConfigResourceTypes } = kafkajs;

/** A topic's replication factor: a number, or "broker" for the broker's `default.replication.factor`. */
export type ReplicationFactor = number | "broker";

export interface TopicSpec {
  topic: string;
  partitions: number;
  /** Default "broker": a shared cluster's own default (often 3), never a hard-coded 1. */
  replicationFactor?: ReplicationFactor;
}

/**
 * CreateTopics' "use the broker's default" (KIP-464). kafkajs speaks CreateTopics
 * v3, where the broker applies it too: checked on Kafka 4.4 (KRaft), see
 * test/integration/server-checks.int.spec.ts.
 */
export const BROKER_DEFAULT_REPLICATION = -1;

/** The log is the source of truth: it is never deleted by time or size. */
export const LOG_CONFIG = [
  { name: "cleanup.policy", value: "delete" },
  { name: "retention.ms", value: "-1" },
  { name: "retention.bytes", value: "-1" },
];

/** The spec of a topic mufold creates, from the settings (partitions, replication factor). */
export function topicSpec(settings: { partitions: number; replicationFactor: ReplicationFactor }, topic: string): TopicSpec {
  return { topic, partitions: settings.partitions, replicationFactor: settings.replicationFactor };
}

/**
 * How long a created topic may take to show a leader for every partition in
 * the broker's metadata. A KRaft broker answers CreateTopics once the
 * controller committed it; its own metadata cache may lag behind, answering
 * UNKNOWN_TOPIC_OR_PARTITION meanwhile (kafkajs's waitForLeaders gives up on
 * that answer at once).
 */
export const TOPIC_LEADERS_WAIT_MS = 30_000;

/** The broker's answers that mean "created, not visible yet": worth asking again. */
const NOT_VISIBLE_YET = new Set(["UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE"]);

/** Create the topics that do not exist yet (infinite retention); returns the names it created once every partition has a leader. */
export async function ensureTopics(admin: Admin, specs: readonly TopicSpec[], leadersWaitMs = TOPIC_LEADERS_WAIT_MS): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.topic));
  if (missing.length === 0) return [];
  const rf = (s: TopicSpec) => (s.replicationFactor === undefined || s.replicationFactor === "broker" ? BROKER_DEFAULT_REPLICATION : s.replicationFactor);
  try {
    await admin.createTopics({
      waitForLeaders: false,
      topics: missing.map((s) => ({ topic: s.topic, numPartitions: s.partitions, replicationFactor: rf(s), configEntries: LOG_CONFIG })),
    });
  } catch (err) {
    // kafkajs says only "Topic creation errors": name each topic, what was asked, and the broker's answer.
    const errors = (err as { errors?: { topic?: string; type?: string; message?: string }[] }).errors;
    if (!Array.isArray(errors) || errors.length === 0) throw err;
    const asked = (topic: string | undefined) => missing.find((s) => s.topic === topic);
    const why = errors.map((e) => {
      const spec = asked(e.topic);
      const wanted = spec === undefined ? "" : ` (${spec.partitions} partitions, replication factor ${spec.replicationFactor ?? "broker"})`;
      return `${e.topic ?? "?"}${wanted}: ${e.message ?? "?"} [${e.type ?? "?"}]`;
    });
    throw new MufoldError(`the broker refused to create ${why.join("; ")}`, { cause: err });
  }
  await awaitTopicLeaders(admin, missing, leadersWaitMs);
  return missing.map((s) => s.topic);
}

/**
 * Ask the broker's metadata again (100 ms, doubling up to 1 s) until every
 * partition of every topic has a leader; past `waitMs`, fail saying which
 * topic is not there yet and what the broker last said.
 */
export async function awaitTopicLeaders(admin: Admin, specs: readonly TopicSpec[], waitMs = TOPIC_LEADERS_WAIT_MS): Promise<void> {
  const deadline = Date.now() + waitMs;
  let delay = 100;
  let last = "";
  for (;;) {
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: specs.map((s) => s.topic) });
      const lacking = specs.filter((spec) => {
        const found = topics.find((t) => t.name === spec.topic);
        return found === undefined || found.partitions.length < spec.partitions || found.partitions.some((p) => p.leader < 0);
      });
      if (lacking.length === 0) return;
      last = `${lacking.map((s) => s.topic).join(", ")} without a leader for every partition`;
    } catch (err) {
      const type = (err as { type?: unknown }).type;
      if (typeof type !== "string" || !NOT_VISIBLE_YET.has(type)) throw err;
      last = `${(err as Error).message} [${type}]`;
    }
    if (Date.now() + delay > deadline) {
      throw new MufoldError(`created ${specs.map((s) => s.topic).join(", ")}, but the broker's metadata did not show them ready within ${waitMs} ms: ${last}`, {
        retriable: true,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 1_000);
  }
}

export async function topicRetention(admin: Admin, topic: string): Promise<{ retentionMs: string; retentionBytes: string }> {
  const result = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ["retention.ms", "retention.bytes"] }],
  });
  const entries = result.resources[0]?.configEntries ?? [];
  const value = (name: string) => entries.find((e) => e.configName === name)?.configValue ?? "";
  return { retentionMs: value("retention.ms"), retentionBytes: value("retention.bytes") };
}

/** Replay needs the whole log: refuse a topic that may delete records, unless told otherwise. */
export async function assertInfiniteRetention(admin: Admin, topic: string, allowFinite: boolean): Promise<void> {
  const { retentionMs, retentionBytes } = await topicRetention(admin, topic);
  if (retentionMs === "-1" && retentionBytes === "-1") return;
  const message =
    `topic ${topic} has finite retention (retention.ms=${retentionMs}, retention.bytes=${retentionBytes}); ` +
    "replay from offset 0 would miss deleted records. Set both to -1, or pass --allow-finite-retention.";
  if (!allowFinite) throw new MufoldError(message);
}

/** Earliest and end offsets of every partition. */
export async function partitionOffsets(admin: Admin, topic: string): Promise<{ partition: number; low: bigint; high: bigint }[]> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets
    .map((o) => ({ partition: o.partition, low: BigInt(o.low), high: BigInt(o.high) }))
    .sort((a, b) => a.partition - b.partition);
}

/** Committed offsets of a consumer group (-1 where none). */
export async function groupOffsets(admin: Admin, groupId: string, topic: string): Promise<Map<number, bigint>> {
  const result = await admin.fetchOffsets({ groupId, topics: [topic] });
  const out = new Map<number, bigint>();
  for (const p of result[0]?.partitions ?? []) out.set(p.partition, BigInt(p.offset));
  return out;
}
