/**
 * Partitions added to the observation topic are folded within
 * metadataMaxAgeSeconds. kafkajs's group consumer learns of them only when it
 * refreshes the topic's metadata (every metadataMaxAge, 5 minutes by kafkajs's
 * default): the fetch after the refresh finds partitions it was not assigned
 * (consumerGroup.js checkForStaleAssignment) and rejoins the group, whose
 * leader refreshes the metadata again and assigns every partition.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Admin } from "kafkajs";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { createKafka, kafkaClientSettings } from "../../src/adapters/kafka/client.js";
import { groupOffsets, partitionOffsets } from "../../src/adapters/kafka/topics.js";
import type { Settings } from "../../src/config/settings.js";
import { comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { until } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

// 12 agents: their scope keys fall in every one of 4 partitions (murmur2), 30-150 records each.
function workload(seed: number) {
  return [...simulate({ agents: 12, observationsPerAgent: 30, duplicateRate: 0.15, conflictRate: 0.03, snapshotEvery: 15, seed })].map((d) => d.observation);
}

async function kafkaAdmin(settings: Settings): Promise<Admin> {
  const admin = createKafka(kafkaClientSettings(settings, "-test")).admin();
  await admin.connect();
  cleanups.push(() => admin.disconnect());
  return admin;
}

describe("partitions added to the topic", () => {
  it("are folded, exactly, by a running fold at its next metadata refresh (metadataMaxAgeSeconds)", async () => {
    const settings = testSettings({ partitions: 2, metadataMaxAgeSeconds: 3 });
    cleanups.push(() => dropPrefix(settings));
    const before = workload(51);
    await produce(settings, before.map(observationRecord));
    const worker = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => worker.stop());
    await waitCaughtUp(settings);

    const admin = await kafkaAdmin(settings);
    await admin.createPartitions({ topicPartitions: [{ topic: settings.topic, count: 4 }] });
    // A producer that sees 4 partitions with leaders spreads the keys over all of them.
    await until("the topic's 4 partitions have leaders", async () => {
      const [topic] = (await admin.fetchTopicMetadata({ topics: [settings.topic] })).topics;
      return topic?.partitions.length === 4 && topic.partitions.every((p) => p.leader >= 0);
    });
    const after = workload(52);
    await produce(settings, after.map(observationRecord));
    const ends = new Map((await partitionOffsets(admin, settings.topic)).map((e) => [e.partition, e.high]));
    expect([...ends.keys()].sort()).toEqual([0, 1, 2, 3]);
    expect(ends.get(2)).toBeGreaterThan(0n);
    expect(ends.get(3)).toBeGreaterThan(0n);

    // Well under kafkajs's default metadataMaxAge (300 s): with it, partitions 2 and 3 would still be unread.
    await waitCaughtUp(settings, 60_000);
    const committed = await groupOffsets(admin, settings.group, settings.topic);
    expect(committed.get(2)).toBe(ends.get(2));
    expect(committed.get(3)).toBe(ends.get(3));
    expect(comparePackets(await readAllPackets(settings), expectedPackets([...before, ...after]))).toEqual({ missing: [], extra: [], different: [] });
  });
});
