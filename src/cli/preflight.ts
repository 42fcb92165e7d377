/**
 * Before a command does any work: reach Kafka and Redis within
 * connectTimeoutMs, or fail with one line naming the endpoint (the adapters'
 * bounded connects). The command then connects its own clients.
 */
import { connectKafkaAdmin, kafkaClientSettings } from "../adapters/kafka/client.js";
import { openRedis, redisClientSettings } from "../adapters/redis/connect.js";
import type { Settings } from "../config/settings.js";
import { MufoldError } from "../errors.js";

export interface Needs {
  kafka?: boolean;
  /** A topic that must already exist (replay reads it; it does not create it). */
  topic?: string;
  redis?: boolean;
}

async function checkKafka(settings: Settings, topic: string | undefined): Promise<void> {
  const admin = await connectKafkaAdmin(kafkaClientSettings(settings, "-preflight"), settings.connectTimeoutMs);
  try {
    if (topic !== undefined && !(await admin.listTopics()).includes(topic)) {
      throw new MufoldError(`topic ${JSON.stringify(topic)} does not exist on Kafka at ${settings.brokers.join(",")}: nothing to replay (check --topic / MUFOLD_TOPIC)`);
    }
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function checkRedis(settings: Settings): Promise<void> {
  const redis = await openRedis(redisClientSettings(settings), settings.connectTimeoutMs);
  await redis.quit().catch(() => redis.disconnect());
}

/** Check what the command needs, concurrently; throws the first failure once both checks are done. */
export async function preflight(settings: Settings, needs: Needs): Promise<void> {
  const checks: Promise<void>[] = [];
  if (needs.kafka || needs.topic !== undefined) checks.push(checkKafka(settings, needs.topic));
  if (needs.redis) checks.push(checkRedis(settings));
  const results = await Promise.allSettled(checks);
  for (const r of results) if (r.status === "rejected") throw r.reason;
}
