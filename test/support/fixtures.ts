/** Builders for trusted facts and observations used across test tiers. */
import { buildObservation, observationToPy, type Observation, type PyObject, type PyValue } from "../../src/core/index.js";

export const DIGEST_A = "0123456789abcdef";
export const DIGEST_B = "fedcba9876543210";

export const SCOPE = {
  agent_id: "agent:stage2",
  project_id: "project:loopx",
  corpus_id: "reward-memory-corpus",
  surface_id: "loopx.issue_fix",
};
export const RETRIEVAL = "retrieval:stage2";
export const POLICY = "policy:stage2";

export interface ObservationSpec {
  scope?: typeof SCOPE;
  retrieval?: string;
  policy?: string;
  receiptDigests?: string[];
  digests?: string[];
  utility_label?: string;
  attribution_level?: string;
  evidence_basis?: string;
  confidence?: number;
  reason_codes?: string[];
  evidence_refs?: string[];
  evaluation_version?: string;
  evaluator_ref?: string;
  outcome_ref?: string;
  application_id?: string;
  reasoning_summary?: string;
  created_at?: string;
}

export function receipt(spec: ObservationSpec = {}): PyObject {
  const scope = spec.scope ?? SCOPE;
  return {
    schema_version: "reward_memory_application_receipt_v0",
    application_id: spec.application_id ?? "app:1",
    artifact_ref: "artifact:pr/1",
    corpus_id: scope.corpus_id,
    surface_id: scope.surface_id,
    mode: "function_boundary",
    query_kind: "business_recall",
    query_evidence: [],
    outcome: "applied",
    memory_ref_digests: spec.receiptDigests ?? spec.digests ?? [DIGEST_A],
    reasoning_summary: spec.reasoning_summary ?? "applied the recalled convention",
    current_artifact_verified: true,
    result_readback_verified: true,
    provider_call_count: 1,
    model_reasoning_preserved: true,
    grants_new_action_authority: false,
    external_writes_performed: false,
    raw_content_captured: false,
  };
}

/** Build a valid observation through the real builder (default: item/unknown/insufficient/0.0). */
export function observation(spec: ObservationSpec = {}): Observation {
  const scope = spec.scope ?? SCOPE;
  const retrieval = spec.retrieval ?? RETRIEVAL;
  const policy = spec.policy ?? POLICY;
  const outcomeRef = spec.outcome_ref ?? "outcome:1";
  const facts = {
    application_receipt: receipt(spec),
    verified_outcome: { verified: true, outcome_ref: outcomeRef, artifact_ref: "artifact:pr/1", outcome_status: "merged" },
    attribution_context: { scope: { ...scope }, retrieval_snapshot_ref: retrieval, policy_snapshot_ref: policy },
  };
  const label = spec.utility_label ?? "unknown";
  const proposal: PyObject = {
    scope: { ...scope },
    application_id: spec.application_id ?? "app:1",
    artifact_ref: "artifact:pr/1",
    outcome_ref: outcomeRef,
    outcome_status: "merged",
    retrieval_snapshot_ref: retrieval,
    policy_snapshot_ref: policy,
    memory_ref_digests: spec.digests ?? [DIGEST_A],
    utility_label: label,
    attribution_level: spec.attribution_level ?? "item",
    evidence_basis: spec.evidence_basis ?? "insufficient",
    confidence: floatOf(spec.confidence ?? 0.0),
    reason_codes: spec.reason_codes ?? [],
    evidence_refs: spec.evidence_refs ?? (label === "unknown" && (spec.evidence_basis ?? "insufficient") === "insufficient" ? [] : ["evidence:1"]),
    evaluator_ref: spec.evaluator_ref ?? "evaluator:1",
    evaluation_version: spec.evaluation_version ?? "eval:v1",
  };
  return buildObservation(facts, proposal, spec.created_at ?? "2026-08-15T00:00:00Z");
}

import { PyFloat } from "../../src/core/index.js";
function floatOf(x: number): PyValue {
  return new PyFloat(x);
}

/** The JSON values of an observation, as a producer would send it. */
export function raw(obs: Observation): PyObject {
  return observationToPy(obs);
}

export function reduceInput(observations: PyValue[], overrides: PyObject = {}): PyObject {
  return {
    observations,
    scope: { ...SCOPE },
    retrieval_snapshot_ref: RETRIEVAL,
    policy_snapshot_ref: POLICY,
    ...overrides,
  };
}
