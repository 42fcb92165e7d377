/**
 * Observation v0 (`memory_utility_observation_v0`): the structural validator,
 * its normalization, the canonical id, the fingerprint and the typed reason
 * codes, as `loopx.capabilities.reward_memory.memory_utility` defines them.
 */
import { canonicalJson, floatJson } from "./canonical-json.js";
import { sha256Hex } from "./digest.js";
import { ContractError, ObservationValidationError, fail } from "./errors.js";
import {
  asObject,
  falseBoundary,
  memoryDigests,
  opaqueRef,
  refList,
  requireExactFields,
  scopeOf,
  timestampField,
  type Scope,
} from "./fields.js";
import { observationIdentityJson, observationJson } from "./observation-json.js";
import { pyStrStrip } from "./pystr.js";
import { ATTRIBUTION_LEVELS, EVIDENCE_BASES, FINGERPRINT_PREFIX, OBSERVATION_SCHEMA_VERSION, UTILITY_LABELS, type AttributionLevel, type EvidenceBasis, type Observation, type UtilityFields, type UtilityLabel } from "./observation-model.js";

export { ATTRIBUTION_LEVELS, EVIDENCE_BASES, OBSERVATION_SCHEMA_VERSION, UTILITY_LABELS, type AttributionLevel, type EvidenceBasis, type Observation, type UtilityFields, type UtilityLabel };
import { PyFloat, isPyObject, type PyObject, type PyValue } from "./pyvalue.js";

const UTILITY_LABEL_SET: ReadonlySet<string> = new Set(UTILITY_LABELS);
const ATTRIBUTION_LEVEL_SET: ReadonlySet<string> = new Set(ATTRIBUTION_LEVELS);
const EVIDENCE_BASIS_SET: ReadonlySet<string> = new Set(EVIDENCE_BASES);
const STRONG_BASES: ReadonlySet<string> = new Set(["owner_correction", "controlled_replay", "deterministic_effect"]);

const MAX_REASON_CODES = 12;
const MAX_EVIDENCE_REFS = 16;

export const WRITE_BOUNDARY_FIELDS = [
  "grants_new_action_authority",
  "provider_write_performed",
  "external_writes_performed",
  "raw_content_captured",
] as const;

export const OBSERVATION_FIELDS: ReadonlySet<string> = new Set([
  "schema_version",
  "observation_id",
  "scope",
  "application_receipt_id",
  "memory_ref_digests",
  "retrieval_snapshot_ref",
  "policy_snapshot_ref",
  "outcome_ref",
  "utility_label",
  "attribution_level",
  "evidence_basis",
  "confidence",
  "reason_codes",
  "evidence_refs",
  "evaluator_ref",
  "evaluation_version",
  "created_at",
  ...WRITE_BOUNDARY_FIELDS,
]);

/** The fields the observation id is computed over. */
export const IDENTITY_FIELDS = [
  "schema_version",
  "scope",
  "application_receipt_id",
  "memory_ref_digests",
  "retrieval_snapshot_ref",
  "policy_snapshot_ref",
  "outcome_ref",
  "attribution_level",
  "evidence_basis",
  "evidence_refs",
  "evaluator_ref",
  "evaluation_version",
] as const;

/** `float(value)` for a confidence; every failure has one message. */
export function confidenceOf(value: PyValue | undefined): number {
  const message = "confidence must be a finite number between 0 and 1";
  let result: number;
  if (value instanceof PyFloat) result = value.value;
  else if (typeof value === "number") result = value;
  else if (typeof value === "bigint") result = Number(value); // beyond 1e308 this is ±Infinity: Python's OverflowError
  else fail(message);
  if (!Number.isFinite(result) || !(result >= 0 && result <= 1)) fail(message);
  return result; // -0.0 stays -0.0, as float(-0.0) does
}

/** `_utility_fields`: enums, evidence refs, the cross-field rules, then the rest, in the reference's order. */
export function utilityFields(value: PyObject): UtilityFields {
  const utilityLabel = pyStrStrip(value.utility_label);
  const attributionLevel = pyStrStrip(value.attribution_level);
  const evidenceBasis = pyStrStrip(value.evidence_basis);
  if (!UTILITY_LABEL_SET.has(utilityLabel)) fail("utility_label is invalid");
  if (!ATTRIBUTION_LEVEL_SET.has(attributionLevel)) fail("attribution_level is invalid");
  if (!EVIDENCE_BASIS_SET.has(evidenceBasis)) fail("evidence_basis is invalid");
  const evidenceRefs = refList(value.evidence_refs, "evidence_refs", MAX_EVIDENCE_REFS);
  if (evidenceBasis === "insufficient" && utilityLabel !== "unknown") {
    fail("insufficient evidence must produce unknown utility");
  }
  if (STRONG_BASES.has(evidenceBasis) && evidenceRefs.length === 0) {
    fail("strong evidence basis requires evidence_refs");
  }
  if (attributionLevel === "none" && utilityLabel !== "unknown") fail("none attribution must produce unknown utility");
  if (utilityLabel !== "unknown" && evidenceRefs.length === 0) fail("non-unknown utility requires evidence_refs");
  return {
    utility_label: utilityLabel as UtilityLabel,
    attribution_level: attributionLevel as AttributionLevel,
    evidence_basis: evidenceBasis as EvidenceBasis,
    confidence: confidenceOf(value.confidence),
    reason_codes: refList(value.reason_codes, "reason_codes", MAX_REASON_CODES),
    evidence_refs: evidenceRefs,
    evaluator_ref: opaqueRef(value.evaluator_ref, "evaluator_ref"),
    evaluation_version: opaqueRef(value.evaluation_version, "evaluation_version"),
  };
}

/** The id identity of a normalized observation: ASCII strings and lists only. */
export function observationIdOf(obs: Pick<Observation, (typeof IDENTITY_FIELDS)[number]>): string {
  return "muo_" + sha256Hex(observationIdentityJson(obs));
}

/** The observation as JSON values (confidence boxed as a Python float). */
export function observationToPy(obs: Observation, withoutCreatedAt = false): PyObject {
  const out: PyObject = { ...(obs as unknown as PyObject), scope: { ...obs.scope }, confidence: new PyFloat(obs.confidence) };
  if (withoutCreatedAt) delete out.created_at;
  return out;
}

/** `muof_` fingerprint: every field but `created_at`, so retries share it. */
export function observationFingerprint(obs: Observation): string {
  return FINGERPRINT_PREFIX + sha256Hex(observationJson(obs, false));
}

// A normalized observation's id and fingerprint texts hold only refs, digests,
// enum values and a float repr: ASCII needing no escape. They are written
// without quote() (observationIdentityJson and observationJson, byte for
// byte). Only for observations this module normalized.

function refs(values: readonly string[]): string {
  return values.length === 0 ? "[]" : `["${values.join('","')}"]`;
}

function scopeText(s: Scope): string {
  return `{"agent_id":"${s.agent_id}","corpus_id":"${s.corpus_id}","project_id":"${s.project_id}","surface_id":"${s.surface_id}"}`;
}

/** observationIdOf of a normalized observation. */
export function normalizedObservationId(o: Observation): string {
  return (
    "muo_" +
    sha256Hex(
      `{"application_receipt_id":"${o.application_receipt_id}","attribution_level":"${o.attribution_level}"` +
        `,"evaluation_version":"${o.evaluation_version}","evaluator_ref":"${o.evaluator_ref}","evidence_basis":"${o.evidence_basis}"` +
        `,"evidence_refs":${refs(o.evidence_refs)},"memory_ref_digests":${refs(o.memory_ref_digests)}` +
        `,"outcome_ref":"${o.outcome_ref}","policy_snapshot_ref":"${o.policy_snapshot_ref}","retrieval_snapshot_ref":"${o.retrieval_snapshot_ref}"` +
        `,"schema_version":"${o.schema_version}","scope":${scopeText(o.scope)}}`,
    )
  );
}

/** observationFingerprint of a normalized observation. */
export function normalizedFingerprint(o: Observation): string {
  return (
    FINGERPRINT_PREFIX +
    sha256Hex(
      `{"application_receipt_id":"${o.application_receipt_id}","attribution_level":"${o.attribution_level}","confidence":${floatJson(o.confidence)}` +
        `,"evaluation_version":"${o.evaluation_version}","evaluator_ref":"${o.evaluator_ref}","evidence_basis":"${o.evidence_basis}"` +
        `,"evidence_refs":${refs(o.evidence_refs)},"external_writes_performed":false,"grants_new_action_authority":false` +
        `,"memory_ref_digests":${refs(o.memory_ref_digests)},"observation_id":"${o.observation_id}","outcome_ref":"${o.outcome_ref}"` +
        `,"policy_snapshot_ref":"${o.policy_snapshot_ref}","provider_write_performed":false,"raw_content_captured":false` +
        `,"reason_codes":${refs(o.reason_codes)},"retrieval_snapshot_ref":"${o.retrieval_snapshot_ref}","schema_version":"${o.schema_version}"` +
        `,"scope":${scopeText(o.scope)},"utility_label":"${o.utility_label}"}`,
    )
  );
}

function normalizeObservation(value: PyValue | undefined): Observation {
  const raw = asObject(value, "observation");
  requireExactFields(raw, OBSERVATION_FIELDS, "observation");
  if (raw.schema_version !== OBSERVATION_SCHEMA_VERSION) {
    fail("observation.schema_version must be memory_utility_observation_v0");
  }
  for (const key of WRITE_BOUNDARY_FIELDS) falseBoundary(raw, key, "observation");
  const observationId = opaqueRef(raw.observation_id, "observation.observation_id");
  const scope = scopeOf(raw.scope, "observation.scope");
  const applicationReceiptId = opaqueRef(raw.application_receipt_id, "observation.application_receipt_id");
  const digests = memoryDigests(raw.memory_ref_digests, "observation.memory_ref_digests");
  const retrieval = opaqueRef(raw.retrieval_snapshot_ref, "observation.retrieval_snapshot_ref");
  const policy = opaqueRef(raw.policy_snapshot_ref, "observation.policy_snapshot_ref");
  const outcomeRef = opaqueRef(raw.outcome_ref, "observation.outcome_ref");
  const utility = utilityFields(raw);
  const createdAt = timestampField(raw.created_at, "observation.created_at");
  // One literal (no spread): every normalized observation has the same hidden class.
  const normalized: Observation = {
    schema_version: OBSERVATION_SCHEMA_VERSION,
    observation_id: observationId,
    scope,
    application_receipt_id: applicationReceiptId,
    memory_ref_digests: digests,
    retrieval_snapshot_ref: retrieval,
    policy_snapshot_ref: policy,
    outcome_ref: outcomeRef,
    utility_label: utility.utility_label,
    attribution_level: utility.attribution_level,
    evidence_basis: utility.evidence_basis,
    confidence: utility.confidence,
    reason_codes: utility.reason_codes,
    evidence_refs: utility.evidence_refs,
    evaluator_ref: utility.evaluator_ref,
    evaluation_version: utility.evaluation_version,
    created_at: createdAt,
    grants_new_action_authority: false,
    provider_write_performed: false,
    external_writes_performed: false,
    raw_content_captured: false,
  };
  if (normalized.observation_id !== normalizedObservationId(normalized)) {
    fail("observation.observation_id does not match canonical identity");
  }
  return normalized;
}

/** `_observation_validation_reason_code`: classify from typed fields, never from message text. */
export function observationReasonCode(value: PyValue | undefined): string {
  if (!isPyObject(value)) return "observation_malformed";
  if (value.schema_version !== OBSERVATION_SCHEMA_VERSION) return "observation_schema_mismatch";
  for (const key of WRITE_BOUNDARY_FIELDS) {
    if (Object.prototype.hasOwnProperty.call(value, key) && value[key] !== false) {
      return "observation_write_boundary_violation";
    }
  }
  try {
    scopeOf(value.scope, "observation.scope");
  } catch (err) {
    if (err instanceof ContractError) return "observation_malformed_scope";
    throw err;
  }
  try {
    opaqueRef(value.retrieval_snapshot_ref, "observation.retrieval_snapshot_ref");
    opaqueRef(value.policy_snapshot_ref, "observation.policy_snapshot_ref");
  } catch (err) {
    if (err instanceof ContractError) return "observation_malformed_snapshot";
    throw err;
  }
  try {
    const observationId = opaqueRef(value.observation_id, "observation.observation_id");
    if (IDENTITY_FIELDS.every((k) => Object.prototype.hasOwnProperty.call(value, k))) {
      // The reference hashes the raw, unnormalized values here (NaN allowed).
      const identity: PyObject = {};
      for (const key of IDENTITY_FIELDS) identity[key] = value[key]!;
      if (observationId !== "muo_" + sha256Hex(canonicalJson(identity, { allowNan: true }))) {
        return "observation_identity_invalid";
      }
    }
  } catch (err) {
    if (err instanceof Error) return "observation_identity_invalid";
    throw err;
  }
  return "observation_malformed";
}

/** Structural validation of one observation; throws ObservationValidationError. */
export function validateObservation(value: PyValue | undefined): Observation {
  try {
    return normalizeObservation(value);
  } catch (err) {
    if (err instanceof ContractError) {
      throw new ObservationValidationError(observationReasonCode(value), err.message);
    }
    throw err;
  }
}
