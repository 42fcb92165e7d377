/**
 * Trusted facts and the observation builder (`build_reward_memory_utility_observation`):
 * an evaluator's proposal is bound to a verified application receipt, a
 * verified outcome and the attribution context, and the ids are derived.
 */
import { canonicalJson } from "./canonical-json.js";
import { sha256Hex } from "./digest.js";
import { fail } from "./errors.js";
import {
  asObject,
  existingToken,
  falseBoundary,
  listsEqual,
  memoryDigests,
  opaqueRef,
  requireExactFields,
  scopeOf,
  scopesEqual,
  timestampField,
  type Scope,
} from "./fields.js";
import {
  OBSERVATION_SCHEMA_VERSION,
  observationIdOf,
  observationToPy,
  utilityFields,
  validateObservation,
  type AttributionLevel,
  type Observation,
} from "./observation.js";
import { pyReprStrList } from "./pyrepr.js";
import { pyStrip, pyStrStrip } from "./pystr.js";
import { pyEquals, pySorted, type PyObject, type PyValue } from "./pyvalue.js";

export const RECEIPT_SCHEMA_VERSION = "reward_memory_application_receipt_v0";
const RECEIPT_REQUIRED = new Set([
  "schema_version", "application_id", "artifact_ref", "corpus_id", "surface_id", "mode", "query_kind",
  "query_evidence", "outcome", "memory_ref_digests", "reasoning_summary", "current_artifact_verified",
  "result_readback_verified", "provider_call_count", "model_reasoning_preserved", "grants_new_action_authority",
  "external_writes_performed", "raw_content_captured",
]);
const RECEIPT_OPTIONAL = new Set(["retrieval_snapshot_ref", "policy_snapshot_ref"]);
const QUERY_EVIDENCE_FIELDS = new Set(["query_digest", "query_summary", "exact_query_exposed"]);
const RECALL_MODES = new Set(["function_boundary", "bounded_agentic_search"]);
const QUERY_KINDS = new Set(["business_recall", "ingest_verification"]);
const OUTCOMES = new Set(["applied", "ignored", "refuted", "failed", "not_available", "available_not_applied"]);
const VERIFIED_OUTCOME_FIELDS = new Set(["verified", "outcome_ref", "artifact_ref", "outcome_status"]);
const CONTEXT_FIELDS = new Set(["scope", "retrieval_snapshot_ref", "policy_snapshot_ref"]);
const PROPOSAL_FIELDS = new Set([
  "scope", "application_id", "artifact_ref", "outcome_ref", "outcome_status", "retrieval_snapshot_ref",
  "policy_snapshot_ref", "memory_ref_digests", "utility_label", "attribution_level", "evidence_basis", "confidence",
  "reason_codes", "evidence_refs", "evaluator_ref", "evaluation_version",
]);

export interface NormalizedReceipt {
  application_id: string;
  artifact_ref: string;
  corpus_id: string;
  surface_id: string;
  outcome: string;
  memory_ref_digests: string[];
  retrieval_snapshot_ref?: string;
  policy_snapshot_ref?: string;
}

function compactText(value: PyValue | undefined, label: string, maximum: number): string {
  if (typeof value !== "string") fail(`${label} must be compact public-safe text`);
  const result = pyStrip(value);
  if (!result || [...result].length > maximum || /[\r\n]/.test(result)) fail(`${label} must be compact public-safe text`);
  return result;
}

function bool(value: PyObject, key: string, label: string): boolean {
  const v = value[key];
  if (typeof v !== "boolean") fail(`${label}.${key} must be a boolean`);
  return v;
}

function validateReceiptEnvelope(raw: PyObject): void {
  const keys = Object.keys(raw);
  const missing = pySorted([...RECEIPT_REQUIRED].filter((k) => !keys.includes(k)));
  const unknown = pySorted(keys.filter((k) => !RECEIPT_REQUIRED.has(k) && !RECEIPT_OPTIONAL.has(k)));
  if (missing.length || unknown.length) {
    fail(`application_receipt has invalid fields: missing=${pyReprStrList(missing)}, unknown=${pyReprStrList(unknown)}`);
  }
  if (!RECALL_MODES.has(pyStrStrip(raw.mode))) fail("application_receipt.mode is invalid");
  if (!QUERY_KINDS.has(pyStrStrip(raw.query_kind))) fail("application_receipt.query_kind is invalid");
  const evidence = raw.query_evidence;
  if (!Array.isArray(evidence) || evidence.length > 3) fail("application_receipt.query_evidence must be a bounded list");
  evidence.forEach((item, index) => {
    const label = `application_receipt.query_evidence[${index}]`;
    const e = asObject(item, label);
    requireExactFields(e, QUERY_EVIDENCE_FIELDS, label);
    if (!/^[0-9a-f]{16}$/.test(pyStrStrip(e.query_digest))) fail(`${label}.query_digest must be a canonical digest`);
    compactText(e.query_summary, `${label}.query_summary`, 220);
    if (e.exact_query_exposed !== false) fail(`${label}.exact_query_exposed must be false`);
  });
  compactText(raw.reasoning_summary, "application_receipt.reasoning_summary", 500);
  bool(raw, "current_artifact_verified", "application_receipt");
  bool(raw, "result_readback_verified", "application_receipt");
  if (bool(raw, "model_reasoning_preserved", "application_receipt") !== true) {
    fail("application_receipt.model_reasoning_preserved must be true");
  }
  const calls = raw.provider_call_count;
  const okCount = (typeof calls === "number" && calls >= 0) || (typeof calls === "bigint" && calls >= 0n);
  if (!okCount) fail("application_receipt.provider_call_count must be a non-negative integer");
}

/** `_application_receipt`: normalized receipt and its `rma_` id over the complete raw receipt. */
export function applicationReceipt(value: PyValue | undefined, minimumDigests = 1): [NormalizedReceipt, string] {
  const raw = asObject(value, "application_receipt");
  if (raw.schema_version !== RECEIPT_SCHEMA_VERSION) fail("application_receipt must use reward_memory_application_receipt_v0");
  validateReceiptEnvelope(raw);
  const outcome = pyStrStrip(raw.outcome);
  if (!OUTCOMES.has(outcome)) fail("application_receipt.outcome is invalid");
  const digests = memoryDigests(raw.memory_ref_digests, "application_receipt.memory_ref_digests", minimumDigests);
  if (!pyEquals(digests, raw.memory_ref_digests)) fail("application_receipt.memory_ref_digests must be sorted and canonical");
  const normalized: NormalizedReceipt = {
    application_id: existingToken(raw.application_id, "application_receipt.application_id"),
    artifact_ref: existingToken(raw.artifact_ref, "application_receipt.artifact_ref"),
    corpus_id: opaqueRef(raw.corpus_id, "application_receipt.corpus_id"),
    surface_id: opaqueRef(raw.surface_id, "application_receipt.surface_id"),
    outcome,
    memory_ref_digests: digests,
  };
  falseBoundary(raw, "grants_new_action_authority", "application_receipt");
  falseBoundary(raw, "external_writes_performed", "application_receipt");
  falseBoundary(raw, "raw_content_captured", "application_receipt");
  for (const key of ["retrieval_snapshot_ref", "policy_snapshot_ref"] as const) {
    if (Object.prototype.hasOwnProperty.call(raw, key)) normalized[key] = opaqueRef(raw[key], `application_receipt.${key}`);
  }
  let encoded: string;
  try {
    encoded = canonicalJson(raw);
  } catch {
    fail("application_receipt must be canonical JSON data");
  }
  return [normalized, "rma_" + sha256Hex(encoded)];
}

/** `reward_memory_application_receipt_id`: the id of one complete receipt (0 digests allowed). */
export function applicationReceiptId(receipt: PyValue): string {
  return applicationReceipt(receipt, 0)[1];
}

interface VerifiedOutcome {
  outcome_ref: string;
  artifact_ref: string;
  outcome_status: string;
}

function verifiedOutcome(value: PyValue | undefined): VerifiedOutcome {
  const raw = asObject(value, "verified_outcome");
  requireExactFields(raw, VERIFIED_OUTCOME_FIELDS, "verified_outcome");
  if (raw.verified !== true) fail("verified_outcome.verified must be true");
  return {
    outcome_ref: opaqueRef(raw.outcome_ref, "verified_outcome.outcome_ref"),
    artifact_ref: existingToken(raw.artifact_ref, "verified_outcome.artifact_ref"),
    outcome_status: opaqueRef(raw.outcome_status, "verified_outcome.outcome_status"),
  };
}

interface AttributionContext {
  scope: Scope;
  retrieval_snapshot_ref: string;
  policy_snapshot_ref: string;
}

function attributionContext(value: PyValue | undefined): AttributionContext {
  const raw = asObject(value, "attribution_context");
  requireExactFields(raw, CONTEXT_FIELDS, "attribution_context");
  return {
    scope: scopeOf(raw.scope, "attribution_context.scope"),
    retrieval_snapshot_ref: opaqueRef(raw.retrieval_snapshot_ref, "attribution_context.retrieval_snapshot_ref"),
    policy_snapshot_ref: opaqueRef(raw.policy_snapshot_ref, "attribution_context.policy_snapshot_ref"),
  };
}

function validateBindings(receipt: NormalizedReceipt, outcome: VerifiedOutcome, context: AttributionContext): void {
  if (outcome.artifact_ref !== receipt.artifact_ref) fail("verified_outcome.artifact_ref must match the application receipt");
  if (context.scope.corpus_id !== receipt.corpus_id) fail("attribution_context.scope.corpus_id must match the application receipt");
  if (context.scope.surface_id !== receipt.surface_id) fail("attribution_context.scope.surface_id must match the application receipt");
  for (const key of ["retrieval_snapshot_ref", "policy_snapshot_ref"] as const) {
    const expected = receipt[key];
    if (expected !== undefined && context[key] !== expected) fail(`attribution_context.${key} must match the application receipt`);
  }
}

function validateAttributionSubject(digests: string[], level: AttributionLevel, applicationDigests: string[]): void {
  if (level === "item") {
    if (digests.length !== 1 || !applicationDigests.includes(digests[0]!)) {
      fail("item attribution must bind exactly one digest from the application receipt");
    }
    return;
  }
  if (!listsEqual(digests, applicationDigests)) fail("set or none attribution must bind the complete application memory set");
}

function evaluatorProposal(value: PyValue | undefined, receipt: NormalizedReceipt, outcome: VerifiedOutcome, context: AttributionContext) {
  const raw = asObject(value, "evaluator_proposal");
  requireExactFields(raw, PROPOSAL_FIELDS, "evaluator_proposal");
  const proposal = {
    scope: scopeOf(raw.scope, "evaluator_proposal.scope"),
    application_id: existingToken(raw.application_id, "evaluator_proposal.application_id"),
    artifact_ref: existingToken(raw.artifact_ref, "evaluator_proposal.artifact_ref"),
    outcome_ref: opaqueRef(raw.outcome_ref, "evaluator_proposal.outcome_ref"),
    outcome_status: opaqueRef(raw.outcome_status, "evaluator_proposal.outcome_status"),
    retrieval_snapshot_ref: opaqueRef(raw.retrieval_snapshot_ref, "evaluator_proposal.retrieval_snapshot_ref"),
    policy_snapshot_ref: opaqueRef(raw.policy_snapshot_ref, "evaluator_proposal.policy_snapshot_ref"),
    memory_ref_digests: memoryDigests(raw.memory_ref_digests, "evaluator_proposal.memory_ref_digests"),
    ...utilityFields(raw),
  };
  const echoes: [keyof typeof proposal, boolean][] = [
    ["scope", scopesEqual(proposal.scope, context.scope)],
    ["application_id", proposal.application_id === receipt.application_id],
    ["artifact_ref", proposal.artifact_ref === outcome.artifact_ref],
    ["outcome_ref", proposal.outcome_ref === outcome.outcome_ref],
    ["outcome_status", proposal.outcome_status === outcome.outcome_status],
    ["retrieval_snapshot_ref", proposal.retrieval_snapshot_ref === context.retrieval_snapshot_ref],
    ["policy_snapshot_ref", proposal.policy_snapshot_ref === context.policy_snapshot_ref],
  ];
  for (const [key, same] of echoes) if (!same) fail(`evaluator_proposal.${key} does not match trusted context`);
  validateAttributionSubject(proposal.memory_ref_digests, proposal.attribution_level, receipt.memory_ref_digests);
  return proposal;
}

export interface TrustedFacts {
  application_receipt: PyValue;
  verified_outcome: PyValue;
  attribution_context: PyValue;
}

/** Structural validation plus the binding to all three trusted facts. */
export function validateObservationWithFacts(observation: PyValue, facts: TrustedFacts): Observation {
  const normalized = validateObservation(observation);
  const [receipt, receiptId] = applicationReceipt(facts.application_receipt);
  const outcome = verifiedOutcome(facts.verified_outcome);
  const context = attributionContext(facts.attribution_context);
  validateBindings(receipt, outcome, context);
  const expected: [keyof Observation, boolean][] = [
    ["scope", scopesEqual(normalized.scope, context.scope)],
    ["application_receipt_id", normalized.application_receipt_id === receiptId],
    ["retrieval_snapshot_ref", normalized.retrieval_snapshot_ref === context.retrieval_snapshot_ref],
    ["policy_snapshot_ref", normalized.policy_snapshot_ref === context.policy_snapshot_ref],
    ["outcome_ref", normalized.outcome_ref === outcome.outcome_ref],
  ];
  for (const [key, same] of expected) if (!same) fail(`observation.${key} does not match trusted context`);
  validateAttributionSubject(normalized.memory_ref_digests, normalized.attribution_level, receipt.memory_ref_digests);
  return normalized;
}

/** Bind a typed evaluator proposal to trusted execution and outcome facts. */
export function buildObservation(facts: TrustedFacts, evaluatorProposalValue: PyValue, createdAt: PyValue): Observation {
  const [receipt, receiptId] = applicationReceipt(facts.application_receipt);
  const outcome = verifiedOutcome(facts.verified_outcome);
  const context = attributionContext(facts.attribution_context);
  validateBindings(receipt, outcome, context);
  const proposal = evaluatorProposal(evaluatorProposalValue, receipt, outcome, context);
  const draft: Observation = {
    schema_version: OBSERVATION_SCHEMA_VERSION,
    observation_id: "",
    scope: context.scope,
    application_receipt_id: receiptId,
    memory_ref_digests: proposal.memory_ref_digests,
    retrieval_snapshot_ref: context.retrieval_snapshot_ref,
    policy_snapshot_ref: context.policy_snapshot_ref,
    outcome_ref: outcome.outcome_ref,
    utility_label: proposal.utility_label,
    attribution_level: proposal.attribution_level,
    evidence_basis: proposal.evidence_basis,
    confidence: proposal.confidence,
    reason_codes: proposal.reason_codes,
    evidence_refs: proposal.evidence_refs,
    evaluator_ref: proposal.evaluator_ref,
    evaluation_version: proposal.evaluation_version,
    created_at: timestampField(createdAt, "created_at"),
    grants_new_action_authority: false,
    provider_write_performed: false,
    external_writes_performed: false,
    raw_content_captured: false,
  };
  draft.observation_id = observationIdOf(draft);
  return validateObservationWithFacts(observationToPy(draft), facts);
}
