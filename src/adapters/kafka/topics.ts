/** Topic administration: create the observation topic and its DLQ, and check retention. */
import kafkajs from "kafkajs";
import type { Admin } from "kafkajs";
import { MufoldError } from "../../errors.js";

const { ConfigResourceTypes } = kafkajs;

export interface TopicSpec {
  topic: string;
  partitions: number;
}

/** The log is the source of truth: it is never deleted by time or size. */
export const LOG_CONFIG = [
  { name: "cleanup.policy", value: "delete" },
  { name: "retention.ms", value: "-1" },
  { name: "retention.bytes", value: "-1" },
];

export async function ensureTopics(admin: Admin, specs: readonly TopicSpec[]): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.topic));
  if (missing.length === 0) return;
  await admin.createTopics({
    waitForLeaders: true,
    topics: missing.map((s) => ({ topic: s.topic, numPartitions: s.partitions, replicationFactor: 1, configEntries: LOG_CONFIG })),
  });
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
