/**
 * A flush reduces every subject it rewrites into one scratch subject and one
 * scratch proposal (subjectOfGroup's `reuse`), written out before the next
 * reduction. Each result must equal a fresh reduction of the same group,
 * whatever was reduced into the scratch before: fewer summary buckets, fewer
 * or more reason codes, no proposal after one.
 */
import { describe, expect, it } from "vitest";
import { simulate } from "../../producers/simulation.js";
import { storedProposal, storedSubject } from "../../src/core/compact-json.js";
import { subjectGroupKey, subjectGroupOf, subjectOfGroup, type SubjectGroup } from "../../src/core/identity-analysis.js";
import { subjectIdOf } from "../../src/core/identity.js";
import type { Observation } from "../../src/core/observation.js";
import { Prng } from "../../producers/simulation.js";
import { observation } from "../support/fixtures.js";

/** The groups of `observations`, each observation in its subject's group, in id order. */
function groupsOf(observations: readonly Observation[]): SubjectGroup[] {
  const groups = new Map<string, SubjectGroup>();
  for (const o of observations) {
    const key = subjectGroupKey(o);
    let g = groups.get(key);
    if (g === undefined) groups.set(key, (g = subjectGroupOf(o)));
    g.items.push(o);
  }
  for (const g of groups.values()) g.items.sort((a, b) => (a.observation_id < b.observation_id ? -1 : 1));
  return [...groups.values()];
}

const simulated = [...simulate({ agents: 2, observationsPerAgent: 400, snapshotEvery: 1e9, duplicateRate: 0, conflictRate: 0, memories: 6, seed: 11 })].map((d) => d.observation);

// Hand-made subjects whose reviews differ most: two reason codes (an unknown at the strongest tier beside two
// directional labels), a harmful estimate, one plain helpful observation, and a lineage subject.
const DIGEST = "00000000000000aa";
const handMade = [
  observation({ digests: [DIGEST], utility_label: "unknown", evidence_basis: "owner_correction", confidence: 0.9, created_at: "2026-11-01T00:00:01Z" }),
  observation({ digests: [DIGEST], utility_label: "helpful", evidence_basis: "owner_correction", confidence: 0.4, outcome_ref: "outcome:2", created_at: "2026-11-01T00:00:02Z" }),
  observation({ digests: [DIGEST], utility_label: "harmful", evidence_basis: "owner_correction", confidence: 0.3, outcome_ref: "outcome:3", created_at: "2026-11-01T00:00:03Z" }),
  observation({ digests: ["00000000000000bb"], utility_label: "harmful", evidence_basis: "controlled_replay", confidence: 0.7 }),
  observation({ digests: ["00000000000000cc"], utility_label: "helpful", evidence_basis: "evaluator_inference", confidence: 0.2 }),
  observation({ digests: ["00000000000000dd"], attribution_level: "none", utility_label: "unknown", evidence_basis: "deterministic_effect", confidence: 0.6 }),
];

describe("a subject reduced into the scratch subject", () => {
  it("equals a fresh reduction of its group, and writes the same stored subject and proposal, in any order of groups", () => {
    const groups = [...groupsOf(simulated), ...groupsOf(handMade)];
    const reasonCounts = new Set<number>();
    const summaryLengths = new Set<number>();
    const rng = new Prng(3);
    for (let i = 0; i < 3000; i++) {
      const group = groups[Math.floor(rng.next() * groups.length)]!;
      const fresh = subjectOfGroup(group);
      const reused = subjectOfGroup(group, undefined, undefined, true);
      expect(reused.subject).toStrictEqual(fresh.subject);
      expect(reused.proposal).toStrictEqual(fresh.proposal);
      expect(storedSubject(reused.subject)).toBe(storedSubject(fresh.subject));
      expect(reused.proposal === null ? null : storedProposal(reused.proposal)).toBe(fresh.proposal === null ? null : storedProposal(fresh.proposal));
      reasonCounts.add(fresh.subject.review.reason_codes.length);
      summaryLengths.add(fresh.subject.evidence_label_summary.length);
    }
    // The sequence went up and down in what the scratch held.
    expect([...reasonCounts].sort()).toEqual([0, 1, 2]);
    expect(summaryLengths.size).toBeGreaterThan(2);
  });
});

describe("a subject's group key", () => {
  it("is equal for two accepted observations exactly when their subject ids are", () => {
    // Lineage subjects differ by receipt alone; set subjects by one digest of two; item and set share a digest.
    const shapes = [
      ...simulated.slice(0, 200),
      ...handMade,
      observation({ digests: ["00000000000000dd"], attribution_level: "none", utility_label: "unknown", evidence_basis: "deterministic_effect", confidence: 0.6, application_id: "app:2" }),
      observation({ digests: ["00000000000000aa", "00000000000000bb"], attribution_level: "set", utility_label: "unknown", evidence_basis: "insufficient", confidence: 0 }),
      observation({ digests: ["00000000000000aa", "00000000000000cc"], attribution_level: "set", utility_label: "unknown", evidence_basis: "insufficient", confidence: 0 }),
      observation({ digests: [`sha256:${"ab".repeat(32)}`], utility_label: "unknown", evidence_basis: "insufficient", confidence: 0 }),
    ];
    let same = 0;
    for (const a of shapes) {
      for (const b of shapes) {
        const equalIds = subjectIdOf(a) === subjectIdOf(b);
        expect(subjectGroupKey(a) === subjectGroupKey(b), `${a.observation_id} ${b.observation_id}`).toBe(equalIds);
        if (equalIds && a !== b) same++;
      }
    }
    expect(same).toBeGreaterThan(0);
  });
});
