/**
 * The pid of the broker or Redis that `infra/` started, for chaos tests that
 * stop one with a signal. Mirrors infra/lib.sh: the default ports keep their
 * state in .cache/run/kafka and .cache/run/redis, any other port (a second
 * instance beside the default one, MUFOLD_KAFKA_PORT / MUFOLD_REDIS_PORT) in
 * .cache/run/kafka-<port> and .cache/run/redis-<port>.
 */
import { readFileSync } from "node:fs";
import { REPO_ROOT } from "../reference.js";

function runDir(service: "kafka" | "redis"): string {
  const [env, fallback] = service === "kafka" ? ["MUFOLD_KAFKA_PORT", "9092"] : ["MUFOLD_REDIS_PORT", "6379"];
  const port = process.env[env] ?? fallback;
  return `${REPO_ROOT}/.cache/run/${port === fallback ? service : `${service}-${port}`}`;
}

export function servicePid(service: "kafka" | "redis"): number {
  return Number(readFileSync(`${runDir(service)}/${service}.pid`, "utf8").trim());
}
