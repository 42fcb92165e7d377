/**
 * Where the tests find Kafka and Redis, in order: KAFKA_BROKERS / REDIS_URL
 * when set; else the project's own infra scripts when their prerequisites are
 * present (Java for the broker; redis-server, or root to install it); else
 * containers (testcontainers) when a container engine is reachable; else a
 * clear failure that says what to install.
 */
export interface ServiceProbe {
  env: { KAFKA_BROKERS?: string; REDIS_URL?: string };
  hasJava: boolean;
  hasRedisServer: boolean;
  isRoot: boolean;
  hasAptGet: boolean;
  /** A Docker-compatible engine answers (DOCKER_HOST or a socket that responds). */
  hasContainerEngine: boolean;
}

export type ServiceChoice =
  | { source: "environment"; brokers: string; redisUrl: string }
  | { source: "infra-scripts" }
  | { source: "containers" }
  | { source: "none"; missing: string[] };

export function chooseServices(probe: ServiceProbe): ServiceChoice {
  const { KAFKA_BROKERS, REDIS_URL } = probe.env;
  if (KAFKA_BROKERS && REDIS_URL) return { source: "environment", brokers: KAFKA_BROKERS, redisUrl: REDIS_URL };
  const missing: string[] = [];
  if (!KAFKA_BROKERS && !probe.hasJava) missing.push("a Java 17+ runtime (for the Kafka broker), or set KAFKA_BROKERS");
  if (!REDIS_URL && !probe.hasRedisServer && !(probe.isRoot && probe.hasAptGet)) {
    missing.push("redis-server (apt-get install redis-server), or set REDIS_URL");
  }
  if (missing.length === 0) return { source: "infra-scripts" };
  if (probe.hasContainerEngine) return { source: "containers" };
  return { source: "none", missing: [...missing, "or a container engine (Docker) for testcontainers"] };
}
