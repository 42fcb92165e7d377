/**
 * A transactional producer (confluent-kafka, librdkafka) on the real broker: the
 * fold folds exactly the committed transactions (read_committed: aborted records
 * never reach it), and the group's committed offsets reach every partition's
 * high watermark although the log ends with transaction markers (control
 * records kafkajs never delivers). The later phases send while the fold runs,
 * so fetches that hold only an abort's records and its marker, or only a
 * commit marker, occur too.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { dlqTopic } from "../../src/fold/dead-letter.js";
import { observationRecord } from "../../src/client/producer.js";
import { simulate } from "../../producers/simulation.js";
import type { Settings } from "../../src/config/settings.js";
import type { Observation } from "../../src/core/index.js";
import { confluentBatches } from "../support/foreign/batches.js";
import { createTopics, deleteTopics, ensureForeignClients, type ForeignClients } from "../support/foreign/foreign.js";
import { batchHeaders } from "../support/kafka-raw.js";
import { runReplay } from "../../consumers/replay/replay.js";
import { comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, spawnWorker, stopWorker, testSettings, waitCaughtUp } from "../support/pipeline.js";

let foreign: ForeignClients;
beforeAll(() => {
  foreign = ensureForeignClients();
});

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

function slices<T>(items: readonly T[], n: number): T[][] {
  return Array.from({ length: n }, (_, i) => items.slice(Math.floor((i * items.length) / n), Math.floor(((i + 1) * items.length) / n)));
}

async function expectExact(settings: Settings, committed: Observation[], all: Observation[]): Promise<void> {
  const packets = await readAllPackets(settings);
  expect(comparePackets(packets, expectedPackets(committed))).toEqual({ missing: [], extra: [], different: [] });
  // The aborted observations would have changed the packets: the comparison above could tell.
  expect(comparePackets(packets, expectedPackets(all))).not.toEqual({ missing: [], extra: [], different: [] });
}

describe("transactions", () => {
  it("committed transactions fold exactly, aborted ones not at all, and the group's offsets reach every partition's end", async () => {
    const settings = testSettings({ partitions: 3 });
    cleanups.push(() => dropPrefix(settings), () => deleteTopics(settings.brokers, [settings.topic, dlqTopic(settings.topic)]));
    await createTopics(settings.brokers, [
      { topic: settings.topic, partitions: settings.partitions },
      { topic: dlqTopic(settings.topic), partitions: settings.partitions },
    ]);
    const observations = [...simulate({ agents: 6, observationsPerAgent: 35, duplicateRate: 0.15, conflictRate: 0.03, snapshotEvery: 10, seed: 41 })].map((d) => d.observation);
    const [t1, aborted1, t2, aborted2, t3] = slices(observations, 5) as Observation[][];
    const lines = (obs: Observation[]) => obs.map((o) => String(observationRecord(o).value));
    const send = (groups: { commit: boolean; obs: Observation[] }[]) =>
      confluentBatches(foreign, settings.brokers, settings.topic, {
        compression: "lz4",
        partition: null,
        transactionalId: `${settings.group}.tx`,
        groups: groups.map((g) => ({ commit: g.commit, lines: lines(g.obs) })),
      });

    // Phase 1, before the fold starts: commit, abort, commit.
    expect(await send([{ commit: true, obs: t1! }, { commit: false, obs: aborted1! }, { commit: true, obs: t2! }])).toBe(t1!.length + aborted1!.length + t2!.length);
    const log = (await Promise.all([0, 1, 2].map((p) => batchHeaders(settings.brokers, settings.topic, p)))).flat();
    expect(log.filter((b) => b.control).length).toBeGreaterThanOrEqual(3); // markers on the log (at least one per transaction)
    expect(log.filter((b) => !b.control).every((b) => b.transactional)).toBe(true);

    const worker = spawnWorker(settings);
    cleanups.push(() => stopWorker(worker));
    await waitCaughtUp(settings, 60_000);
    await expectExact(settings, [...t1!, ...t2!], [...t1!, ...aborted1!, ...t2!]);

    // Phase 2, while the fold runs: an aborted transaction alone, then a committed one.
    await send([{ commit: false, obs: aborted2! }]);
    await waitCaughtUp(settings, 60_000);
    await expectExact(settings, [...t1!, ...t2!], [...t1!, ...aborted2!, ...t2!]);
    await send([{ commit: true, obs: t3! }]);
    await waitCaughtUp(settings, 60_000);
    await expectExact(settings, [...t1!, ...t2!, ...t3!], [...t1!, ...aborted1!, ...t2!, ...aborted2!, ...t3!]);

    // The replay reads to the end too (past the last marker) and proves the same bytes, then promotes them.
    const verified = await runReplay(settings, { verify: true, promote: false, stallSeconds: 30 }, quietLog);
    expect({ verified: verified.verified, notComparable: verified.verify?.notComparable }).toEqual({ verified: true, notComparable: 0 });
    expect(verified.verify?.compared).toBe(expectedPackets([...t1!, ...t2!, ...t3!]).size);
    const promoted = await runReplay(settings, { verify: true, promote: true, stallSeconds: 30, dropAfterSeconds: 0 }, quietLog);
    expect({ promoted: promoted.promoted, verified: promoted.verified }).toEqual({ promoted: true, verified: true });
    await expectExact(settings, [...t1!, ...t2!, ...t3!], [...t1!, ...aborted1!, ...t2!, ...aborted2!, ...t3!]);
  });
});
