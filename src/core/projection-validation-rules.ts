/**
 * Per-element readback rules (`utility_projection_validation.py`): subjects,
 * the joint evidence/label summary, reviews and history entries. The packet-
 * level cross-checks live in projection-validator.ts.
 */
import { fail } from "./errors.js";
import { asObject, requireExactFields } from "./fields.js";
import { ATTRIBUTION_LEVELS, EVIDENCE_BASES, UTILITY_LABELS, type EvidenceBasis } from "./observation.js";
import { PyFloat, pyEquals, type PyObject, type PyValue } from "./pyvalue.js";
import {
  finiteFloat,
  isIntAtLeast,
  strictEnum,
  strictMemoryDigests,
  strictObservationRef,
  strictRef,
  strictRefList,
  strictTimestamp,
} from "./strict-fields.js";
import { EVIDENCE_RANK, UTILITY_LABEL_ORDER, UTILITY_MAX, UTILITY_MIN, bounded, isDirectional } from "./subject.js";

export const MAX_REVIEW_REASON_CODES = 12;
const MAX_HISTORY_EVIDENCE_REFS = 16;

export const set = (xs: readonly string[]): ReadonlySet<string> => new Set(xs);
const SUBJECT_FIELDS = set([
  "subject_id", "attribution_level", "memory_ref_digests", "utility_estimate", "utility_bounds",
  "effective_utility_label", "effective_evidence_basis", "confidence", "uncertainty", "support", "evidence_strength",
  "evidence_label_summary", "observation_count", "last_observed_at", "last_observation_id", "review", "read_only",
  "automatic_deletion", "action_authority_granted",
]);
const HISTORY_FIELDS = set([
  "observation_id", "observation_fingerprint", "subject_id", "application_receipt_id", "outcome_ref",
  "memory_ref_digests", "attribution_level", "utility_label", "evidence_basis", "confidence", "reason_codes",
  "evidence_refs", "evaluator_ref", "evaluation_version", "created_at",
]);
const REVIEW_FIELDS = set(["state", "proposed_action", "reason_codes", "quarantine_proposed", "automatic_deletion", "action_authority_granted"]);
const SUMMARY_FIELDS = set(["evidence_basis", "utility_label", "observation_count", "combined_confidence"]);
const BOUNDS_FIELDS = set(["min", "max"]);
export const REVIEW_STATES = set(["none", "attenuation_proposed", "conflict", "unresolved_attribution"]);
export const REVIEW_ACTIONS = set(["none", "attenuate_or_review", "manual_review", "collect_attribution"]);
export const LEVEL_SET = set(ATTRIBUTION_LEVELS);
const LABEL_SET = set(UTILITY_LABELS);
const BASIS_SET = set(EVIDENCE_BASES);
export const FINGERPRINT_RE = /^muof_[0-9a-f]{64}$/;

/** Python int arithmetic without overflow: validated ints may be bigint. */
export const big = (v: PyValue | undefined): bigint => (typeof v === "bigint" ? v : BigInt(v as number));
const truthy = (v: PyValue | undefined): boolean => v !== 0 && v !== 0n && v !== false && v !== null && v !== undefined;

type Summary = Map<string, PyObject>; // key "basis|label", insertion-ordered

export function summaryKey(basis: string, label: string): string {
  return basis + "|" + label;
}

export function validateEvidenceLabelSummary(value: PyValue | undefined, label: string): Summary {
  if (!Array.isArray(value) || value.length < 1 || value.length > BASIS_SET.size * LABEL_SET.size) {
    fail(`${label} must be a bounded non-empty list`);
  }
  const result: Summary = new Map();
  let lastOrder = -1;
  let ordered = true;
  value.forEach((itemValue, index) => {
    const itemLabel = `${label}[${index}]`;
    const item = asObject(itemValue, itemLabel);
    requireExactFields(item, SUMMARY_FIELDS, itemLabel);
    const basis = strictEnum<EvidenceBasis>(item.evidence_basis, BASIS_SET, `${itemLabel}.evidence_basis`);
    const utilityLabel = strictEnum<string>(item.utility_label, LABEL_SET, `${itemLabel}.utility_label`);
    if (!isIntAtLeast(item.observation_count, 1)) fail(`${itemLabel}.observation_count is invalid`);
    const confidence = finiteFloat(item.combined_confidence, `${itemLabel}.combined_confidence`);
    if (!(confidence >= 0 && confidence <= 1)) fail(`${itemLabel}.combined_confidence is out of bounds`);
    const key = summaryKey(basis, utilityLabel);
    if (result.has(key)) fail(`${label} contains a duplicate evidence-label pair`);
    result.set(key, item);
    const order = EVIDENCE_RANK[basis] * 4 + UTILITY_LABEL_ORDER.indexOf(utilityLabel as never);
    if (order < lastOrder) ordered = false;
    lastOrder = order;
  });
  if (!ordered) fail(`${label} is not canonically ordered`);
  return result;
}

function validateCounts(value: PyValue | undefined, keys: readonly string[], label: string): void {
  const mapping = asObject(value, label);
  requireExactFields(mapping, set(keys), label);
  for (const key of keys) if (!isIntAtLeast(mapping[key], 0)) fail(`${label}.${key} must be a non-negative integer`);
}

export function validateReview(value: PyObject, label: string): void {
  requireExactFields(value, REVIEW_FIELDS, label);
  strictEnum(value.state, REVIEW_STATES, `${label}.state`);
  strictEnum(value.proposed_action, REVIEW_ACTIONS, `${label}.proposed_action`);
  const reasons = strictRefList(value.reason_codes, `${label}.reason_codes`, MAX_REVIEW_REASON_CODES);
  if ((value.state !== "none") !== reasons.length > 0) fail(`${label}.reason_codes are inconsistent with state`);
  if (typeof value.quarantine_proposed !== "boolean") fail(`${label}.quarantine_proposed is invalid`);
  if (value.quarantine_proposed !== (value.state === "conflict")) fail(`${label}.quarantine_proposed is inconsistent`);
  if (value.automatic_deletion !== false || value.action_authority_granted !== false) fail(`${label} boundary is invalid`);
}

export function validateSubject(subject: PyObject, index: number, seen: Set<string>): void {
  const label = `projection.subjects[${index}]`;
  requireExactFields(subject, SUBJECT_FIELDS, label);
  const subjectId = strictRef(subject.subject_id, `${label}.subject_id`);
  if (seen.has(subjectId)) fail("projection subjects must be unique");
  seen.add(subjectId);
  const level = strictEnum<string>(subject.attribution_level, LEVEL_SET, `${label}.attribution_level`);
  const digests = strictMemoryDigests(subject.memory_ref_digests, `${label}.memory_ref_digests`);
  if (level === "item" && digests.length !== 1) fail(`${label}.item attribution must contain one digest`);
  let utility: number;
  let confidence: number;
  let uncertainty: number;
  try {
    utility = finiteFloat(subject.utility_estimate, `${label}.utility_estimate`);
    confidence = finiteFloat(subject.confidence, `${label}.confidence`);
    uncertainty = finiteFloat(subject.uncertainty, `${label}.uncertainty`);
  } catch {
    fail(`${label} numeric fields are invalid`);
  }
  if (!(utility >= UTILITY_MIN && utility <= UTILITY_MAX)) fail(`${label}.utility_estimate is out of bounds`);
  if (!(confidence >= 0 && confidence <= 1) || !(uncertainty >= 0 && uncertainty <= 1)) fail(`${label} confidence is out of bounds`);
  const effectiveLabel = strictEnum<string>(subject.effective_utility_label, LABEL_SET, `${label}.effective_utility_label`);
  const effectiveBasis = strictEnum<EvidenceBasis>(subject.effective_evidence_basis, BASIS_SET, `${label}.effective_evidence_basis`);
  const bounds = asObject(subject.utility_bounds, `${label}.utility_bounds`);
  requireExactFields(bounds, BOUNDS_FIELDS, `${label}.utility_bounds`);
  if (!pyEquals(bounds.min, new PyFloat(UTILITY_MIN)) || !pyEquals(bounds.max, new PyFloat(UTILITY_MAX))) {
    fail(`${label}.utility_bounds are invalid`);
  }
  validateCounts(subject.support, UTILITY_LABEL_ORDER, `${label}.support`);
  validateCounts(subject.evidence_strength, ["insufficient", "evaluator_inference", "deterministic_effect", "controlled_replay", "owner_correction"], `${label}.evidence_strength`);
  const summary = validateEvidenceLabelSummary(subject.evidence_label_summary, `${label}.evidence_label_summary`);
  const count = subject.observation_count;
  if (!isIntAtLeast(count, 1)) fail(`${label}.observation_count is invalid`);
  const support = subject.support as PyObject;
  const strength = subject.evidence_strength as PyObject;
  const sum = (o: PyObject): bigint => Object.values(o).reduce<bigint>((acc, v) => acc + big(v), 0n);
  if (sum(support) !== big(count)) fail(`${label}.support does not match observation_count`);
  if (sum(strength) !== big(count)) fail(`${label}.evidence_strength does not match observation_count`);
  const summarySupport = new Map<string, bigint>(UTILITY_LABELS.map((l) => [l, 0n]));
  const summaryEvidence = new Map<string, bigint>(EVIDENCE_BASES.map((b) => [b, 0n]));
  for (const entry of summary.values()) {
    const n = big(entry.observation_count);
    summarySupport.set(entry.utility_label as string, summarySupport.get(entry.utility_label as string)! + n);
    summaryEvidence.set(entry.evidence_basis as string, summaryEvidence.get(entry.evidence_basis as string)! + n);
  }
  for (const [k, v] of summarySupport) if (big(support[k]) !== v) fail(`${label}.evidence_label_summary does not match support`);
  for (const [k, v] of summaryEvidence) if (big(strength[k]) !== v) fail(`${label}.evidence_label_summary does not match evidence_strength`);
  if (big(strength[effectiveBasis]) < 1n) fail(`${label}.effective_evidence_basis has no supporting observation`);
  const expectedUtility =
    effectiveLabel === "helpful"
      ? bounded(confidence, UTILITY_MIN, UTILITY_MAX)
      : effectiveLabel === "harmful"
        ? bounded(-confidence, UTILITY_MIN, UTILITY_MAX)
        : 0.0;
  if (utility !== expectedUtility) fail(`${label}.utility_estimate is inconsistent with label`);
  if (uncertainty !== bounded(1.0 - confidence, 0.0, 1.0)) fail(`${label}.uncertainty is inconsistent with confidence`);
  strictTimestamp(subject.last_observed_at, `${label}.last_observed_at`);
  strictObservationRef(subject.last_observation_id, `${label}.last_observation_id`);
  const rv = asObject(subject.review, `${label}.review`);
  validateReview(rv, `${label}.review`);
  const knownCount = big(support.helpful) + big(support.harmful) + big(support.neutral);
  let expected: [string, string];
  if (level === "none") expected = ["unresolved_attribution", "collect_attribution"];
  else if (effectiveLabel === "harmful") expected = ["attenuation_proposed", "attenuate_or_review"];
  else if (effectiveLabel === "unknown" && knownCount > 0n) expected = ["conflict", "manual_review"];
  else expected = ["none", "none"];
  if (rv.state !== expected[0] || rv.proposed_action !== expected[1]) fail(`${label}.review is inconsistent with effective utility`);
  if (subject.read_only !== true || subject.automatic_deletion !== false || subject.action_authority_granted !== false) {
    fail(`${label} boundary is invalid`);
  }
}

export function validateAggregateSubjectSemantics(subject: PyObject, label: string): void {
  const strength = subject.evidence_strength as PyObject;
  let strongest: EvidenceBasis | undefined;
  for (const basis of EVIDENCE_BASES) {
    if (truthy(strength[basis]) && (strongest === undefined || EVIDENCE_RANK[basis] > EVIDENCE_RANK[strongest])) strongest = basis;
  }
  if (strongest === undefined) fail("max() arg is an empty sequence");
  if (subject.effective_evidence_basis !== strongest) fail(`${label}.effective_evidence_basis is inconsistent`);
  const summary = validateEvidenceLabelSummary(subject.evidence_label_summary, `${label}.evidence_label_summary`);
  const strongestLabels = new Set<string>();
  let hasLowerDirection = false;
  for (const entry of summary.values()) {
    const basis = entry.evidence_basis as EvidenceBasis;
    const ul = entry.utility_label as string;
    if (basis === strongest) strongestLabels.add(ul);
    if (isDirectional(ul) && EVIDENCE_RANK[basis] < EVIDENCE_RANK[strongest]) hasLowerDirection = true;
  }
  const directional = [...strongestLabels].filter(isDirectional);
  let expectedLabel: string;
  let expectedConfidence: PyValue;
  let expectedReview: [string, string, string[]];
  if (subject.attribution_level === "none") {
    expectedLabel = "unknown";
    expectedConfidence = new PyFloat(0);
    expectedReview = ["unresolved_attribution", "collect_attribution", ["attribution_not_established"]];
  } else if (strongestLabels.has("unknown")) {
    expectedLabel = "unknown";
    expectedConfidence = new PyFloat(0);
    const reasons: string[] = [];
    if (directional.length > 0 || hasLowerDirection) reasons.push("strongest_evidence_unknown");
    if (directional.length > 1) reasons.push("same_evidence_tier_conflict");
    expectedReview = reasons.length ? ["conflict", "manual_review", reasons.sort()] : ["none", "none", []];
  } else if (directional.length !== 1) {
    expectedLabel = "unknown";
    expectedConfidence = new PyFloat(0);
    expectedReview = ["conflict", "manual_review", ["same_evidence_tier_conflict"]];
  } else {
    expectedLabel = directional[0]!;
    expectedConfidence = summary.get(summaryKey(strongest, expectedLabel))!.combined_confidence!;
    const harmful = expectedLabel === "harmful";
    expectedReview = harmful
      ? ["attenuation_proposed", "attenuate_or_review", ["negative_utility_requires_review"]]
      : ["none", "none", []];
  }
  const rv = subject.review as PyObject;
  const observedLabel = subject.effective_utility_label as string;
  if (isDirectional(observedLabel) && !summary.has(summaryKey(strongest, observedLabel))) {
    fail(`${label}.effective_utility_label has no supporting observation in the strongest-tier joint evidence summary`);
  }
  if (
    observedLabel !== expectedLabel ||
    !pyEquals(subject.confidence, expectedConfidence) ||
    rv.state !== expectedReview[0] ||
    rv.proposed_action !== expectedReview[1] ||
    !pyEquals(rv.reason_codes, expectedReview[2])
  ) {
    fail(`${label} is inconsistent with joint evidence summary`);
  }
}

export function validateHistoryEntry(value: PyValue | undefined, index: number): PyObject {
  const entry = asObject(value, `projection.observation_history[${index}]`);
  requireExactFields(entry, HISTORY_FIELDS, `projection.observation_history[${index}]`);
  strictObservationRef(entry.observation_id, "history.observation_id");
  for (const key of ["subject_id", "application_receipt_id", "outcome_ref", "evaluator_ref", "evaluation_version"]) {
    strictRef(entry[key], `history.${key}`);
  }
  const fingerprint = entry.observation_fingerprint;
  if (typeof fingerprint !== "string" || !FINGERPRINT_RE.test(fingerprint)) fail("history.observation_fingerprint is invalid");
  strictMemoryDigests(entry.memory_ref_digests, "history.memory_ref_digests");
  strictEnum(entry.attribution_level, LEVEL_SET, "history attribution_level");
  strictEnum(entry.utility_label, LABEL_SET, "history utility_label");
  strictEnum(entry.evidence_basis, BASIS_SET, "history evidence_basis");
  strictRefList(entry.reason_codes, "history.reason_codes", MAX_REVIEW_REASON_CODES);
  strictRefList(entry.evidence_refs, "history.evidence_refs", MAX_HISTORY_EVIDENCE_REFS);
  let confidence: number;
  try {
    confidence = finiteFloat(entry.confidence, "history.confidence");
  } catch {
    fail("history confidence is invalid");
  }
  if (!(confidence >= 0 && confidence <= 1)) fail("history confidence is invalid");
  strictTimestamp(entry.created_at, "history.created_at");
  return entry;
}

