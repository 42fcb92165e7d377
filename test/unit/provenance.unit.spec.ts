/**
 * Explain (src/fold/provenance.ts): every delivery of an identity accounted for once, with a decision whose
 * counts are the packet's counters and parts that the packet really has. The expected side is the oracle's
 * packet over the same deliveries (test/support/oracle.ts), filtered by the test itself.
 */
import { describe, expect, it } from "vitest";
import { subjectIdOf } from "../../src/core/identity.js";
import { indexedDeliveries, MAX_INDEX_ENTRIES } from "../../src/fold/offset-index.js";
import { explainDeliveries, type Explanation } from "../../src/fold/provenance.js";
import { Prng, simulate } from "../../producers/simulation.js";
import { fold, history, workload, type Placed } from "../support/indexed-identity.js";
import { expectedPackets } from "../support/oracle.js";

interface OraclePacket {
  status: string;
  accepted_observation_count: number;
  duplicate_observation_count: number;
  conflicting_observation_count: number;
  rejected_observation_count: number;
  subjects: { subject_id: string; observation_count: number; evidence_label_summary: { observation_count: number }[] }[];
  observation_history: { observation_id: string }[];
  rejections: { observation_id?: string }[];
}

function check(explanation: Explanation, chosen: readonly Placed[], identity: string): void {
  const packet = JSON.parse(expectedPackets(chosen.map((p) => p.observation)).get(identity)!) as OraclePacket;
  // Every chosen delivery exactly once, in the order applied.
  expect(explanation.deliveries.map((d) => `${d.partition}:${d.offset}`)).toEqual(chosen.map((p) => `${p.partition}:${p.offset}`));
  expect(explanation.deliveries.map((d) => d.observation_id)).toEqual(chosen.map((p) => p.observation.observation_id));
  expect(explanation.status).toBe(packet.status);
  const count = (decision: string) => explanation.deliveries.filter((d) => d.decision === decision).length;
  expect(count("accepted")).toBe(packet.accepted_observation_count);
  expect(explanation.deliveries.filter((d) => d.repeat).length).toBe(packet.duplicate_observation_count);
  expect(count("conflicting")).toBe(packet.rejected_observation_count);
  expect(new Set(explanation.deliveries.filter((d) => d.decision === "conflicting").map((d) => d.observation_id)).size).toBe(packet.conflicting_observation_count);
  expect(explanation.counts).toEqual({
    accepted_observation_count: packet.accepted_observation_count,
    duplicate_observation_count: packet.duplicate_observation_count,
    conflicting_observation_count: packet.conflicting_observation_count,
    rejected_observation_count: packet.rejected_observation_count,
    rejected_deliveries: 0,
  });
  // The parts each delivery feeds are the packet's: subjects and their label summaries, history, conflicts.
  const accepted = explanation.deliveries.filter((d) => d.decision === "accepted");
  for (const subject of packet.subjects) {
    const feeding = accepted.filter((d) => d.feeds.subject_id === subject.subject_id).length;
    expect(feeding).toBe(subject.observation_count);
    expect(subject.evidence_label_summary.reduce((n, e) => n + e.observation_count, 0)).toBe(feeding);
  }
  for (const d of accepted) {
    const placed = chosen.find((p) => p.partition === d.partition && p.offset === d.offset)!;
    expect(d.feeds.subject_id).toBe(subjectIdOf(placed.observation));
  }
  expect(new Set(accepted.filter((d) => d.feeds.history).map((d) => d.observation_id))).toEqual(new Set(packet.observation_history.map((h) => h.observation_id)));
  expect(new Set(explanation.deliveries.filter((d) => d.feeds.conflict).map((d) => d.observation_id))).toEqual(
    new Set(packet.rejections.map((r) => r.observation_id)),
  );
  for (const d of explanation.deliveries) if (d.decision !== "accepted") expect(d.feeds.subject_id).toBeNull();
}

describe("explain", () => {
  it("accounts for every delivery once; the decisions' counts are the packet's counters, at every point", async () => {
    for (const seed of [21, 22, 23]) {
      const rng = new Prng(seed);
      const placed = workload(seed, 160);
      const { store, identity, context } = await fold(placed, rng);
      const all = indexedDeliveries(await history(store, identity, context));
      const whole = explainDeliveries(context, all, null)!;
      check(whole, placed, identity);
      expect(whole.packet).toBe(await store.read(1, identity));
      expect(whole.deliveries.some((d) => d.decision === "conflicting"), "the workload has conflicts").toBe(true);
      expect(whole.deliveries.some((d) => d.decision === "duplicate"), "and duplicates").toBe(true);
      for (let i = 0; i < 10; i++) {
        const at = rng.pick(placed);
        const point = { partition: at.partition, offset: at.offset };
        const chosen = placed.filter((p) => p.partition === point.partition && p.offset <= point.offset);
        check(explainDeliveries(context, all, { points: [point] })!, chosen, identity);
      }
    }
  });

  it("a packet rejected past 128 subjects: every delivery rejected, the counts the rejected packet's counters", async () => {
    const observations = [...simulate({ agents: 1, observationsPerAgent: 200, snapshotEvery: 100_000, duplicateRate: 0.05, conflictRate: 0.02, memories: 400, seed: 128 })].map((d) => d.observation);
    const placed = observations.map((observation, i) => ({ observation, partition: 0, offset: BigInt(i), timestamp: String(1_790_000_000_000 + i) }));
    const { store, identity, context } = await fold(placed, new Prng(128));
    const explanation = explainDeliveries(context, indexedDeliveries(await history(store, identity, context)), null)!;
    const packet = JSON.parse(expectedPackets(observations).get(identity)!) as Record<string, number> & { rejections: { reason_codes: string[] }[] };
    expect(packet.rejections[0]!.reason_codes).toEqual(["projection_subject_limit_exceeded"]);
    expect(explanation.packet).toBe(expectedPackets(observations).get(identity));
    expect(new Set(explanation.deliveries.map((d) => `${d.decision} ${d.reason}`))).toEqual(new Set(["rejected projection_subject_limit_exceeded"]));
    expect(explanation.counts).toEqual({
      accepted_observation_count: packet.accepted_observation_count,
      duplicate_observation_count: packet.duplicate_observation_count,
      conflicting_observation_count: packet.conflicting_observation_count,
      rejected_observation_count: packet.rejected_observation_count,
      rejected_deliveries: 200,
    });
    expect(packet.rejected_observation_count).toBeGreaterThan(128);
  });

  it("a packet rejected past the delivery bound: every delivery rejected with its reason, none feeding a part", async () => {
    const placed = workload(5, 1200)
      .slice(0, 1100)
      .map((p, i) => ({ ...p, partition: 0, offset: BigInt(i) }));
    const { store, identity, context } = await fold(placed, new Prng(5));
    const all = indexedDeliveries(await history(store, identity, context));
    expect(all).toHaveLength(MAX_INDEX_ENTRIES);
    const explanation = explainDeliveries(context, all, null)!;
    expect(explanation.status).toBe("rejected");
    expect(explanation.packet).toBe(await store.read(1, identity));
    expect(explanation.deliveries).toHaveLength(MAX_INDEX_ENTRIES);
    expect(new Set(explanation.deliveries.map((d) => `${d.decision} ${d.reason}`))).toEqual(new Set(["rejected observation_malformed"]));
    expect(explanation.counts.rejected_deliveries).toBe(MAX_INDEX_ENTRIES);
    // The counts are the rejected packet's counters, the reducer's (not counts of the decisions).
    const packet = JSON.parse(expectedPackets(placed.slice(0, MAX_INDEX_ENTRIES).map((p) => p.observation)).get(identity)!) as Record<string, number>;
    expect(explanation.counts).toEqual({
      accepted_observation_count: packet.accepted_observation_count,
      duplicate_observation_count: packet.duplicate_observation_count,
      conflicting_observation_count: packet.conflicting_observation_count,
      rejected_observation_count: packet.rejected_observation_count,
      rejected_deliveries: MAX_INDEX_ENTRIES,
    });
    expect(packet.rejected_observation_count).toBe(1);
    // Before the crossing delivery the payloads are gone: no explanation, as no as-of read.
    expect(explainDeliveries(context, all, { points: [{ partition: 0, offset: 100n }] })).toBeNull();
  });
});
