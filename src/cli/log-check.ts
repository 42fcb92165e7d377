/**
 * Before an answer that names positions of the log (read as of a point,
 * explain, diff): is the topic still the log the live generation folded? A
 * partition that ends below the live generation's mark was truncated or
 * deleted and recreated (verify's topic_origin_differs): its offsets name
 * other records now, so the answer is as_of_not_available, naming the
 * partitions, until `mufold replay --promote` folds the log as it is. A topic
 * recreated and grown back past the marks is caught by the fold itself (the
 * record at offset 0 differs) and by `replay --verify`, not here: that takes
 * reading the log.
 */
import type { Cluster, Redis } from "ioredis";
import { connectKafkaAdmin, kafkaClientSettings } from "../adapters/kafka/client.js";
import { partitionOffsets } from "../adapters/kafka/topics.js";
import { controlKey, markField } from "../adapters/redis/keys.js";
import { AsOfNotAvailableError } from "../client/past.js";
import type { ProjectionReader } from "../client/readback.js";
import type { Settings } from "../config/settings.js";

/** Throws AsOfNotAvailableError when a partition of the topic ends below the live generation's mark. */
export async function assertLogStillFolded(settings: Settings, redis: Redis | Cluster, generation: number): Promise<void> {
  const admin = await connectKafkaAdmin(kafkaClientSettings(settings, "-past"), settings.connectTimeoutMs);
  let ends: { partition: number; high: bigint }[];
  try {
    if (!(await admin.listTopics()).includes(settings.topic)) {
      throw new AsOfNotAvailableError(`topic_origin_differs: ${settings.topic} does not exist (deleted?): the live generation folded a log that is gone`, null);
    }
    ends = await partitionOffsets(admin, settings.topic);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  const shorter: string[] = [];
  const marks = ends.length === 0 ? [] : await redis.hmget(controlKey(settings.prefix), ...ends.map((e) => markField(generation, settings.topic, e.partition)));
  ends.forEach(({ partition, high }, i) => {
    const mark = marks[i] ?? null;
    if (mark !== null && BigInt(mark) > high) shorter.push(`partition ${partition} ends at ${high}, below the ${mark} generation ${generation} folded`);
  });
  if (shorter.length === 0) return;
  throw new AsOfNotAvailableError(
    `topic_origin_differs: ${settings.topic} is not the log the live generation folded (${shorter.join("; ")}: truncated, or deleted and recreated); ` +
      "its offsets name other records now. Run `mufold replay --promote` to fold the log as it is.",
    null,
  );
}

/**
 * Ask about the past once the topic is known to be the log folded: as_of_not_available (a point out of range,
 * or the log check's refusal) is reported on stderr as `mufold <command>: …` and gives undefined (exit 4).
 */
export async function askThePast<T>(command: string, settings: Settings, redis: Redis | Cluster, reader: ProjectionReader, ask: () => Promise<T>): Promise<{ answer: T } | undefined> {
  try {
    await assertLogStillFolded(settings, redis, await reader.generation());
    return { answer: await ask() };
  } catch (err) {
    if (!(err instanceof AsOfNotAvailableError)) throw err;
    process.stderr.write(`mufold ${command}: ${err.message}\n`);
    return undefined;
  }
}
