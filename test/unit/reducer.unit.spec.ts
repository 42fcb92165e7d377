import { describe, expect, it } from "vitest";
import {
  ContractError,
  PyFloat,
  canonicalJson,
  reduceObservations,
  validateProjection,
  type PyObject,
  type PyValue,
} from "../../src/core/index.js";
import { DIGEST_A, DIGEST_B, observation, raw, reduceInput, SCOPE } from "../support/fixtures.js";

const reduce = (observations: PyValue[], overrides: PyObject = {}) =>
  reduceObservations(reduceInput(observations, overrides) as never) as PyObject & Record<string, any>;

describe("reducer (behaviours of the reference's own test suite)", () => {
  it("labels yield bounded read-only subjects", () => {
    const obs = ["helpful", "harmful", "neutral"].map((label, i) =>
      raw(observation({ utility_label: label, evidence_basis: "deterministic_effect", confidence: 0.8, evaluation_version: `v${i}` })),
    );
    obs.push(raw(observation()));
    const p = reduce(obs);
    expect(p.accepted_observation_count).toBe(4);
    expect(p.read_only).toBe(true);
    for (const s of p.subjects) {
      expect(s.utility_estimate.value).toBeGreaterThanOrEqual(-1);
      expect(s.utility_estimate.value).toBeLessThanOrEqual(1);
    }
  });

  it("an exact replay with a new timestamp is a no-op, in either order", () => {
    const a = raw(observation({ created_at: "2026-08-15T00:00:00Z" }));
    const b = raw(observation({ created_at: "2026-08-15T00:05:00Z" }));
    expect(a.observation_id).toBe(b.observation_id);
    const forward = reduce([a, b]);
    expect(forward.accepted_observation_count).toBe(1);
    expect(forward.duplicate_observation_count).toBe(1);
    expect(forward.conflicting_observation_count).toBe(0);
    expect(forward.observation_history).toHaveLength(1);
    expect(canonicalJson(reduce([b, a]))).toBe(canonicalJson(forward));
  });

  it("conflict counters do not misclassify replays", () => {
    const original = raw(observation({ utility_label: "helpful", evidence_basis: "evaluator_inference", confidence: 0.4 }));
    const retry = raw(observation({ utility_label: "helpful", evidence_basis: "evaluator_inference", confidence: 0.4, created_at: "2026-08-15T00:09:00Z" }));
    const changed = raw(observation({ utility_label: "harmful", evidence_basis: "evaluator_inference", confidence: 0.4 }));
    const p = reduce([original, retry, changed]);
    expect([p.duplicate_observation_count, p.conflicting_observation_count, p.rejected_observation_count]).toEqual([1, 1, 3]);
  });

  it("equivalent timezone retries keep the first spelling regardless of order", () => {
    const z = raw(observation({ created_at: "2026-08-15T00:00:00Z" }));
    const plus1 = raw(observation({ created_at: "2026-08-15T01:00:00+01:00" }));
    const f = reduce([z, plus1]);
    expect(canonicalJson(reduce([plus1, z]))).toBe(canonicalJson(f));
    expect(f.observation_history[0].created_at).toBe("2026-08-15T00:00:00Z");
  });

  it("a changed judgment under one id is quarantined", () => {
    const a = raw(observation({ utility_label: "helpful", evidence_basis: "deterministic_effect", confidence: 0.7 }));
    const b = raw(observation({ utility_label: "neutral", evidence_basis: "deterministic_effect", confidence: 0.7 }));
    const p = reduce([a, b]);
    expect(p.status).toBe("review_required");
    expect(p.projection_ready).toBe(false);
    expect([p.accepted_observation_count, p.conflicting_observation_count, p.rejected_observation_count]).toEqual([0, 1, 2]);
    expect(p.rejections[0].reason_codes).toEqual(["conflicting_observation_delivery"]);
    expect(p.rejections[0].quarantine_proposed).toBe(true);
    const tampered = JSON.parse(JSON.stringify(p, (_k, v) => (v instanceof PyFloat ? v.value : v)));
    tampered.rejections[0].quarantine_proposed = false;
    expect(() => validateProjection(tampered)).toThrow(/propose quarantine/);
  });

  it("the strongest unknown blocks weaker directional inference", () => {
    const p = reduce([
      raw(observation({ utility_label: "helpful", evidence_basis: "evaluator_inference", confidence: 1.0 })),
      raw(observation({ utility_label: "unknown", evidence_basis: "owner_correction", confidence: 1.0, evaluation_version: "v2" })),
    ]);
    const s = p.subjects[0];
    expect([s.effective_utility_label, s.effective_evidence_basis, s.utility_estimate.value]).toEqual(["unknown", "owner_correction", 0]);
    expect(s.review.state).toBe("conflict");
    expect(s.review.reason_codes).toEqual(["strongest_evidence_unknown"]);
  });

  it("stronger evidence overrides weaker inference without erasing history", () => {
    const p = reduce([
      raw(observation({ utility_label: "helpful", evidence_basis: "evaluator_inference", confidence: 1.0 })),
      raw(observation({ utility_label: "harmful", evidence_basis: "owner_correction", confidence: 0.6, evaluation_version: "v2" })),
    ]);
    const s = p.subjects[0];
    expect(s.effective_utility_label).toBe("harmful");
    expect(s.utility_estimate.value).toBeLessThan(0);
    expect(s.support).toEqual({ helpful: 1, harmful: 1, neutral: 0, unknown: 0 });
    expect(p.observation_history).toHaveLength(2);
  });

  it("set attribution never creates item subjects; none attribution is lineage only", () => {
    const set = reduce([raw(observation({ attribution_level: "set", digests: [DIGEST_B, DIGEST_A], receiptDigests: [DIGEST_A, DIGEST_B] }))]);
    expect([set.item_subject_count, set.set_subject_count]).toEqual([0, 1]);
    expect(set.subjects[0].memory_ref_digests).toEqual([DIGEST_A, DIGEST_B]);
    const none = reduce([raw(observation({ attribution_level: "none", confidence: 0.9 }))]);
    expect(none.subjects[0].attribution_level).toBe("none");
    expect(none.subjects[0].review.state).toBe("unresolved_attribution");
  });

  it("scope or snapshot mismatches fail closed", () => {
    const p = reduce([raw(observation())], { scope: { ...SCOPE, agent_id: "agent:other" } });
    expect([p.ok, p.status, p.projection_ready, p.subjects.length]).toEqual([false, "rejected", false, 0]);
    expect(p.rejections[0].reason_codes).toEqual(["scope_mismatch"]);
    const q = reduce([raw(observation())], { retrieval_snapshot_ref: "retrieval:other" });
    expect(q.rejections[0].reason_codes).toEqual(["retrieval_snapshot_mismatch"]);
  });

  it("a previous projection guards the reducer identity", () => {
    const prior = reduce([raw(observation())]);
    const p = reduce([raw(observation())], { reducer_version: "memory_utility_reducer_v1", previous_projection: prior });
    expect(p.rejections[0].reason_codes).toEqual(["reducer_identity_mismatch"]);
    expect(reduce([raw(observation())], { previous_projection: prior }).status).toBe("ready");
  });

  it("malformed observations are rejected with typed reason codes", () => {
    const base = raw(observation());
    expect(reduce([{ ...base, schema_version: "v99" }]).rejections[0].reason_codes).toEqual(["observation_schema_mismatch"]);
    expect(reduce([{ ...base, confidence: 10n ** 1000n }]).rejections[0].reason_codes).toEqual(["observation_malformed"]);
    expect(reduce([{ ...base, raw_prompt: "x" }]).rejections[0].reason_codes).toEqual(["observation_malformed"]);
    expect(reduce([{ ...base, raw_content_captured: true }]).rejections[0].reason_codes).toEqual(["observation_write_boundary_violation"]);
    expect(reduce([{ ...base, observation_id: "muo_" + "0".repeat(64) }]).rejections[0].reason_codes).toEqual(["observation_identity_invalid"]);
  });

  it("harmful utility proposes attenuation only", () => {
    const p = reduce([raw(observation({ utility_label: "harmful", evidence_basis: "deterministic_effect", confidence: 0.95 }))]);
    expect(p.subjects[0].review).toMatchObject({ state: "attenuation_proposed", proposed_action: "attenuate_or_review", automatic_deletion: false });
    expect(p.review_proposals[0]).toMatchObject({ automatic_deletion: false, action_authority_granted: false });
  });

  it("history keeps every subject's latest entry past 256", () => {
    const obs: PyValue[] = [raw(observation({ utility_label: "helpful", evidence_basis: "deterministic_effect", confidence: 0.1, evaluation_version: "det", created_at: "2026-08-15T00:00:00Z" }))];
    for (let i = 0; i < 256; i++) {
      const t = new Date(Date.UTC(2026, 7, 15, 0, 0, i + 1)).toISOString().replace(".000Z", "Z");
      obs.push(raw(observation({ utility_label: "helpful", evidence_basis: "evaluator_inference", confidence: 0.1, evaluation_version: `inf${i}`, created_at: t })));
    }
    const p = reduce(obs);
    expect(p.accepted_observation_count).toBe(257);
    expect(p.observation_history_truncated).toBe(true);
    expect(p.observation_history).toHaveLength(256);
    expect(p.observation_history.map((h: any) => h.observation_id)).toContain(p.subjects[0].last_observation_id);
  });

  it("more than 1024 deliveries or 128 subjects give the reference's rejected packets", () => {
    const one = raw(observation());
    expect(reduce(Array(1025).fill(one)).rejections[0].reason_codes).toEqual(["observation_malformed"]);
    const many: PyValue[] = [];
    for (let i = 0; i < 129; i++) {
      const d = i.toString(16).padStart(16, "0");
      many.push(raw(observation({ digests: [d], receiptDigests: [d] })));
    }
    const p = reduce(many);
    expect(p.rejections[0].reason_codes).toEqual(["projection_subject_limit_exceeded"]);
    expect(p.rejected_observation_count).toBe(129);
  });

  it("every packet it returns passes the readback validator, and the validator fails closed", () => {
    const p = reduce([raw(observation({ utility_label: "helpful", evidence_basis: "deterministic_effect", confidence: 0.7 }))]);
    expect(() => validateProjection(p)).not.toThrow();
    const t = { ...p, subjects: [{ ...p.subjects[0], utility_estimate: new PyFloat(2.0) }] };
    expect(() => validateProjection(t)).toThrow(ContractError);
    expect(() => validateProjection(t)).toThrow(/out of bounds/);
  });
});
