/**
 * One reducer version per generation: a promote of another version, or a
 * worker configured for another version, refuses with what to do; the
 * documented upgrade (--change-reducer-version) switches the whole generation
 * and the old workers stop instead of mixing versions.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { runReplay } from "../../consumers/replay/replay.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import type { Observation } from "../../src/core/index.js";
import { comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

const V1 = "memory_utility_reducer_v1";

function workload(seed: number, startTime = "2026-11-01T00:00:00Z"): Observation[] {
  return [...simulate({ agents: 4, observationsPerAgent: 20, snapshotEvery: 10, seed, startTime })].map((d) => d.observation);
}

describe("reducer versions", () => {
  it("refuses to mix versions in a generation; the documented upgrade switches it whole", async () => {
    const v0 = testSettings({ partitions: 2 });
    const v1 = { ...v0, reducerVersion: V1 };
    cleanups.push(() => dropPrefix(v0));
    const first = workload(101);
    await produce(v0, first.map(observationRecord));
    const oldWorker = await FoldWorker.start(v0, quietLog);
    cleanups.push(() => oldWorker.stop());
    await waitCaughtUp(v0);

    // A promote of another version while v0 folds: refused, nothing changes.
    await expect(runReplay(v1, { verify: false, promote: true, dropAfterSeconds: 0 }, quietLog)).rejects.toThrow(/holds reducer_version memory_utility_reducer_v0.*--change-reducer-version/);
    // A worker of another version: refused at start.
    await expect(FoldWorker.start(v1, quietLog)).rejects.toThrow(/holds reducer_version memory_utility_reducer_v0, this worker is configured for memory_utility_reducer_v1/);
    expect(comparePackets(await readAllPackets(v0), expectedPackets(first))).toEqual({ missing: [], extra: [], different: [] });

    // The upgrade: promote v1 explicitly; the v0 worker then refuses to write (it stops) instead of mixing.
    const upgrade = await runReplay(v1, { verify: false, promote: true, dropAfterSeconds: 0, changeReducerVersion: true }, quietLog);
    expect(upgrade.promoted).toBe(true);
    const more = workload(102, "2026-11-20T00:00:00Z");
    await produce(v0, more.map(observationRecord));
    const crash = (await Promise.race([oldWorker.crashed, new Promise((r) => setTimeout(() => r(new Error("no refusal in 60s")), 60_000))])) as Error;
    expect(crash.message).toMatch(/holds reducer_version memory_utility_reducer_v1, this worker is configured for memory_utility_reducer_v0/);
    await oldWorker.stop();
    cleanups.pop();

    const newWorker = await FoldWorker.start(v1, quietLog);
    cleanups.push(() => newWorker.stop());
    await waitCaughtUp(v1);
    expect(comparePackets(await readAllPackets(v1), expectedPackets([...first, ...more], V1))).toEqual({ missing: [], extra: [], different: [] });
  });
});
