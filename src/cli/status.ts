/**
 * `mufold status`: what the live generation holds, for an operator. Each
 * partition's mark against the fold group's committed offset and the log's
 * end (consumers/verify/coverage.ts computes behind_log, lag and the verdict, as
 * `replay --verify` does), the replays being built, whether the Redis
 * functions are loaded. A table by default, one JSON object with --json.
 * It reports: exit 0 whatever the verdict.
 *
 * It reads only: nothing is written to Redis or Kafka. Without the function
 * libraries the control hash is read by plain HGET/HGETALL (the generation
 * and its marks), and what only the functions tell (the reducer version, the
 * pause, the builds) is reported as unknown (null), never guessed.
 */
import { connectKafkaAdmin, kafkaClientSettings } from "../adapters/kafka/client.js";
import { openRedis, redisClientSettings } from "../adapters/redis/connect.js";
import { FunctionsMissingError } from "../adapters/redis/errors.js";
import { assertFunctionsLoaded } from "../adapters/redis/functions.js";
import { RedisControlStore } from "../adapters/redis/control-store.js";
import { resolveSettings, type Settings } from "../config/settings.js";
import { canonicalJson } from "../core/canonical-json.js";
import { partitionStatus, readiness, type PartitionStatus, type ReadinessState } from "../../consumers/verify/coverage.js";
import { readPartitionOffsets } from "../../consumers/verify/coverage-source.js";
import { commandFlags } from "./command.js";
import { writeOut } from "./io.js";
import { STATUS } from "./specs.js";

export interface StatusReport {
  topic: string;
  group: string;
  prefix: string;
  state: ReadinessState;
  cause: string;
  functions_loaded: boolean;
  generation: number | null;
  /** null: no live generation, or unknown (the functions are missing). */
  reducer_version: string | null;
  /** null: unknown (the functions are missing). */
  paused: boolean | null;
  partitions: PartitionStatus[];
  behind_log: number;
  lag: number;
  /** Generations a replay is building; null: unknown (the functions are missing). */
  building: number[] | null;
}

/** Read Redis and Kafka (read only) and judge. */
export async function readStatus(settings: Settings): Promise<StatusReport> {
  const redis = await openRedis(redisClientSettings(settings), settings.connectTimeoutMs);
  try {
    const admin = await connectKafkaAdmin(kafkaClientSettings(settings, "-status"), settings.connectTimeoutMs);
    try {
      const controlStore = new RedisControlStore(redis, settings.prefix);
      let functionsProblem: string | null = null;
      try {
        await assertFunctionsLoaded(redis);
      } catch (err) {
        if (!(err instanceof FunctionsMissingError)) throw err;
        functionsProblem = err.message;
      }
      const loaded = functionsProblem === null;
      const control = loaded ? await controlStore.state() : null;
      const generation = control === null ? await controlStore.liveGeneration() : control.generation;
      const building = loaded ? [...(await controlStore.buildingGenerations())].sort((a, b) => a - b) : null;
      const topicExists = (await admin.listTopics()).includes(settings.topic);
      const offsets = topicExists ? await readPartitionOffsets(admin, controlStore, settings.topic, settings.group, generation) : [];
      const verdict = readiness({ functionsProblem, topic: settings.topic, topicExists, group: settings.group, generation, partitions: offsets });
      const partitions = offsets.map(partitionStatus);
      return {
        topic: settings.topic,
        group: settings.group,
        prefix: settings.prefix,
        ...verdict,
        functions_loaded: loaded,
        generation,
        reducer_version: control?.reducerVersion ?? null,
        paused: control === null ? null : control.paused,
        partitions,
        behind_log: partitions.reduce((a, p) => a + p.behind_log, 0),
        lag: partitions.reduce((a, p) => a + p.lag, 0),
        building,
      };
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

const unknown = "unknown (no functions)";

/** The report as a person reads it: the verdict first, then what it rests on, then one row per partition. */
export function statusTable(r: StatusReport): string {
  const fmt = (n: number | null) => (n === null ? "-" : n.toLocaleString("en-US"));
  const head: [string, string][] = [
    ["cause", r.cause],
    ["topic", r.topic],
    ["group", r.group],
    ["prefix", r.prefix],
    ["functions", r.functions_loaded ? "loaded" : "missing"],
    ["generation", r.generation === null ? "none" : String(r.generation)],
    ["reducer", r.functions_loaded ? (r.reducer_version ?? "none") : unknown],
    ["paused", r.paused === null ? unknown : r.paused ? "yes" : "no"],
    ["building", r.building === null ? unknown : r.building.length === 0 ? "none" : r.building.join(", ")],
  ];
  const columns = ["partition", "mark", "committed", "end", "behind_log", "lag"];
  const rows = r.partitions.map((p) => [`${p.topic}:${p.partition}`, fmt(p.mark), fmt(p.committed), fmt(p.end), fmt(p.behind_log), fmt(p.lag)]);
  if (rows.length > 0) rows.push(["total", "", "", "", fmt(r.behind_log), fmt(r.lag)]);
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((row) => row[i]!.length)));
  // The partition column reads left to right; the numbers line up on the right.
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  return [
    `mufold status: ${r.state}`,
    ...head.map(([k, v]) => `  ${k.padEnd(10)}  ${v}`),
    "",
    ...(rows.length === 0 ? ["  (no partitions)"] : [line(columns), ...rows.map(line)].map((l) => `  ${l}`)),
    "",
  ].join("\n");
}

export async function statusCommand(args: string[]): Promise<number> {
  const values = await commandFlags(STATUS, args);
  if (values === undefined) return 0;
  const settings = resolveSettings(values);
  const report = await readStatus(settings);
  await writeOut(values.json === true ? canonicalJson(JSON.parse(JSON.stringify(report))) + "\n" : statusTable(report));
  return 0;
}
