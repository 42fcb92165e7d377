import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContractError, parsePyJson, utilityProject, validateProjection } from "../../src/core/index.js";
import { streamInput } from "../support/arbitraries.js";
import { diffRuns, diffSeed } from "../support/differential.js";
import { ReferenceOracle } from "../support/reference.js";

let oracle: ReferenceOracle;
beforeAll(async () => {
  oracle = await ReferenceOracle.start();
});
afterAll(async () => {
  await oracle?.close();
});

type Json = any;
type Tamper = (p: Json, pick: (n: number) => number) => boolean;

const some = (xs: any[], pick: (n: number) => number): any => (xs.length ? xs[pick(xs.length)] : undefined);

/** One tampering per field class of the packet; returns false when the packet has nothing to tamper there. */
const TAMPERS: Record<string, Tamper> = {
  counter: (p, pick) => {
    const k = some(["accepted_observation_count", "duplicate_observation_count", "conflicting_observation_count", "rejected_observation_count", "subject_count", "item_subject_count"], pick)!;
    p[k] += 1;
    return true;
  },
  counterType: (p) => ((p.accepted_observation_count = `${p.accepted_observation_count}`), true),
  status: (p, pick) => ((p.status = some(["ready", "empty", "review_required", "rejected", "done"].filter((s) => s !== p.status), pick)), true),
  flag: (p, pick) => {
    const k = some(["ok", "projection_ready", "read_only", "grants_new_action_authority", "raw_content_captured", "observation_history_truncated"], pick)!;
    p[k] = !p[k];
    return true;
  },
  identity: (p) => ((p.reducer_identity = "mur_" + "0".repeat(64)), true),
  scope: (p) => ((p.scope.agent_id = p.scope.agent_id + "x"), true),
  extraKey: (p) => ((p.provider_uri = "viking://x"), true),
  missingKey: (p) => (delete p.review_proposals, true),
  latest: (p) => (p.last_observed_at === null ? false : ((p.last_observed_at = " " + p.last_observed_at), true)),
  subjectNumber: (p, pick) => {
    const s = some(p.subjects, pick);
    if (!s) return false;
    const k = some(["utility_estimate", "confidence", "uncertainty"], pick)!;
    s[k] = some([2.0, -0.5, s[k] + 0.001, 1e308 * 10, "0.5"], pick);
    return true;
  },
  subjectLabel: (p, pick) => {
    const s = some(p.subjects, pick);
    if (!s) return false;
    s.effective_utility_label = some(["helpful", "harmful", "neutral", "unknown"].filter((l) => l !== s.effective_utility_label), pick);
    return true;
  },
  subjectBasis: (p, pick) => {
    const s = some(p.subjects, pick);
    if (!s) return false;
    s.effective_evidence_basis = some(["owner_correction", "insufficient", "evaluator_inference"].filter((b) => b !== s.effective_evidence_basis), pick);
    return true;
  },
  subjectCounts: (p, pick) => {
    const s = some(p.subjects, pick);
    if (!s) return false;
    const table = some([s.support, s.evidence_strength], pick);
    const k = some(Object.keys(table), pick)!;
    table[k] += 1;
    return true;
  },
  summary: (p, pick) => {
    const s = some(p.subjects, pick);
    if (!s) return false;
    const e = some(s.evidence_label_summary as Json[], pick)!;
    if (pick(2) === 0) e.combined_confidence = Math.min(1, e.combined_confidence + 0.25);
    else s.evidence_label_summary.reverse();
    return true;
  },
  subjectDigests: (p, pick) => {
    const s = some(p.subjects, pick);
    if (!s) return false;
    s.memory_ref_digests = ["ffffffffffffffff"];
    return true;
  },
  review: (p, pick) => {
    const s = some(p.subjects, pick);
    if (!s) return false;
    if (pick(2) === 0) s.review.quarantine_proposed = !s.review.quarantine_proposed;
    else s.review.reason_codes = [...s.review.reason_codes, "zzz_extra"];
    return true;
  },
  historyField: (p, pick) => {
    const h = some(p.observation_history, pick);
    if (!h) return false;
    const k = some(["confidence", "created_at", "outcome_ref", "observation_fingerprint", "utility_label", "evaluator_ref"], pick)!;
    h[k] = k === "confidence" ? Math.min(1, h.confidence + 0.5) : k === "created_at" ? h.created_at + " " : k === "utility_label" ? "helpful" : k === "outcome_ref" ? "viking://private/outcome" : "x" + h[k];
    return true;
  },
  historyOrder: (p) => {
    if (p.observation_history.length < 2) return false;
    p.observation_history.reverse();
    return true;
  },
  historyDuplicate: (p) => {
    if (p.observation_history.length < 1) return false;
    p.observation_history.push(p.observation_history[0]);
    return true;
  },
  rejection: (p, pick) => {
    const r = some(p.rejections, pick);
    if (!r) return false;
    const k = some(Object.keys(r), pick)!;
    r[k] = k === "delivery_count" ? 1 : k === "quarantine_proposed" ? false : k === "delivery_fingerprints" ? [r[k][0]] : "x";
    return true;
  },
  proposal: (p, pick) => {
    const q = some(p.review_proposals, pick);
    if (!q) return false;
    if (pick(2) === 0) q.subject_id = "mui_orphan";
    else p.review_proposals.pop();
    return true;
  },
};

describe("readback validator against the reference", () => {
  it("accepts every packet the reducer emits and rejects each tampering as the reference does", async () => {
    const seen: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(streamInput({ tierWeights: { small: 60, medium: 40, history: 3, subjects: 0, deliveries: 0 } }), fc.constantFrom(...Object.keys(TAMPERS)), fc.array(fc.nat(), { minLength: 8, maxLength: 8 }), async (stream, tamperName, choices) => {
        const result = utilityProject(stream.text);
        if (result.crash !== undefined) return;
        const packet = JSON.parse(result.stdout);
        if (packet.schema_version !== "memory_utility_projection_v0") return;
        expect(() => validateProjection(parsePyJson(result.stdout))).not.toThrow();
        let i = 0;
        const pick = (n: number) => choices[i++ % choices.length]! % n;
        if (!TAMPERS[tamperName]!(packet, pick)) return;
        seen[tamperName] = (seen[tamperName] ?? 0) + 1;
        const text = JSON.stringify(packet);
        const ref = await oracle.request<{ ok: boolean; error?: string }>({ op: "validate", packet: text });
        let ours: string | null = null;
        try {
          validateProjection(parsePyJson(text));
        } catch (err) {
          if (!(err instanceof ContractError)) throw err;
          ours = err.message;
        }
        expect(ours, `tamper ${tamperName}`).toBe(ref.ok ? null : ref.error);
      }),
      { numRuns: Math.max(300, Math.round(diffRuns() / 4)), seed: diffSeed() },
    );
    console.log(`[differential] validator tamperings exercised: ${JSON.stringify(seen)}`);
    expect(Object.keys(seen).length).toBeGreaterThanOrEqual(Object.keys(TAMPERS).length - 2);
  });
});
