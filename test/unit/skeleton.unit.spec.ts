/**
 * The packet skeleton (src/core/packet-parts.ts skeletonFrom): one template
 * serves every identity, its context filled into holes. Held against the packet
 * built and serialized whole: canonical bytes once expanded, and the stored form
 * byte for byte (a context value that is a token, say a surface named "ready",
 * stored as the token, as compactJson stores it).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, quote } from "../../src/core/canonical-json.js";
import { VALUE_TOKENS, compactJson, expandTokens } from "../../src/core/compact-json.js";
import type { ReducerContext } from "../../src/core/identity.js";
import { SKELETON_SEPARATOR, skeletonFrom } from "../../src/core/packet-parts.js";
import { MAX_PROJECTION_HISTORY } from "../../src/core/projection-limits.js";
import { baseProjection } from "../../src/core/projection.js";
import { summaryOf, type SummaryCounts } from "../../src/core/reducer.js";

const LISTS = ["observation_history", "rejections", "review_proposals", "subjects"] as const;
// Refs as the contract allows them, and the token values among them.
const ref = fc.oneof(
  fc.constantFrom(...(VALUE_TOKENS.filter((v) => typeof v === "string") as string[]), "a", "agent:1", "x.y-z_0:9"),
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,40}$/),
);
const context: fc.Arbitrary<ReducerContext> = fc.record({
  scope: fc.record({ agent_id: ref, project_id: ref, corpus_id: ref, surface_id: ref }),
  retrieval_snapshot_ref: ref,
  policy_snapshot_ref: ref,
  reducer_version: ref,
});
const counts: fc.Arbitrary<SummaryCounts> = fc.record({
  accepted: fc.nat(1_024),
  latest: fc.constantFrom<[string | null, string | null]>([null, null], ["2026-11-01T00:00:00Z", "muo_1"], ["2026-11-01T00:00:00.5+01:00", "id:\"q\""]),
  duplicates: fc.nat(50),
  conflicts: fc.nat(5),
  conflictingDeliveries: fc.nat(20),
  conflictProposal: fc.boolean(),
});
const levels = fc.record({ item: fc.nat(100), set: fc.nat(100), none: fc.nat(100) });

/** The whole packet with empty lists, the counters as the skeleton states them (independent of skeletonFrom). */
function packetOf(c: ReducerContext, k: SummaryCounts, l: { item: number; set: number; none: number }) {
  return {
    ...baseProjection(c, summaryOf(c, k)),
    subject_count: l.item + l.set + l.none,
    item_subject_count: l.item,
    set_subject_count: l.set,
    unresolved_lineage_count: l.none,
    observation_history_truncated: k.accepted > MAX_PROJECTION_HISTORY,
  };
}

describe("the packet skeleton", () => {
  it("expands to the canonical packet, for any context and counters", () => {
    fc.assert(
      fc.property(context, counts, levels, (c, k, l) => {
        const skeleton = skeletonFrom(c, k, l);
        expect(skeleton.split(SKELETON_SEPARATOR)).toHaveLength(LISTS.length + 1);
        expect(expandTokens(skeleton.split(SKELETON_SEPARATOR).join("[]"))).toBe(canonicalJson(packetOf(c, k, l)));
      }),
      { numRuns: 2_000 },
    );
  });

  it("is the stored form compactJson writes, the counters' own fields as text (not tokens)", () => {
    fc.assert(
      fc.property(context, counts, levels, (c, k, l) => {
        const packet: Record<string, unknown> = packetOf(c, k, l);
        // compactJson with markers where the skeleton writes plain JSON (status and the two booleans) and the lists.
        const plain = { status: packet.status, projection_ready: packet.projection_ready, observation_history_truncated: packet.observation_history_truncated };
        for (const field of Object.keys(plain)) packet[field] = `\u0001${field}`;
        for (const field of LISTS) packet[field] = `\u0001${field}`;
        let expected = compactJson(packet as never);
        for (const [field, v] of Object.entries(plain)) expected = expected.replace(quote(`\u0001${field}`), JSON.stringify(v));
        for (const field of LISTS) expected = expected.replace(quote(`\u0001${field}`), SKELETON_SEPARATOR);
        expect(skeletonFrom(c, k, l)).toBe(expected);
      }),
      { numRuns: 2_000 },
    );
  });
});
