/**
 * The incremental parts (src/core/identity-parts.ts) against computeParts from
 * scratch: after every flush, over shuffled streams (so retries arrive before
 * the originals and representatives change), conflicts, more than 256 accepted
 * observations, more than 128 subjects, and past the 1,024-delivery bound.
 */
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { simulate } from "../../producers/simulation.js";
import { contextOfObservation, type ReducerContext } from "../../src/core/identity.js";
import { IdentityParts } from "../../src/core/identity-parts.js";
import { emptyIdentityState, foldDelivery } from "../../src/core/identity-state.js";
import { observationFingerprint, type Observation } from "../../src/core/observation.js";
import { computeParts, type PartsView } from "../../src/core/packet-parts.js";
import { Prng } from "../../producers/simulation.js";
import { contentDigest, elementsOfParts, subjectElement } from "../support/content-digest.js";
import type { PyObject } from "../../src/core/pyvalue.js";
import { depthRuns } from "../support/depth.js";
import { fragmentText } from "../../src/core/fragment.js";

function comparable(p: PartsView) {
  return {
    rejected: p.rejected,
    skeleton: p.skeleton,
    accepted: p.accepted,
    deliveries: p.deliveries,
    subjects: Object.fromEntries([...p.subjects].map(([id, s]) => [id, [s.member, fragmentText(s.fragment), s.proposal, s.latest]])),
    history: Object.fromEntries([...p.history].map(([id, h]) => [id, [h.member, fragmentText(h.fragment)]])),
    conflicts: Object.fromEntries(p.conflicts),
    // (the incremental parts' subjects and history are views: their sizes are counted apart from their entries)
    sizes: [p.subjects.size, p.history.size, p.conflicts.size],
  };
}

/** Incremental parts of `observations`, folded in order and flushed once. */
function foldedParts(context: ReducerContext, observations: readonly Observation[]): IdentityParts {
  const inc = new IdentityParts(context);
  for (const o of observations) inc.fold(o, observationFingerprint(o));
  inc.flush();
  return inc;
}

/** The state of `observations` folded in order, as the reference keeps it. */
function foldedState(observations: readonly Observation[]) {
  const state = emptyIdentityState();
  for (const o of observations) foldDelivery(state, o, observationFingerprint(o));
  return state;
}

function stream(count: number, seed: number, memories: number, conflictRate: number): Observation[] {
  const all = [...simulate({ agents: 1, observationsPerAgent: count, snapshotEvery: 1e9, duplicateRate: 0.15, conflictRate, memories, seed })].map((d) => d.observation);
  const rng = new Prng(seed * 7 + 1);
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all;
}

/** A random row of one subject's observation: confidence, basis, label, second of the day it is stamped at, arrival key. */
interface Row {
  c: number;
  basis: string;
  label: string;
  t: number;
  arrives: number;
}

/** One observation per row, ids in row order (`muo_0000`, …), stamped on 2026-11-01 at the row's second. */
function rowObservations(base: Observation, rows: readonly Row[]): Observation[] {
  const two = (n: number) => String(n).padStart(2, "0");
  return rows.map((r, i) => ({
    ...base,
    observation_id: `muo_${String(i).padStart(4, "0")}`,
    confidence: r.c,
    evidence_basis: r.basis,
    utility_label: r.label,
    created_at: `2026-11-01T${two(Math.floor(r.t / 3600))}:${two(Math.floor(r.t / 60) % 60)}:${two(r.t % 60)}Z`,
  })) as Observation[];
}

/** The observations in the order their rows' arrival keys give (ties in row order). */
function arrivalOrder(items: readonly Observation[], rows: readonly Row[]): Observation[] {
  return items.map((o, i) => [rows[i]!.arrives, o] as const).sort((a, b) => a[0] - b[0]).map(([, o]) => o);
}

/** A payload's fingerprint as the contract makes it, or in another form (the model keeps that one apart from the shelf). */
type FingerprintOf = (o: Observation) => string;
const otherForm: FingerprintOf = (o) => observationFingerprint(o).toUpperCase();

const cases: { name: string; count: number; seed: number; memories: number; conflictRate: number; fingerprintOf?: FingerprintOf }[] = [
  { name: "small identity, many conflicts", count: 60, seed: 1, memories: 6, conflictRate: 0.2 },
  { name: "past 256 accepted, few subjects", count: 400, seed: 2, memories: 4, conflictRate: 0.02 },
  { name: "more than 128 subjects", count: 700, seed: 3, memories: 300, conflictRate: 0.01 },
  { name: "past the 1,024-delivery bound", count: 1_100, seed: 4, memories: 6, conflictRate: 0.01 },
  { name: "fingerprints not of the contract's form (kept beside their observations), many conflicts", count: 200, seed: 5, memories: 6, conflictRate: 0.2, fingerprintOf: otherForm },
];

describe("incremental identity parts equal computeParts from scratch", () => {
  for (const c of cases) {
    it(c.name, () => {
      const observations = stream(c.count, c.seed, c.memories, c.conflictRate);
      const context = contextOfObservation(observations[0]!, "memory_utility_reducer_v0");
      const inc = new IdentityParts(context);
      const scratch = emptyIdentityState();
      const rng = new Prng(c.seed);
      let sawRejected = false;
      let sawConflict = false;
      // The digest hashes a part's fragment alone (part-hash.ts): that holds only if a fragment names one part and
      // one order member, over every flush of the stream (representatives change, subjects come and go).
      const memberOf = new Map<string, string>();
      const oneMember = (element: string, member: string) => {
        expect(memberOf.get(element) ?? member).toBe(member);
        memberOf.set(element, member);
      };
      for (let i = 0; i < observations.length; ) {
        const size = 1 + Math.floor(rng.next() * 40);
        for (const o of observations.slice(i, i + size)) {
          const fp = (c.fingerprintOf ?? observationFingerprint)(o);
          inc.fold(o, fp);
          foldDelivery(scratch, o, fp);
        }
        i += size;
        inc.flush();
        if (inc.sealed) scratch.byId.clear(); // what the fold keeps past the bound
        const expected = computeParts(context, scratch);
        expect(comparable(inc.parts)).toEqual(comparable(expected));
        expect(inc.digest()).toBe(contentDigest(elementsOfParts(expected)));
        for (const part of expected.subjects.values()) oneMember(subjectElement(fragmentText(part.fragment), part.proposal), `s ${part.member}`);
        for (const part of expected.history.values()) oneMember(fragmentText(part.fragment), `h ${part.member}`);
        for (const [id, fragment] of expected.conflicts) oneMember(fragment, `c ${id}`);
        sawRejected ||= expected.rejected !== null;
        sawConflict ||= expected.conflicts.size > 0;
      }
      expect(memberOf.size).toBeGreaterThan(c.count / 4); // the check saw the stream's parts
      if (c.count > 1_024) expect(inc.sealed).toBe(true);
      if (c.memories === 300) expect(sawRejected).toBe(true);
      if (c.conflictRate >= 0.2) expect(sawConflict).toBe(true);
    });
  }

  it("take back a stored history entry as the store holds it, however often it changes before the next flush", () => {
    // Given a stored entry, when one flush meets two earlier retries of it (each the representative in turn), or an
    // earlier retry and then a second payload, then the flush removes the stored member and hash, not the retry's.
    const [o] = stream(1, 11, 3, 0);
    const secondsBefore = (n: number) => new Date(Date.parse(o!.created_at) - n * 1000).toISOString().replace(".000Z", "Z");
    const context = contextOfObservation(o!, "memory_utility_reducer_v0");
    const storedMember = () => computeParts(context, foldedState([o!])).history.get(o!.observation_id)!.member;
    for (const later of [
      [{ ...o!, created_at: secondsBefore(1) }, { ...o!, created_at: secondsBefore(2) }],
      [{ ...o!, created_at: secondsBefore(1) }, { ...o!, confidence: o!.confidence === 0.5 ? 0.25 : 0.5 }],
    ]) {
      const inc = foldedParts(context, [o!]);
      for (const d of later) inc.fold(d, observationFingerprint(d));
      const changes = inc.flush();
      const expected = computeParts(context, foldedState([o!, ...later]));
      expect(comparable(inc.parts)).toEqual(comparable(expected));
      expect(inc.digest()).toBe(contentDigest(elementsOfParts(expected)));
      expect(changes.history.map((c) => [c.id, c.before?.member])).toEqual([[o!.observation_id, storedMember()]]);
    }
  });

  it("models without conflicts share nothing a conflict of another model writes", () => {
    // Conflict maps are created on a model's first conflict (identity-parts.ts): one model's conflicts must not
    // show in another model, before or after, and a model sealed past the bound holds none.
    const withConflicts = stream(60, 1, 6, 0.2);
    const clean = stream(40, 5, 6, 0);
    const context = contextOfObservation(withConflicts[0]!, "memory_utility_reducer_v0");
    const before = foldedParts(context, clean);
    const conflicted = foldedParts(context, withConflicts);
    const scratch = emptyIdentityState();
    for (const o of withConflicts) foldDelivery(scratch, o);
    const after = foldedParts(context, clean);
    const expected = computeParts(context, scratch);
    expect(expected.conflicts.size).toBeGreaterThan(0);
    expect(comparable(conflicted.parts)).toEqual(comparable(expected));
    for (const model of [before, after]) {
      expect(model.parts.conflicts.size).toBe(0);
      expect(model.parts.conflictCounts.size).toBe(0);
    }
    expect(after.digest()).toBe(before.digest());
    const sealed = foldedParts(context, stream(1_100, 4, 6, 0.05));
    expect(sealed.sealed).toBe(true);
    expect(sealed.parts.conflicts.size).toBe(0);
    expect(sealed.kept).toBe(0);
  });

  it("a model loaded from its state equals the one that folded it, digest included", () => {
    const observations = stream(200, 9, 6, 0.05);
    const context = contextOfObservation(observations[0]!, "memory_utility_reducer_v0");
    const folded = foldedParts(context, observations);
    const loaded = new IdentityParts(context);
    loaded.load(folded.state.byId, folded.state.deliveries);
    loaded.flush();
    expect(comparable(loaded.parts)).toEqual(comparable(folded.parts));
    expect(loaded.digest()).toBe(folded.digest());
    // Both keep one observation per distinct payload of each id, counted from the state itself.
    let versions = 0;
    for (const v of folded.state.byId.values()) versions += v.length;
    expect(versions).toBeGreaterThan(folded.state.byId.size); // some ids have two payloads
    expect(folded.kept).toBe(versions);
    expect(loaded.kept).toBe(versions);
  });
});

describe("the readback re-reduction check (time order vs id order)", () => {
  it("names the same first differing field as a full re-reduction, on random confidences", async () => {
    const fc = (await import("fast-check")).default;
    const { subjectPartOf } = await import("../../src/core/packet-parts.js");
    const { FactorList, reduceSubject } = await import("../../src/core/subject.js");
    // Factor lists as a fold keeps them: built by inserting at the sorted position, in arrival order, and read
    // after every insert as a flush reads them (so an append multiplies into the stats kept from the last read).
    // Whatever the inserts did, the stats read at the end are bit for bit those of one walk of the final order.
    const sameStats = (a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>) =>
      Object.keys(b).every((k) => (Array.isArray(b[k]) ? (b[k] as number[]).every((v, i) => Object.is(v, (a[k] as number[])[i])) : Object.is(a[k], b[k])));
    let appendsAfterARead = 0;
    const factorsOf = (arrival: readonly Observation[], order: (a: Observation, b: Observation) => number) => {
      const list = FactorList.of([]);
      const sorted: Observation[] = [];
      for (const o of arrival) {
        let at = 0;
        while (at < sorted.length && order(sorted[at]!, o) < 0) at++;
        sorted.splice(at, 0, o);
        if (at === sorted.length - 1 && sorted.length > 1) appendsAfterARead++;
        list.insert(at, o);
        list.read();
      }
      if (!sameStats(list.read(), FactorList.of(sorted).read())) throw new Error("the kept stats differ from a walk of the same order");
      return list;
    };
    const byIdOrder = (a: Observation, b: Observation) => (a.observation_id < b.observation_id ? -1 : 1);
    const { compareOrder } = await import("../../src/core/ordering.js");
    const { pyEquals } = await import("../../src/core/pyvalue.js");
    const KEYS = ["utility_estimate", "effective_utility_label", "effective_evidence_basis", "confidence", "uncertainty", "support", "evidence_strength", "evidence_label_summary", "observation_count", "review"];
    const base = [...simulate({ agents: 1, observationsPerAgent: 5, snapshotEvery: 1e9, duplicateRate: 0, conflictRate: 0, seed: 3 })][0]!.observation;
    // Mostly one tier and one label, so buckets hold several factors (the other values keep the rest of the logic in play).
    const bases = ["deterministic_effect", "deterministic_effect", "deterministic_effect", "evaluator_inference"] as const;
    const labels = ["helpful", "helpful", "helpful", "neutral", "unknown"] as const;
    // Known to differ: 1 - (0.95 × 0.59 × 0.74 × 0.65) rounds to 0.7304 in this order and 0.730399 reversed.
    const known = [0.05, 0.41, 0.26, 0.35].map((c, i) => ({ ...base, observation_id: `muo_${i}`, confidence: c, evidence_basis: "deterministic_effect", utility_label: "helpful", created_at: `2026-11-01T00:00:0${9 - i}Z` })) as Observation[];
    expect(subjectPartOf({ level: "item", key: ["d"], subjectId: "mui_x", digests: ["0000000000000001"], items: known }).recheckFailure).toBe("utility_estimate");
    fc.assert(
      fc.property(
        // Two-decimal confidences (as agents write them): products in another order round differently now and then.
        fc.array(fc.record({ c: fc.integer({ min: 0, max: 100 }).map((x) => x / 100), basis: fc.constantFrom(...bases), label: fc.constantFrom(...labels), t: fc.nat(86_399), arrives: fc.nat(1_000) }), { minLength: 3, maxLength: 12 }),
        (rows) => {
          const items = rowObservations(base, rows);
          const group = { level: "item" as const, key: ["d"], subjectId: "mui_x", digests: ["0000000000000001"], items };
          const chrono = [...items].sort(compareOrder);
          const subject = reduceSubject(group.subjectId, group.level, group.digests, items);
          const again = reduceSubject(group.subjectId, group.level, group.digests, chrono);
          const expected = KEYS.find((k) => !pyEquals((subject as PyObject)[k], (again as PyObject)[k])) ?? null;
          const arrival = arrivalOrder(items, rows);
          const factors = { byId: factorsOf(arrival, byIdOrder), inTime: factorsOf(arrival, compareOrder) };
          const withFactors = subjectPartOf(group, chrono, factors);
          return (
            subjectPartOf(group, chrono).recheckFailure === expected &&
            subjectPartOf(group).recheckFailure === expected &&
            withFactors.recheckFailure === expected &&
            fragmentText(withFactors.fragment) === fragmentText(subjectPartOf(group).fragment)
          );
        },
      ),
      { numRuns: 5000 },
    );
    expect(appendsAfterARead).toBeGreaterThan(1000); // the kept stats were extended, not only walked
    // The same with another known pair of orders, among items of other tiers and labels (neutral: the field is `confidence`).
    const mixed = [...[0.11, 0.82, 0.03, 0.25].map((c, i) => ({ c, basis: "controlled_replay", label: "neutral", t: 50 - i })), { c: 0.5, basis: "evaluator_inference", label: "helpful", t: 1 }];
    const items = mixed.map((r, i) => ({ ...base, observation_id: `muo_${i}`, confidence: r.c, evidence_basis: r.basis, utility_label: r.label, created_at: `2026-11-01T00:00:${String(r.t).padStart(2, "0")}Z` })) as Observation[];
    expect(subjectPartOf({ level: "item", key: ["d"], subjectId: "mui_x", digests: ["0000000000000001"], items }).recheckFailure).toBe("confidence");
  });
});

describe("a large subject's factor lists (kept from 8 observations on)", () => {
  it("give the same estimate and the same readback check as computeParts, in any arrival order, on random confidences", async () => {
    const fc = (await import("fast-check")).default;
    const base = [...simulate({ agents: 1, observationsPerAgent: 5, snapshotEvery: 1e9, duplicateRate: 0, conflictRate: 0, seed: 3 })][0]!.observation;
    const context = contextOfObservation(base, "memory_utility_reducer_v0");
    let sawFailure = false;
    fc.assert(
      fc.property(
        // One subject (one tier and label mostly, so its buckets multiply many factors), arriving in any order.
        fc.array(
          fc.record({
            c: fc.integer({ min: 0, max: 100 }).map((x) => x / 100),
            basis: fc.constantFrom("deterministic_effect", "deterministic_effect", "controlled_replay"),
            label: fc.constantFrom("helpful", "helpful", "neutral", "unknown"),
            t: fc.nat(86_399),
            arrives: fc.nat(1_000),
            // Delivered again later: 1 a retry stamped a second earlier (it becomes the representative), 2 a changed judgment.
            again: fc.constantFrom(0, 0, 0, 0, 1, 2),
          }),
          { minLength: 8, maxLength: 24 },
        ),
        (rows) => {
          const items = rowObservations(base, rows);
          const arrival = arrivalOrder(items, rows);
          rows.forEach((r, i) => {
            const o = items[i]!;
            const earlier = new Date(Date.parse(o.created_at) - 1000).toISOString().replace(".000Z", "Z");
            if (r.again === 1) arrival.push({ ...o, created_at: earlier });
            if (r.again === 2) arrival.push({ ...o, confidence: o.confidence === 0.5 ? 0.25 : 0.5 });
          });
          const inc = new IdentityParts(context);
          const scratch = emptyIdentityState();
          // Compared after every delivery: a list left wrong by one splice shows as soon as a check depends on it.
          for (const o of arrival) {
            const fp = observationFingerprint(o);
            inc.fold(o, fp);
            foldDelivery(scratch, o, fp);
            inc.flush();
            const expected = computeParts(context, scratch);
            sawFailure ||= expected.rejected !== null;
            if (!isDeepStrictEqual(comparable(inc.parts), comparable(expected))) return false;
          }
          return true;
        },
      ),
      // First a known case: in id order 1 - (0.95 × 0.59 × 0.74 × 0.65) rounds to 0.7304, in time order (reversed) to
      // 0.730399, and four more observations multiply by 1; so the check fails, and its lists are compared, every run.
      { numRuns: depthRuns(3000), examples: [[[0.05, 0.41, 0.26, 0.35, 0, 0, 0, 0].map((c, i) => ({ c, basis: "deterministic_effect", label: "helpful", t: 100 - i, arrives: i, again: 0 }))]] },
    );
    // The runs met a subject whose readback check fails (an order-dependent rounding), so the check's lists were compared too.
    expect(sawFailure).toBe(true);
  }, 60_000);
});
