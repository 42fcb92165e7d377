/**
 * Diff (src/fold/projection-diff.ts) between two points of an identity's past: its status, counters, subjects
 * and conflicts are those of the oracle's packets at the two points, and its deliveries are the ones between
 * them, all found here by the test's own filters.
 */
import { describe, expect, it } from "vitest";
import { canonicalJson, parsePyJson, type PyValue } from "../../src/core/index.js";
import { observationFingerprint } from "../../src/core/observation.js";
import { indexedDeliveries, type LogPosition } from "../../src/fold/offset-index.js";
import { diffExplanations } from "../../src/fold/projection-diff.js";
import { explainDeliveries } from "../../src/fold/provenance.js";
import { Prng, simulate } from "../../producers/simulation.js";
import { fold, history, workload, type Placed } from "../support/indexed-identity.js";
import { expectedPackets } from "../support/oracle.js";

interface OraclePacket {
  status: string;
  subjects: Record<string, unknown>[];
  rejections: { observation_id?: string }[];
  [counter: string]: unknown;
}

const upTo = (placed: readonly Placed[], point: LogPosition) => placed.filter((p) => p.partition === point.partition && p.offset <= point.offset);

function oracleText(chosen: readonly Placed[], identity: string): string {
  return expectedPackets(chosen.map((p) => p.observation)).get(identity)!;
}

function oracle(chosen: readonly Placed[], identity: string): OraclePacket {
  return JSON.parse(oracleText(chosen, identity)) as OraclePacket;
}

describe("diff", () => {
  it("between two points: status, counters, subjects and conflicts of the two packets, and the deliveries between them", async () => {
    const rng = new Prng(31);
    const placed = workload(31, 140).map((p) => ({ ...p, partition: 0 }));
    // One partition, offsets in order: a point is a prefix.
    placed.forEach((p, i) => (p.offset = BigInt(i * 3)));
    const { store, identity, context } = await fold(placed, rng);
    const all = indexedDeliveries(await history(store, identity, context));
    let sawSubjectChange = false;
    let sawConflictAdded = false;
    for (let i = 0; i < 12; i++) {
      const [x, y] = [rng.int(0, placed.length - 1), rng.int(0, placed.length - 1)].sort((a, b) => a - b) as [number, number];
      const from = { partition: 0, offset: placed[x]!.offset };
      const to = { partition: 0, offset: placed[y]!.offset };
      const diff = diffExplanations(explainDeliveries(context, all, { points: [from] })!, explainDeliveries(context, all, { points: [to] })!);
      const a = oracle(upTo(placed, from), identity);
      const b = oracle(upTo(placed, to), identity);
      expect(diff.status).toEqual(a.status === b.status ? null : { from: a.status, to: b.status });
      for (const counter of ["accepted_observation_count", "duplicate_observation_count", "conflicting_observation_count", "rejected_observation_count"] as const) {
        expect(diff.counters[counter]).toEqual(a[counter] === b[counter] ? undefined : { from: a[counter], to: b[counter] });
      }
      const ids = (p: OraclePacket) => new Set(p.subjects.map((s) => String(s.subject_id)));
      expect(diff.subjects.added).toEqual([...ids(b)].filter((id) => !ids(a).has(id)).sort());
      expect(diff.subjects.removed).toEqual([...ids(a)].filter((id) => !ids(b).has(id)).sort());
      const changedIds = b.subjects
        .filter((s) => {
          const prior = a.subjects.find((q) => q.subject_id === s.subject_id);
          return prior !== undefined && JSON.stringify(prior) !== JSON.stringify(s);
        })
        .map((s) => String(s.subject_id))
        .sort();
      expect(diff.subjects.changed.map((c) => c.subject_id)).toEqual(changedIds);
      for (const c of diff.subjects.changed) {
        const prior = a.subjects.find((q) => q.subject_id === c.subject_id)!;
        const now = b.subjects.find((q) => q.subject_id === c.subject_id)!;
        // Values as the packet writes them (1.0 stays 1.0): compared in canonical JSON.
        const text = (v: unknown) => (v === null || v === undefined ? "null" : canonicalJson(v as PyValue));
        const pyPrior = (parsePyJson(oracleText(upTo(placed, from), identity)) as { subjects: Record<string, PyValue>[] }).subjects.find((q) => q.subject_id === c.subject_id)!;
        const pyNow = (parsePyJson(oracleText(upTo(placed, to), identity)) as { subjects: Record<string, PyValue>[] }).subjects.find((q) => q.subject_id === c.subject_id)!;
        expect(Object.keys(c.fields).sort()).toEqual(Object.keys(now).filter((f) => JSON.stringify(prior[f]) !== JSON.stringify(now[f])).sort());
        for (const [field, change] of Object.entries(c.fields)) expect([text(change.from), text(change.to)]).toEqual([text(pyPrior[field]), text(pyNow[field])]);
        sawSubjectChange = true;
      }
      const conflicts = (p: OraclePacket) => new Set(p.rejections.map((r) => r.observation_id));
      expect(diff.conflicts.added).toEqual([...conflicts(b)].filter((id) => !conflicts(a).has(id)).sort());
      if (diff.conflicts.added.length > 0) sawConflictAdded = true;
      expect(diff.deliveries.added.map((d) => d.offset)).toEqual(placed.slice(x + 1, y + 1).map((p) => p.offset));
      expect(diff.deliveries.removed).toEqual([]);
      expect(diff.same_bytes).toBe(x === y);
    }
    expect(sawSubjectChange, "some pair of points changed a subject").toBe(true);
    expect(sawConflictAdded, "and added a conflict").toBe(true);
  });

  it("conflicts beyond the packet's first 64: every id quarantined between the points, none reported removed", async () => {
    const observations = [...simulate({ agents: 1, observationsPerAgent: 600, snapshotEvery: 100_000, duplicateRate: 0.1, conflictRate: 0.25, memories: 30, seed: 33 })].map((d) => d.observation);
    const placed: Placed[] = observations.map((observation, i) => ({ observation, partition: 0, offset: BigInt(i), timestamp: String(1_790_000_000_000 + i) }));
    const { store, identity, context } = await fold(placed, new Prng(33));
    const all = indexedDeliveries(await history(store, identity, context));
    // Conflicted ids as the test sees them: an id delivered with more than one fingerprint.
    const conflicted = (chosen: readonly Placed[]) => {
      const prints = new Map<string, Set<string>>();
      for (const p of chosen) prints.set(p.observation.observation_id, (prints.get(p.observation.observation_id) ?? new Set()).add(observationFingerprint(p.observation)));
      return new Set([...prints].filter(([, s]) => s.size > 1).map(([id]) => id));
    };
    const atEnd = conflicted(placed);
    expect(atEnd.size, "more conflicts than the packet lists").toBeGreaterThan(64);
    const half = placed[300]!;
    const diff = diffExplanations(explainDeliveries(context, all, { points: [{ partition: 0, offset: half.offset }] })!, explainDeliveries(context, all, null)!);
    const before = conflicted(placed.slice(0, 301));
    expect(diff.conflicts.added).toEqual([...atEnd].filter((id) => !before.has(id)).sort());
    expect(diff.conflicts.removed).toEqual([]);
  });

  it("the same point: nothing changed, the same bytes", async () => {
    const placed = workload(32, 30);
    const { store, identity, context } = await fold(placed, new Prng(32));
    const all = indexedDeliveries(await history(store, identity, context));
    const whole = explainDeliveries(context, all, null)!;
    const diff = diffExplanations(whole, whole);
    expect(diff).toEqual({
      status: null,
      counters: {},
      subjects: { added: [], removed: [], changed: [] },
      conflicts: { added: [], removed: [] },
      deliveries: { added: [], removed: [] },
      same_bytes: true,
    });
  });
});
