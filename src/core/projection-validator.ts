/**
 * The fail-closed readback validator (`validate_reward_memory_utility_projection`):
 * a packet is accepted only if its counters, subjects, history, rejections and
 * review proposals are consistent with what the reducer produces. Per-element
 * rules live in projection-validation-rules.ts; messages are the reference's.
 */
import { fail } from "./errors.js";
import { asObject, listsEqual, requireExactFields } from "./fields.js";
import { normalizeContext, reducerIdentity, subjectIdOf, type ReducerContext } from "./identity.js";
import { observationFingerprint, validateObservation, type Observation } from "./observation.js";
import { compareOrder, latestOf } from "./ordering.js";
import {
  MAX_CONFLICT_FINGERPRINTS,
  MAX_PROJECTION_HISTORY,
  MAX_PROJECTION_OBSERVATIONS,
  MAX_PROJECTION_REJECTIONS,
  MAX_PROJECTION_SUBJECTS,
} from "./projection-limits.js";
import {
  FINGERPRINT_RE,
  LEVEL_SET,
  MAX_REVIEW_REASON_CODES,
  REVIEW_ACTIONS,
  REVIEW_STATES,
  big,
  set,
  validateAggregateSubjectSemantics,
  validateHistoryEntry,
  validateSubject,
} from "./projection-validation-rules.js";
import { pyEquals, type PyObject, type PyValue } from "./pyvalue.js";
import { isIntAtLeast, strictEnum, strictMemoryDigests, strictObservationRef, strictRef, strictRefList, strictTimestamp } from "./strict-fields.js";
import { reduceSubject } from "./subject.js";

const PROJECTION_FIELDS = set([
  "ok", "schema_version", "status", "projection_ready", "reducer_version", "reducer_identity", "scope",
  "retrieval_snapshot_ref", "policy_snapshot_ref", "accepted_observation_count", "duplicate_observation_count",
  "conflicting_observation_count", "rejected_observation_count", "lineage_observation_count", "subject_count",
  "item_subject_count", "set_subject_count", "unresolved_lineage_count", "last_observed_at", "last_observation_id",
  "subjects", "observation_history", "observation_history_truncated", "rejections", "review_proposals", "read_only",
  "grants_new_action_authority", "provider_write_performed", "external_writes_performed", "raw_content_captured",
]);
const PROPOSAL_FIELDS = set([
  "subject_id", "attribution_level", "memory_ref_digests", "state", "proposed_action", "reason_codes",
  "quarantine_proposed", "automatic_deletion", "action_authority_granted",
]);
const REJECTION_FIELDS = set([
  "observation_id", "reason_codes", "delivery_count", "delivery_fingerprints", "delivery_fingerprints_truncated",
  "quarantine_proposed", "automatic_deletion", "action_authority_granted",
]);
const STATUSES = set(["ready", "empty", "review_required", "rejected"]);
const COUNTERS = [
  "accepted_observation_count", "duplicate_observation_count", "conflicting_observation_count",
  "rejected_observation_count", "lineage_observation_count", "subject_count", "item_subject_count",
  "set_subject_count", "unresolved_lineage_count",
] as const;
type Counter = (typeof COUNTERS)[number];
const SUBJECT_RECHECK_KEYS = [
  "utility_estimate", "effective_utility_label", "effective_evidence_basis", "confidence", "uncertainty", "support",
  "evidence_strength", "evidence_label_summary", "observation_count", "review",
] as const;

const has = (o: PyObject, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
const sameKeys = (o: PyObject, keys: ReadonlySet<string>): boolean => {
  const own = Object.keys(o);
  return own.length === keys.size && own.every((k) => keys.has(k));
};

/** `_observation_from_history`: rebuild the observation a history entry stands for. */
function observationFromHistory(entry: PyObject, context: ReducerContext): Observation {
  return validateObservation({
    schema_version: "memory_utility_observation_v0",
    observation_id: entry.observation_id!,
    scope: { ...context.scope },
    application_receipt_id: entry.application_receipt_id!,
    memory_ref_digests: [...(entry.memory_ref_digests as PyValue[])],
    retrieval_snapshot_ref: context.retrieval_snapshot_ref,
    policy_snapshot_ref: context.policy_snapshot_ref,
    outcome_ref: entry.outcome_ref!,
    utility_label: entry.utility_label!,
    attribution_level: entry.attribution_level!,
    evidence_basis: entry.evidence_basis!,
    confidence: entry.confidence!,
    reason_codes: [...(entry.reason_codes as PyValue[])],
    evidence_refs: [...(entry.evidence_refs as PyValue[])],
    evaluator_ref: entry.evaluator_ref!,
    evaluation_version: entry.evaluation_version!,
    created_at: entry.created_at!,
    grants_new_action_authority: false,
    provider_write_performed: false,
    external_writes_performed: false,
    raw_content_captured: false,
  });
}

/** Validate a packet; returns a shallow copy (like `dict(raw)`), throws ContractError. */
export function validateProjection(projection: PyValue | undefined): PyObject {
  const raw = asObject(projection, "projection");
  requireExactFields(raw, PROJECTION_FIELDS, "projection");
  if (raw.schema_version !== "memory_utility_projection_v0") fail("projection.schema_version mismatch");
  const status = strictEnum<string>(raw.status, STATUSES, "projection.status");
  for (const key of ["ok", "projection_ready", "observation_history_truncated", "read_only"]) {
    if (typeof raw[key] !== "boolean") fail(`projection.${key} must be a boolean`);
  }
  if (raw.read_only !== true) fail("projection.read_only must be true");
  for (const key of ["grants_new_action_authority", "provider_write_performed", "external_writes_performed", "raw_content_captured"]) {
    if (raw[key] !== false) fail(`projection.${key} must be false`);
  }
  const context = normalizeContext({
    scope: raw.scope,
    retrieval_snapshot_ref: raw.retrieval_snapshot_ref,
    policy_snapshot_ref: raw.policy_snapshot_ref,
    reducer_version: raw.reducer_version,
  });
  if (raw.reducer_identity !== reducerIdentity(context)) fail("projection.reducer_identity is invalid");
  for (const key of COUNTERS) if (!isIntAtLeast(raw[key], 0)) fail(`projection.${key} must be a non-negative integer`);
  const n = (k: Counter): bigint => big(raw[k]);
  const MAX = BigInt(MAX_PROJECTION_OBSERVATIONS);
  if (n("accepted_observation_count") > MAX) fail("projection.accepted_observation_count exceeds the input limit");
  if (n("duplicate_observation_count") > MAX - n("accepted_observation_count")) {
    fail("projection.duplicate_observation_count exceeds delivery limit");
  }
  for (const key of ["conflicting_observation_count", "rejected_observation_count"] as const) {
    if (n(key) > MAX) fail(`projection.${key} exceeds the input limit`);
  }
  if (raw.last_observed_at !== null) strictTimestamp(raw.last_observed_at, "projection.last_observed_at");
  if (raw.last_observation_id !== null) strictObservationRef(raw.last_observation_id, "projection.last_observation_id");

  const subjectValues = raw.subjects;
  if (!Array.isArray(subjectValues) || subjectValues.length > MAX_PROJECTION_SUBJECTS) {
    fail("projection.subjects must be a bounded list");
  }
  const seen = new Set<string>();
  subjectValues.forEach((value, index) => {
    const subject = asObject(value, `projection.subjects[${index}]`);
    validateSubject(subject, index, seen);
    validateAggregateSubjectSemantics(subject, `projection.subjects[${index}]`);
  });
  const subjects = subjectValues as PyObject[];
  const subjectById = new Map<string, PyObject>();
  for (const s of subjects) subjectById.set(s.subject_id as string, s);
  const levelCount = (level: string): bigint => BigInt(subjects.filter((s) => s.attribution_level === level).length);
  if (n("subject_count") !== BigInt(subjects.length)) fail("projection.subject_count does not match subjects");
  if (n("item_subject_count") !== levelCount("item")) fail("projection.item_subject_count does not match subjects");
  if (n("set_subject_count") !== levelCount("set")) fail("projection.set_subject_count does not match subjects");
  if (n("unresolved_lineage_count") !== levelCount("none")) fail("projection.unresolved_lineage_count does not match subjects");
  const observed = subjects.reduce<bigint>((acc, s) => acc + big(s.observation_count), 0n);
  if (n("accepted_observation_count") !== observed) fail("projection.accepted_observation_count does not match subjects");
  if (n("lineage_observation_count") !== n("accepted_observation_count")) {
    fail("projection.lineage_observation_count does not match accepted observations");
  }
  validateStatus(raw, status, subjects, n);
  validateHistory(raw, status, context, subjects, subjectById, n);
  validateRejections(raw, status, n);
  validateProposals(raw, status, subjects, subjectById);
  return { ...raw };
}

function validateStatus(raw: PyObject, status: string, subjects: PyObject[], n: (k: Counter) => bigint): void {
  if (status === "rejected") {
    if (raw.ok !== false || raw.projection_ready !== false) fail("rejected projection has invalid readiness state");
    const accepted: Counter[] = [
      "accepted_observation_count", "duplicate_observation_count", "conflicting_observation_count",
      "lineage_observation_count", "subject_count", "item_subject_count", "set_subject_count", "unresolved_lineage_count",
    ];
    if (accepted.some((k) => n(k) !== 0n)) fail("rejected projection must not contain accepted state");
    if (subjects.length > 0 || raw.last_observed_at !== null || raw.last_observation_id !== null) {
      fail("rejected projection must not contain subjects or history");
    }
  } else if (raw.ok !== true) {
    fail("accepted projection must have ok=true");
  }
  if (
    status === "ready" &&
    (n("accepted_observation_count") < 1n ||
      n("conflicting_observation_count") !== 0n ||
      n("rejected_observation_count") !== 0n ||
      raw.projection_ready !== true)
  ) {
    fail("ready projection has conflicting state");
  }
  if (status === "review_required") {
    if (raw.projection_ready !== false) fail("review-required projection must not be ready");
    if (n("conflicting_observation_count") === 0n && !subjects.some((s) => (s.review as PyObject).state === "conflict")) {
      fail("review-required projection has no review trigger");
    }
  }
  if (
    status === "empty" &&
    (n("accepted_observation_count") !== 0n ||
      n("duplicate_observation_count") !== 0n ||
      n("conflicting_observation_count") !== 0n ||
      n("rejected_observation_count") !== 0n ||
      subjects.length > 0 ||
      raw.projection_ready !== false)
  ) {
    fail("empty projection has observation state");
  }
}

function validateHistory(
  raw: PyObject,
  status: string,
  context: ReducerContext,
  subjects: PyObject[],
  subjectById: Map<string, PyObject>,
  n: (k: Counter) => bigint,
): void {
  const history = raw.observation_history;
  if (!Array.isArray(history) || history.length > MAX_PROJECTION_HISTORY) fail("projection.observation_history must be bounded");
  if (status === "rejected" && history.length > 0) fail("rejected projection must not contain observation history");
  const observations: Observation[] = [];
  const bySubject = new Map<string, Observation[]>();
  history.forEach((value, index) => {
    const entry = validateHistoryEntry(value, index);
    let normalized: Observation;
    try {
      normalized = observationFromHistory(entry, context);
    } catch {
      fail(`projection.observation_history[${index}] is not canonical`);
    }
    if (entry.observation_fingerprint !== observationFingerprint(normalized)) {
      fail(`projection.observation_history[${index}].observation_fingerprint is invalid`);
    }
    const subjectId = subjectIdOf(normalized);
    if (entry.subject_id !== subjectId) fail(`projection.observation_history[${index}].subject_id is invalid`);
    if (!subjectById.has(subjectId)) fail(`projection.observation_history[${index}] references an unknown subject`);
    observations.push(normalized);
    let list = bySubject.get(subjectId);
    if (list === undefined) bySubject.set(subjectId, (list = []));
    list.push(normalized);
  });
  if (new Set(observations.map((o) => o.observation_id)).size !== observations.length) {
    fail("projection.observation_history contains duplicate ids");
  }
  const truncated = n("accepted_observation_count") > BigInt(MAX_PROJECTION_HISTORY);
  if (raw.observation_history_truncated !== truncated) fail("projection.observation_history_truncated is inconsistent");
  const expectedLength = truncated ? BigInt(MAX_PROJECTION_HISTORY) : n("accepted_observation_count");
  if (BigInt(history.length) !== expectedLength) fail("projection.observation_history length is inconsistent");
  for (let i = 1; i < observations.length; i++) {
    if (compareOrder(observations[i - 1]!, observations[i]!) > 0) fail("projection.observation_history is not chronologically ordered");
  }
  for (const [subjectId, list] of bySubject) {
    if (BigInt(list.length) > big(subjectById.get(subjectId)!.observation_count)) {
      fail("projection history exceeds subject observation count");
    }
  }
  for (const [subjectId, subject] of subjectById) {
    const list = bySubject.get(subjectId) ?? [];
    if (list.length === 0) fail(`projection subject ${subjectId} is missing observation history`);
    if (big(subject.observation_count) !== BigInt(list.length) && !truncated) {
      fail(`projection subject ${subjectId} observation count is inconsistent`);
    }
    for (const entry of list) {
      if (entry.attribution_level !== subject.attribution_level) fail(`projection subject ${subjectId} attribution level is inconsistent`);
      if (!listsEqual(entry.memory_ref_digests, subject.memory_ref_digests as string[])) {
        fail(`projection subject ${subjectId} memory digests are inconsistent`);
      }
    }
    if (!truncated) {
      const expected = reduceSubject(subjectId, list[0]!.attribution_level, subject.memory_ref_digests as string[], list);
      for (const key of SUBJECT_RECHECK_KEYS) {
        if (!pyEquals(subject[key], expected[key])) fail(`projection subject ${subjectId} ${key} is inconsistent`);
      }
    }
    const [lastAt, lastId] = latestOf(list);
    if (subject.last_observed_at !== lastAt || subject.last_observation_id !== lastId) {
      fail(`projection subject ${subjectId} latest observation fields are inconsistent`);
    }
  }
  if (observations.length > 0) {
    const [lastAt, lastId] = latestOf(observations);
    if (raw.last_observed_at !== lastAt || raw.last_observation_id !== lastId) {
      fail("projection latest observation fields are inconsistent");
    }
  } else if (raw.last_observed_at !== null || raw.last_observation_id !== null) {
    fail("projection latest observation fields require history");
  }
  void subjects;
}

function validateRejections(raw: PyObject, status: string, n: (k: Counter) => bigint): void {
  const rejections = raw.rejections;
  if (!Array.isArray(rejections) || rejections.length > MAX_PROJECTION_REJECTIONS) fail("projection.rejections must be bounded");
  const conflicts = n("conflicting_observation_count");
  const ids: string[] = [];
  const deliveryCounts: bigint[] = [];
  let duplicateLowerBound = 0n;
  rejections.forEach((value, index) => {
    const item = asObject(value, `projection.rejections[${index}]`);
    if (Object.keys(item).some((k) => !REJECTION_FIELDS.has(k)) || !has(item, "reason_codes")) {
      fail("projection rejection shape is invalid");
    }
    if (status === "rejected") {
      if (!sameKeys(item, set(["reason_codes"]))) fail("rejected projection has delivery details");
    } else if (conflicts > 0n && !sameKeys(item, REJECTION_FIELDS)) {
      fail("conflicting projection rejection shape is invalid");
    }
    if (has(item, "observation_id")) ids.push(strictObservationRef(item.observation_id, "projection rejection observation_id"));
    const reasons = strictRefList(item.reason_codes, `projection.rejections[${index}].reason_codes`, MAX_REVIEW_REASON_CODES, 1);
    if (conflicts > 0n && !reasons.includes("conflicting_observation_delivery")) fail("conflicting rejection reason is missing");
    let deliveryCount: bigint | null = null;
    if (has(item, "delivery_count")) {
      if (!isIntAtLeast(item.delivery_count, 2)) fail("projection rejection delivery_count is invalid");
      deliveryCount = big(item.delivery_count);
      deliveryCounts.push(deliveryCount);
    }
    const truncatedFlag = item.delivery_fingerprints_truncated;
    if (has(item, "delivery_fingerprints_truncated") && typeof truncatedFlag !== "boolean") {
      fail("projection rejection truncation flag is invalid");
    }
    if (has(item, "delivery_fingerprints")) {
      const prints = strictRefList(
        item.delivery_fingerprints,
        `projection.rejections[${index}].delivery_fingerprints`,
        MAX_CONFLICT_FINGERPRINTS,
        2,
      );
      if (prints.some((p) => !FINGERPRINT_RE.test(p))) fail("projection rejection fingerprint is invalid");
      const count = BigInt(prints.length);
      if (deliveryCount !== null && deliveryCount < count) fail("projection rejection delivery_count is too small");
      if (truncatedFlag === false && deliveryCount !== null) duplicateLowerBound += deliveryCount - count;
      if (truncatedFlag === true) {
        if (prints.length !== MAX_CONFLICT_FINGERPRINTS) fail("projection rejection truncation flag is inconsistent");
        if (deliveryCount !== null && deliveryCount <= count) fail("projection rejection truncation flag is inconsistent");
      }
    } else if (conflicts > 0n) {
      fail("conflicting rejection fingerprints are missing");
    }
    if (conflicts > 0n) {
      if (item.quarantine_proposed !== true) fail("conflicting rejection must propose quarantine");
      if (item.automatic_deletion !== false || item.action_authority_granted !== false) fail("conflicting rejection boundary is invalid");
    }
  });
  if (new Set(ids).size !== ids.length) fail("projection rejections contain duplicate observation ids");
  if (n("duplicate_observation_count") < duplicateLowerBound) fail("projection duplicate count is below known delivery duplicates");
  const rejected = n("rejected_observation_count");
  if (conflicts === 0n) {
    if (status === "rejected") {
      if (rejections.length === 0 || rejected < 1n) fail("rejected projection must include a rejection reason");
    } else if (rejections.length > 0 || rejected !== 0n) {
      fail("projection has rejected deliveries without conflicts");
    }
  } else {
    const expected = conflicts < BigInt(MAX_PROJECTION_REJECTIONS) ? conflicts : BigInt(MAX_PROJECTION_REJECTIONS);
    if (BigInt(rejections.length) !== expected) fail("projection rejection count does not match conflicts");
    if (rejected < conflicts * 2n) fail("projection rejected count is inconsistent with conflicts");
    if (
      BigInt(rejections.length) === conflicts &&
      deliveryCounts.length === rejections.length &&
      rejected !== deliveryCounts.reduce((a, b) => a + b, 0n)
    ) {
      fail("projection rejected count does not match delivery facts");
    }
  }
}

function validateProposals(raw: PyObject, status: string, subjects: PyObject[], subjectById: Map<string, PyObject>): void {
  const proposals = raw.review_proposals;
  if (!Array.isArray(proposals) || proposals.length > MAX_PROJECTION_SUBJECTS) fail("projection.review_proposals must be bounded");
  const expected = new Set(subjects.filter((s) => (s.review as PyObject).state !== "none").map((s) => s.subject_id as string));
  const seen = new Set<string>();
  proposals.forEach((value, index) => {
    const proposal = asObject(value, `projection.review_proposals[${index}]`);
    requireExactFields(proposal, PROPOSAL_FIELDS, `projection.review_proposals[${index}]`);
    const subjectId = strictRef(proposal.subject_id, "review proposal subject_id");
    if (seen.has(subjectId)) fail("projection review proposals contain duplicate subjects");
    seen.add(subjectId);
    const subject = subjectById.get(subjectId);
    if (subject === undefined) fail("review proposal references an unknown subject");
    const rv = subject.review as PyObject;
    if (rv.state === "none") fail("review proposal references a subject without review");
    strictEnum(proposal.attribution_level, LEVEL_SET, "review proposal attribution_level");
    strictMemoryDigests(proposal.memory_ref_digests, "review proposal memory_ref_digests");
    strictEnum(proposal.state, REVIEW_STATES, "review proposal state");
    strictEnum(proposal.proposed_action, REVIEW_ACTIONS, "review proposal action");
    strictRefList(proposal.reason_codes, `projection.review_proposals[${index}].reason_codes`, MAX_REVIEW_REASON_CODES);
    if (typeof proposal.quarantine_proposed !== "boolean") fail("review proposal quarantine flag is invalid");
    if (proposal.quarantine_proposed !== (proposal.state === "conflict")) fail("review proposal quarantine flag is inconsistent");
    if (proposal.automatic_deletion !== false || proposal.action_authority_granted !== false) fail("review proposal boundary is invalid");
    if (proposal.attribution_level !== subject.attribution_level) fail("review proposal attribution level is inconsistent");
    if (!pyEquals(proposal.memory_ref_digests, subject.memory_ref_digests)) fail("review proposal memory digests are inconsistent");
    for (const key of ["state", "proposed_action", "reason_codes", "quarantine_proposed"]) {
      if (!pyEquals(proposal[key], rv[key])) fail(`review proposal ${key} is inconsistent`);
    }
  });
  if (seen.size !== expected.size || [...seen].some((id) => !expected.has(id))) fail("review proposals do not match subject review state");
  if (status === "rejected" && proposals.length > 0) fail("rejected projection must not contain review proposals");
}
