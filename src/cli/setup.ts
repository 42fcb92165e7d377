/**
 * `mufold setup`: the admin step of a deployment, before the first fold and
 * after every upgrade or loss of Redis's functions (docs/operations.md).
 *
 * 1. Checks Redis (server-checks.ts): refuses an evicting maxmemory-policy
 *    unless allowed, warns when nothing is persisted (here CONFIG GET may read
 *    the RDB save points: setup runs as an admin).
 * 2. Loads mufold's Function libraries on every master (FUNCTION LOAD REPLACE)
 *    and checks them back: the fold and the replay only check, as their ACL
 *    role may not load Lua (docs/security.md).
 * 3. Creates the observation topic, its DLQ and (when configured) the
 *    proposals topic if missing, with --partitions, --replication-factor and
 *    infinite retention, so the fold's Kafka principal needs no Create;
 *    --skip-topics leaves Kafka alone (a Redis-only admin, or reloading the
 *    functions after a Redis restart). Existing topics are not altered.
 *
 * Idempotent. Prints a JSON summary on stdout; warnings are JSON log lines on stderr.
 */
import { connectKafkaAdmin, kafkaClientSettings } from "../adapters/kafka/client.js";
import { ensureTopics, topicSpec } from "../adapters/kafka/topics.js";
import { openRedis, redisClientSettings } from "../adapters/redis/connect.js";
import { assertFunctionsLoaded, libraries, loadFunctions } from "../adapters/redis/functions.js";
import { checkRedisServer, type RedisNodeState } from "../adapters/redis/server-checks.js";
import { resolveSettings, type Settings } from "../config/settings.js";
import { canonicalJson } from "../core/canonical-json.js";
import { createLogger, type Logger } from "../observability/log.js";
import { changeFeedSettings } from "../../consumers/feed/change-feed.js";
import { dlqTopic } from "../fold/dead-letter.js";
import { commandFlags } from "./command.js";
import { writeOut } from "./io.js";
import { preflight } from "./preflight.js";
import { SETUP } from "./specs.js";

export interface SetupSummary {
  redis: { libraries: string[]; masters: RedisNodeState[] };
  /** null with --skip-topics. */
  topics: { created: string[]; existing: string[]; replicationFactor: number | "broker" } | null;
}

/** The topics mufold writes: observations, dead letters, and review proposals when the change feed has a topic. */
export function deploymentTopics(settings: Settings): string[] {
  const feed = changeFeedSettings(settings);
  return [settings.topic, dlqTopic(settings.topic), ...(feed.enabled && feed.proposalsTopic !== null ? [feed.proposalsTopic] : [])];
}

/** Check Redis, load and verify the libraries, then (unless skipped) create the missing topics. */
export async function runSetup(settings: Settings, options: { topics: boolean }, log: Logger): Promise<SetupSummary> {
  const redis = await openRedis(redisClientSettings(settings), settings.connectTimeoutMs);
  let masters: RedisNodeState[];
  try {
    masters = await checkRedisServer(redis, { allowEvictingPolicy: settings.allowEvictingPolicy, configGet: true }, log);
    await loadFunctions(redis);
    await assertFunctionsLoaded(redis);
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
  const summary: SetupSummary = { redis: { libraries: libraries().map((l) => l.name), masters }, topics: null };
  if (!options.topics) return summary;
  const admin = await connectKafkaAdmin(kafkaClientSettings(settings, "-setup"), settings.connectTimeoutMs);
  try {
    const names = deploymentTopics(settings);
    const created = await ensureTopics(
      admin,
      names.map((name) => topicSpec(settings, name)),
    );
    summary.topics = { created, existing: names.filter((n) => !created.includes(n)), replicationFactor: settings.replicationFactor };
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  return summary;
}

export async function setupCommand(args: string[]): Promise<number> {
  const values = await commandFlags(SETUP, args);
  if (values === undefined) return 0;
  const settings = resolveSettings(values);
  const topics = values["skip-topics"] !== true;
  const log = createLogger({ service: "mufold" }, settings.logLevel).child({ component: "setup" });
  await preflight(settings, { kafka: topics, redis: true });
  const summary = await runSetup(settings, { topics }, log);
  await writeOut(canonicalJson(JSON.parse(JSON.stringify(summary))) + "\n");
  return 0;
}
