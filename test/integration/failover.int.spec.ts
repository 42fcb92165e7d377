/**
 * Failover: a fold worker killed with SIGKILL (no LeaveGroup) is dropped from
 * the group and the survivor takes over all its partitions with exact packets.
 * How long that takes is measured by bench/failover.bench.ts, not asserted here.
 */
import { waitFor } from "../support/wait.js";
import type { ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import kafkajs from "kafkajs";
import type { Admin } from "kafkajs";
import { createKafka } from "../../src/adapters/kafka/client.js";
import type { Settings } from "../../src/config/settings.js";
import type { Observation } from "../../src/core/index.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { comparePackets, dropPrefix, expectedPackets, readAllPackets, spawnWorker, stopWorker, testSettings } from "../support/pipeline.js";

const { AssignerProtocol } = kafkajs;
const cleanups: (() => Promise<unknown>)[] = [];
/** stopWorker waits for an exit event; a child already dead by a signal has exitCode null and would never send another. */
const ensureStopped = (child: ChildProcess, signal: NodeJS.Signals) => (child.exitCode === null && child.signalCode === null ? stopWorker(child, signal) : Promise.resolve());
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

const PARTITIONS = 6;

interface GroupView {
  state: string;
  members: Map<string, number[]>;
}

async function groupView(admin: Admin, settings: Settings): Promise<GroupView> {
  const { groups } = await admin.describeGroups([settings.group]);
  const members = new Map<string, number[]>();
  for (const m of groups[0]!.members) {
    const assignment = m.memberAssignment.length > 0 ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null;
    members.set(m.memberId, [...(assignment?.assignment[settings.topic] ?? [])].sort((a, b) => a - b));
  }
  return { state: groups[0]!.state, members };
}

async function committed(admin: Admin, settings: Settings): Promise<Map<number, number>> {
  const [topic] = await admin.fetchOffsets({ groupId: settings.group, topics: [settings.topic] });
  return new Map((topic?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
}

async function ends(admin: Admin, settings: Settings): Promise<Map<number, number>> {
  return new Map((await admin.fetchTopicOffsets(settings.topic)).map((p) => [p.partition, Number(p.high)]));
}


const caughtUp = (c: Map<number, number>, e: Map<number, number>) => [...e].every(([p, high]) => (c.get(p) ?? -1) >= high);

describe("failover", () => {
  it("a SIGKILLed worker's partitions are folded by the survivor, with exact packets (the time: bench/failover.bench.ts)", async () => {
    const settings = testSettings({ partitions: PARTITIONS });
    cleanups.push(() => dropPrefix(settings));
    // 60 scopes (one per agent), so each half of the stream spreads over the 6 partitions (asserted below).
    const observations = [...simulate({ agents: 60, observationsPerAgent: 10, duplicateRate: 0.1, conflictRate: 0.03, snapshotEvery: 6, seed: 91 })].map((d) => d.observation);
    const before: Observation[] = observations.slice(0, 300);
    const after: Observation[] = observations.slice(300);
    const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test-failover" }).admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());

    // One at a time, so each member id is known to belong to its process.
    const a = spawnWorker(settings);
    cleanups.push(() => ensureStopped(a, "SIGKILL"));
    const alone = await waitFor("a alone in the group", async () => {
      const g = await groupView(admin, settings);
      return g.state === "Stable" && g.members.size === 1 ? g : undefined;
    });
    const aId = [...alone.members.keys()][0]!;
    const b = spawnWorker(settings);
    cleanups.push(() => ensureStopped(b, "SIGTERM"));
    const both = await waitFor("a and b members, both holding partitions", async () => {
      const g = await groupView(admin, settings);
      return g.state === "Stable" && g.members.size === 2 && g.members.has(aId) && [...g.members.values()].every((p) => p.length > 0) ? g : undefined;
    });
    const bId = [...both.members.keys()].find((id) => id !== aId)!;
    const aParts = both.members.get(aId)!;

    await produce(settings, before.map(observationRecord));
    const ends1 = await ends(admin, settings);
    expect([...ends1.values()].filter((n) => n > 0)).toHaveLength(PARTITIONS);
    await waitFor("the group committed the first batch", async () => (caughtUp(await committed(admin, settings), ends1) ? true : undefined));
    // Same members, same assignment as when the batch was produced: each folded its own partitions.
    expect((await groupView(admin, settings)).members).toEqual(both.members);

    await stopWorker(a, "SIGKILL");
    await produce(settings, after.map(observationRecord));
    const ends2 = await ends(admin, settings);
    // The killed worker's partitions got new records: only a takeover can fold them.
    for (const p of aParts) expect(ends2.get(p)!, `partition ${p}`).toBeGreaterThan(ends1.get(p)!);
    // How long the takeover takes is measured by bench/failover.bench.ts; here, that it happens.
    await waitFor("the survivor committed every partition's end offset", async () => (caughtUp(await committed(admin, settings), ends2) ? true : undefined), 120_000);

    const final = await groupView(admin, settings);
    expect([...final.members.keys()]).toEqual([bId]);
    expect(final.members.get(bId)).toEqual([0, 1, 2, 3, 4, 5]);
    const diff = comparePackets(await readAllPackets(settings), expectedPackets(observations));
    expect(diff).toEqual({ missing: [], extra: [], different: [] });
  });
});
