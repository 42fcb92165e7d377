/**
 * Two replay workers writing one identity of a fresh generation: each reads
 * one partition and runs its applier in fresh mode (no loads for identities it
 * has not written). The version check must make them converge on exactly the
 * reducer's packet, whether their writes alternate or race.
 */
import { describe, expect, it } from "vitest";
import { routeRecords } from "../../src/fold/batch-router.js";
import type { SourceRecord } from "../../src/fold/source-record.js";
import { IdentityApplier, type ApplyStats } from "../../src/fold/identity-applier.js";
import { simulate } from "../../producers/simulation.js";
import { MemoryIdentityStore } from "../../src/adapters/memory/identity-store.js";
import type { Observation } from "../../src/core/index.js";
import { expectedPackets } from "../support/oracle.js";

import { sourceRecord } from "../support/source-record.js";

const G = 7;
const DECISION = { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 65_536 };

const record = sourceRecord;

/** One identity's observations, alternately on partitions 0 and 1 (offsets counted per partition). */
function straddlingLog(n: number): { observations: Observation[]; partitions: [SourceRecord[], SourceRecord[]] } {
  const observations = [...simulate({ agents: 1, observationsPerAgent: n, snapshotEvery: 100_000, duplicateRate: 0.15, conflictRate: 0.1, seed: 17 })].map((d) => d.observation);
  const partitions: [SourceRecord[], SourceRecord[]] = [[], []];
  observations.forEach((o, i) => partitions[i % 2]!.push(record(o, i % 2, partitions[i % 2]!.length)));
  return { observations, partitions };
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const apply = (applier: IdentityApplier, records: SourceRecord[]): Promise<ApplyStats> => applier.applyAll(G, routeRecords(records, DECISION).identities);

async function onlyPacket(store: MemoryIdentityStore): Promise<string | null> {
  const ids = await store.listIdentities(G);
  expect(ids).toHaveLength(1);
  return store.read(G, ids[0]!);
}

describe("fresh appliers of two replay workers on one identity", () => {
  it("alternating chunks: the stale writer reloads and the packet is the reducer's over both partitions", async () => {
    const { observations, partitions } = straddlingLog(40);
    const store = new MemoryIdentityStore();
    const workers = [new IdentityApplier(store, 100, { fresh: true }), new IdentityApplier(store, 100, { fresh: true })];
    const [a, b] = [chunks(partitions[0], 7), chunks(partitions[1], 7)];
    let retries = 0;
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (a[i]) retries += (await apply(workers[0]!, a[i]!)).casRetries;
      if (b[i]) retries += (await apply(workers[1]!, b[i]!)).casRetries;
    }
    expect(retries).toBeGreaterThan(0); // each worker found the other's writes (fresh mode did not hide them)
    expect(await onlyPacket(store)).toBe([...expectedPackets(observations).values()][0]);
  });

  it("racing chunks: concurrent writes converge on the same packet", async () => {
    const { observations, partitions } = straddlingLog(40);
    const store = new MemoryIdentityStore();
    const workers = [new IdentityApplier(store, 100, { fresh: true }), new IdentityApplier(store, 100, { fresh: true })];
    const [a, b] = [chunks(partitions[0], 5), chunks(partitions[1], 5)];
    let retries = 0;
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const stats = await Promise.all([a[i] ? apply(workers[0]!, a[i]!) : undefined, b[i] ? apply(workers[1]!, b[i]!) : undefined]);
      for (const s of stats) retries += s?.casRetries ?? 0;
    }
    expect(retries).toBeGreaterThan(0);
    expect(await onlyPacket(store)).toBe([...expectedPackets(observations).values()][0]);
  });
});
