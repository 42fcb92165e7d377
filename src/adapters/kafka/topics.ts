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

/** Create the topics that do not exist yet (infinite retention); returns the names it created. */
export async function ensureTopics(admin: Admin, specs: readonly TopicSpec[]): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.topic));
  if (missing.length === 0) return [];
  const rf = (s: TopicSpec) => (s.replicationFactor === undefined || s.replicationFactor === "broker" ? BROKER_DEFAULT_REPLICATION : s.replicationFactor);
  try {
    await admin.createTopics({
      waitForLeaders: true,
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
  return missing.map((s) => s.topic);
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
