/**
 * The incremental parts (src/core/identity-parts.ts) against computeParts from
 * scratch: after every flush, over shuffled streams (so retries arrive before
 * the originals and representatives change), conflicts, more than 256 accepted
 * observations, more than 128 subjects, and past the 1,024-delivery bound.
 */
import { describe, expect, it } from "vitest";
import { simulate } from "../../producers/simulation.js";
import { contextOfObservation } from "../../src/core/identity.js";
import { IdentityParts } from "../../src/core/identity-parts.js";
import { emptyIdentityState, foldDelivery } from "../../src/core/identity-state.js";
import { observationFingerprint, type Observation } from "../../src/core/observation.js";
import { computeParts, type PartsView } from "../../src/core/packet-parts.js";
import { Prng } from "../../producers/simulation.js";
import { contentDigest, elementsOfParts } from "../support/content-digest.js";

function comparable(p: PartsView) {
  return {
    rejected: p.rejected,
    skeleton: p.skeleton,
    accepted: p.accepted,
    deliveries: p.deliveries,
    subjects: Object.fromEntries([...p.subjects].map(([id, s]) => [id, [s.member, s.fragment, s.proposal, s.latest]])),
    history: Object.fromEntries([...p.history].map(([id, h]) => [id, [h.member, h.fragment]])),
    conflicts: Object.fromEntries(p.conflicts),
  };
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

const cases = [
  { name: "small identity, many conflicts", count: 60, seed: 1, memories: 6, conflictRate: 0.2 },
  { name: "past 256 accepted, few subjects", count: 400, seed: 2, memories: 4, conflictRate: 0.02 },
  { name: "more than 128 subjects", count: 700, seed: 3, memories: 300, conflictRate: 0.01 },
  { name: "past the 1,024-delivery bound", count: 1_100, seed: 4, memories: 6, conflictRate: 0.01 },
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
      for (let i = 0; i < observations.length; ) {
        const size = 1 + Math.floor(rng.next() * 40);
        for (const o of observations.slice(i, i + size)) {
          const fp = observationFingerprint(o);
          inc.fold(o, fp);
          foldDelivery(scratch, o, fp);
        }
        i += size;
        inc.flush();
        if (inc.sealed) scratch.byId.clear(); // what the fold keeps past the bound
        const expected = computeParts(context, scratch);
        expect(comparable(inc.parts)).toEqual(comparable(expected));
        expect(inc.digest()).toBe(contentDigest(elementsOfParts(expected)));
        sawRejected ||= expected.rejected !== null;
        sawConflict ||= expected.conflicts.size > 0;
      }
      if (c.count > 1_024) expect(inc.sealed).toBe(true);
      if (c.memories === 300) expect(sawRejected).toBe(true);
      if (c.conflictRate >= 0.2) expect(sawConflict).toBe(true);
    });
  }

  it("a model loaded from its state equals the one that folded it, digest included", () => {
    const observations = stream(200, 9, 6, 0.05);
    const context = contextOfObservation(observations[0]!, "memory_utility_reducer_v0");
    const folded = new IdentityParts(context);
    for (const o of observations) folded.fold(o, observationFingerprint(o));
    folded.flush();
    const loaded = new IdentityParts(context);
    loaded.load(folded.state.byId, folded.state.deliveries);
    loaded.flush();
    expect(comparable(loaded.parts)).toEqual(comparable(folded.parts));
    expect(loaded.digest()).toBe(folded.digest());
  });
});
