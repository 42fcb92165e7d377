/** The normalized observation v0 as a type, with its enumerations (shared by the validator and the JSON writers). */
import type { Scope } from "./fields.js";

export const OBSERVATION_SCHEMA_VERSION = "memory_utility_observation_v0";
/** What starts a payload's fingerprint, before the 64 hex digits of its sha256 (observationFingerprint). */
export const FINGERPRINT_PREFIX = "muof_";

export const UTILITY_LABELS = ["helpful", "harmful", "neutral", "unknown"] as const;
export const ATTRIBUTION_LEVELS = ["item", "set", "none"] as const;
export const EVIDENCE_BASES = [
  "owner_correction",
  "controlled_replay",
  "deterministic_effect",
  "evaluator_inference",
  "insufficient",
] as const;
export type UtilityLabel = (typeof UTILITY_LABELS)[number];
export type AttributionLevel = (typeof ATTRIBUTION_LEVELS)[number];
export type EvidenceBasis = (typeof EVIDENCE_BASES)[number];

/** The evaluator's judgment: the part of an observation a proposal supplies. `confidence` is a Python float. */
export interface UtilityFields {
  utility_label: UtilityLabel;
  attribution_level: AttributionLevel;
  evidence_basis: EvidenceBasis;
  confidence: number;
  reason_codes: string[];
  evidence_refs: string[];
  evaluator_ref: string;
  evaluation_version: string;
}

/** A normalized observation. `confidence` is a Python float. */
export interface Observation extends UtilityFields {
  schema_version: typeof OBSERVATION_SCHEMA_VERSION;
  observation_id: string;
  scope: Scope;
  application_receipt_id: string;
  memory_ref_digests: string[];
  retrieval_snapshot_ref: string;
  policy_snapshot_ref: string;
  outcome_ref: string;
  created_at: string;
  grants_new_action_authority: false;
  provider_write_performed: false;
  external_writes_performed: false;
  raw_content_captured: false;
}

