import { describe, expect, it } from "vitest";
import { chooseServices, type ServiceProbe } from "../support/services/locate-services.js";

const bare: ServiceProbe = { env: {}, hasJava: false, hasRedisServer: false, isRoot: false, hasAptGet: false, hasContainerEngine: false };

describe("where the tests find Kafka and Redis", () => {
  it("uses the environment first", () => {
    expect(chooseServices({ ...bare, env: { KAFKA_BROKERS: "k:9092", REDIS_URL: "redis://r" } })).toEqual({
      source: "environment",
      brokers: "k:9092",
      redisUrl: "redis://r",
    });
  });
  it("falls back to the infra scripts when Java and Redis (or root with apt) are there", () => {
    expect(chooseServices({ ...bare, hasJava: true, hasRedisServer: true }).source).toBe("infra-scripts");
    expect(chooseServices({ ...bare, hasJava: true, isRoot: true, hasAptGet: true }).source).toBe("infra-scripts");
  });
  it("uses containers only when the infra scripts cannot run and an engine answers", () => {
    expect(chooseServices({ ...bare, hasContainerEngine: true }).source).toBe("containers");
    expect(chooseServices({ ...bare, hasContainerEngine: true, hasJava: true, hasRedisServer: true }).source).toBe("infra-scripts");
    expect(chooseServices({ ...bare, hasContainerEngine: true, env: { KAFKA_BROKERS: "k:1", REDIS_URL: "redis://r" } }).source).toBe("environment");
  });
  it("fails naming exactly what is missing", () => {
    const none = chooseServices(bare);
    expect(none).toEqual({
      source: "none",
      missing: [expect.stringContaining("Java"), expect.stringContaining("redis-server"), expect.stringContaining("container engine")],
    });
    expect(chooseServices({ ...bare, hasRedisServer: true })).toEqual({ source: "none", missing: [expect.stringContaining("Java"), expect.stringContaining("container engine")] });
  });
});
