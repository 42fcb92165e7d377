/**
 * The fold worker's warm-up (consumers/fold/warm-up.ts): it runs its synthetic
 * records through the real engine, every one of them, with no services. The
 * expected counts come from the simulation itself, not from the warm-up.
 */
import { describe, expect, it } from "vitest";
import { simulate } from "../../producers/simulation.js";
import { contextOfObservation, reducerIdentity } from "../../src/core/identity.js";
import { warmUpEngine } from "../../consumers/fold/warm-up.js";

const OPTIONS = { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 65_536 };

describe("given a worker about to join its group", () => {
  it("when it warms up with 600 records, then all 600 are decided and folded, into every identity they name", async () => {
    const stats = await warmUpEngine(OPTIONS, 600);
    // The same simulation the warm-up draws from (12 agents of 50): its identities and its first deliveries of each id.
    const deliveries = [...simulate({ agents: 12, observationsPerAgent: 50, snapshotEvery: 25, duplicateRate: 0.1, conflictRate: 0.01, seed: 7 })].slice(0, 600);
    const identities = new Set(deliveries.map((d) => reducerIdentity(contextOfObservation(d.observation, OPTIONS.reducerVersion))));
    expect(stats.records).toBe(600);
    expect(stats.identities).toBe(identities.size);
    expect(identities.size).toBeGreaterThan(12); // snapshots rotate: more identities than agents
    // Each record is a new delivery at its own offset: none is a redelivery, so all are applied.
    expect(stats.applied).toBe(600);
  });

  it("when warm-up is off (0 records), then nothing is folded", async () => {
    expect(await warmUpEngine(OPTIONS, 0)).toEqual({ records: 0, identities: 0, applied: 0 });
  });
});
