/**
 * One subject's utility estimate (`_reduce_subject`): support counts, evidence
 * precedence, combined confidence over the strongest directional tier, and the
 * review state it proposes. Pure arithmetic in the reference's order.
 */
import type { AttributionLevel, EvidenceBasis, Observation, UtilityLabel } from "./observation.js";
import { latestOf } from "./ordering.js";
import { pyRound6 } from "./pyfloat.js";
import { PyFloat, type PyObject } from "./pyvalue.js";

export const EVIDENCE_ORDER: readonly EvidenceBasis[] = [
  "insufficient",
  "evaluator_inference",
  "deterministic_effect",
  "controlled_replay",
  "owner_correction",
];
export const EVIDENCE_RANK: Readonly<Record<EvidenceBasis, number>> = {
  insufficient: 0,
  evaluator_inference: 1,
  deterministic_effect: 2,
  controlled_replay: 3,
  owner_correction: 4,
};
export const UTILITY_LABEL_ORDER: readonly UtilityLabel[] = ["helpful", "harmful", "neutral", "unknown"];
export const LABEL_DIRECTIONS: Readonly<Partial<Record<UtilityLabel, number>>> = { helpful: 1, harmful: -1, neutral: 0 };

export const UTILITY_MIN = -1.0;
export const UTILITY_MAX = 1.0;

export function isDirectional(label: string): boolean {
  return label === "helpful" || label === "harmful" || label === "neutral";
}

/** `round(min(upper, max(lower, value)), 6)` with Python's min/max tie rules (first wins). */
export function bounded(value: number, lower: number, upper: number): number {
  let v = value > lower ? value : lower;
  v = v < upper ? v : upper;
  return pyRound6(v);
}

/** `1 - Π(1 - clamp01(c))` in list order, rounded to 6 places. */
export function combinedConfidence(confidences: readonly number[]): number {
  let remaining = 1.0;
  for (const c of confidences) {
    const clamped = (c > 0.0 ? c : 0.0) < 1.0 ? (c > 0.0 ? c : 0.0) : 1.0;
    remaining *= 1.0 - clamped;
  }
  return bounded(1.0 - remaining, 0.0, 1.0);
}

const LABEL_RANK: Readonly<Record<UtilityLabel, number>> = { helpful: 0, harmful: 1, neutral: 2, unknown: 3 };

export function evidenceLabelSummary(observations: readonly Observation[]): PyObject[] {
  // One pass into (basis, label) buckets, each keeping list order, instead of a scan per pair.
  const buckets: (number[] | undefined)[] = [];
  for (const o of observations) {
    const at = EVIDENCE_RANK[o.evidence_basis] * UTILITY_LABEL_ORDER.length + LABEL_RANK[o.utility_label];
    (buckets[at] ??= []).push(o.confidence);
  }
  const result: PyObject[] = [];
  for (let at = 0; at < EVIDENCE_ORDER.length * UTILITY_LABEL_ORDER.length; at++) {
    const matching = buckets[at];
    if (matching === undefined) continue;
    result.push({
      evidence_basis: EVIDENCE_ORDER[Math.floor(at / UTILITY_LABEL_ORDER.length)]!,
      utility_label: UTILITY_LABEL_ORDER[at % UTILITY_LABEL_ORDER.length]!,
      observation_count: matching.length,
      combined_confidence: new PyFloat(combinedConfidence(matching)),
    });
  }
  return result;
}

export function review(state: string, action: string, reasonCodes: readonly string[]): PyObject {
  return {
    state,
    proposed_action: action,
    reason_codes: [...new Set(reasonCodes)].sort(),
    quarantine_proposed: state === "conflict",
    automatic_deletion: false,
    action_authority_granted: false,
  };
}

export function reduceSubject(
  subjectId: string,
  level: AttributionLevel,
  digests: readonly string[],
  observations: readonly Observation[],
  /** The latest observation in the reference's order, when the caller keeps them in time order (saves a scan). */
  latest?: Observation,
): PyObject {
  const support: Record<UtilityLabel, number> = { helpful: 0, harmful: 0, neutral: 0, unknown: 0 };
  const strength: Record<EvidenceBasis, number> = {
    insufficient: 0,
    evaluator_inference: 0,
    deterministic_effect: 0,
    controlled_replay: 0,
    owner_correction: 0,
  };
  let strongestRank = -1;
  let anyKnown = false;
  for (const o of observations) {
    support[o.utility_label]++;
    strength[o.evidence_basis]++;
    const rank = EVIDENCE_RANK[o.evidence_basis];
    if (rank > strongestRank) strongestRank = rank;
    if (isDirectional(o.utility_label)) anyKnown = true;
  }
  let effectiveBasis = EVIDENCE_ORDER[strongestRank]!;
  let effectiveLabel: UtilityLabel = "unknown";
  let confidence = 0.0;
  let utility = 0.0;
  let uncertainty = 1.0;
  let reviewState = "none";
  let reviewAction = "none";
  const reasons: string[] = [];
  if (level === "none") {
    reviewState = "unresolved_attribution";
    reviewAction = "collect_attribution";
    reasons.push("attribution_not_established");
  } else if (anyKnown) {
    const strongest = observations.filter((o) => EVIDENCE_RANK[o.evidence_basis] === strongestRank);
    const directional = strongest.filter((o) => isDirectional(o.utility_label));
    const directionalLabels = new Set(directional.map((o) => o.utility_label));
    const hasLowerDirection = observations.some(
      (o) => isDirectional(o.utility_label) && EVIDENCE_RANK[o.evidence_basis] < strongestRank,
    );
    if (strongest.some((o) => o.utility_label === "unknown")) {
      // An explicit unknown at the strongest tier blocks weaker directional inference.
      if (directional.length > 0 || hasLowerDirection) {
        reviewState = "conflict";
        reviewAction = "manual_review";
        reasons.push("strongest_evidence_unknown");
      }
      if (directionalLabels.size > 1) {
        reviewState = "conflict";
        reviewAction = "manual_review";
        reasons.push("same_evidence_tier_conflict");
      }
    } else if (directionalLabels.size !== 1) {
      reviewState = "conflict";
      reviewAction = "manual_review";
      reasons.push("same_evidence_tier_conflict");
    } else {
      effectiveLabel = directional[0]!.utility_label;
      effectiveBasis = directional[0]!.evidence_basis;
      confidence = combinedConfidence(directional.map((o) => o.confidence));
      utility = bounded(LABEL_DIRECTIONS[effectiveLabel]! * confidence, UTILITY_MIN, UTILITY_MAX);
      uncertainty = bounded(1.0 - confidence, 0.0, 1.0);
      if (effectiveLabel === "harmful") {
        reviewState = "attenuation_proposed";
        reviewAction = "attenuate_or_review";
        reasons.push("negative_utility_requires_review");
      }
    }
  }
  const [lastAt, lastId] = latest === undefined ? latestOf(observations) : [latest.created_at, latest.observation_id];
  return {
    subject_id: subjectId,
    attribution_level: level,
    memory_ref_digests: [...digests],
    utility_estimate: new PyFloat(utility),
    utility_bounds: { min: new PyFloat(UTILITY_MIN), max: new PyFloat(UTILITY_MAX) },
    effective_utility_label: effectiveLabel,
    effective_evidence_basis: effectiveBasis,
    confidence: new PyFloat(confidence),
    uncertainty: new PyFloat(uncertainty),
    support: { ...support },
    evidence_strength: { ...strength },
    evidence_label_summary: evidenceLabelSummary(observations),
    observation_count: observations.length,
    last_observed_at: lastAt,
    last_observation_id: lastId,
    review: review(reviewState, reviewAction, reasons),
    read_only: true,
    automatic_deletion: false,
    action_authority_granted: false,
  };
}
