/**
 * The container path of the service locator, for machines with a container
 * engine: the same Kafka and Redis versions as infra/, in containers started
 * by testcontainers (loaded only on this path). Kafka's advertised listener
 * must be the address clients dial, so the broker binds a fixed host port.
 */
export const KAFKA_IMAGE = "apache/kafka:4.4.0";
export const REDIS_IMAGE = "redis:7.0.15";

export interface StartedServices {
  brokers: string;
  redisUrl: string;
  stop(): Promise<void>;
}

export async function startContainers(kafkaHostPort = 19092): Promise<StartedServices> {
  const { GenericContainer, Wait } = await import("testcontainers");
  const redis = await new GenericContainer(REDIS_IMAGE).withExposedPorts(6379).withCommand(["redis-server", "--save", "", "--appendonly", "no", "--zset-max-listpack-value", "256"]).start();
  const kafka = await new GenericContainer(KAFKA_IMAGE)
    .withExposedPorts({ container: 9092, host: kafkaHostPort })
    .withEnvironment({
      KAFKA_NODE_ID: "1",
      KAFKA_PROCESS_ROLES: "broker,controller",
      KAFKA_LISTENERS: "PLAINTEXT://:9092,CONTROLLER://:9093",
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${kafkaHostPort}`,
      KAFKA_CONTROLLER_LISTENER_NAMES: "CONTROLLER",
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
      KAFKA_CONTROLLER_QUORUM_VOTERS: "1@localhost:9093",
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: "1",
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: "1",
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: "1",
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: "0",
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: "false",
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .start();
  return {
    brokers: `127.0.0.1:${kafkaHostPort}`,
    redisUrl: `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`,
    stop: async () => {
      await kafka.stop();
      await redis.stop();
    },
  };
}
