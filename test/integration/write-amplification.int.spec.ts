import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { loadFunctions } from "../../src/adapters/redis/functions.js";
import { RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import { IdentityApplier } from "../../src/fold/identity-applier.js";
import { contextOfObservation, observationFingerprint, reducerIdentity } from "../../src/core/index.js";
import { simulate } from "../../producers/simulation.js";
import { dropPrefix, expectedPackets, testSettings } from "../support/pipeline.js";

const settings = testSettings();
afterAll(() => dropPrefix(settings));

/**
 * The bytes this client has sent to Redis. Not the server's total_net_input_bytes (INFO stats): that counts
 * every client of the shared Redis, and the other test files write to it at the same time.
 */
function bytesSent(client: Redis): number {
  return client.stream.bytesWritten;
}

describe("Redis writes stay small as an identity grows", () => {
  it("bytes written per delivery at 1,000 deliveries stay within 1.5x of those at 10", async () => {
    const redis = new Redis(settings.redisUrl);
    try {
      await loadFunctions(redis);
      const store = new RedisIdentityStore(redis, settings.prefix);
      const applier = new IdentityApplier(store, 10);
      const observations = [...simulate({ agents: 1, observationsPerAgent: 1000, snapshotEvery: 100_000, duplicateRate: 0, conflictRate: 0, memories: 8, seed: 41 })].map((d) => d.observation);
      const context = contextOfObservation(observations[0]!, "memory_utility_reducer_v0");
      const identity = reducerIdentity(context);
      expect(observations.every((o) => reducerIdentity(contextOfObservation(o, "memory_utility_reducer_v0")) === identity)).toBe(true);
      const perBatch: number[] = [];
      for (let i = 0; i < observations.length; i += 10) {
        const deliveries = observations.slice(i, i + 10).map((o, j) => ({ observation: o, fingerprint: observationFingerprint(o), topic: "t", partition: 0, offset: BigInt(i + j) }));
        const before = bytesSent(redis);
        await applier.applyAll(1, [{ identity, context, deliveries }]);
        perBatch.push(bytesSent(redis) - before);
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length / 10;
      const early = mean(perBatch.slice(1, 10)); // deliveries 10..100
      const late = mean(perBatch.slice(-10)); // deliveries 900..1000
      console.log(`[bytes/delivery] early (10-100 deliveries): ${early.toFixed(0)} B, late (900-1000): ${late.toFixed(0)} B, ratio ${(late / early).toFixed(2)}`);
      expect(late).toBeLessThan(early * 1.5);
      // And the identity is still exact after all that.
      expect(await store.read(1, identity)).toBe(expectedPackets(observations).get(identity));
    } finally {
      await redis.quit();
    }
  });
});
