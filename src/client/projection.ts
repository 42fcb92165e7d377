/**
 * The packet `memory_utility_projection_v0` as TypeScript types: what a reader
 * gets back from `JSON.parse` of the packet bytes. The field sets are the ones
 * the readback validator (src/core/projection-validator.ts) requires exactly;
 * test/unit/client-api.unit.spec.ts holds them against real packets.
 *
 * Numbers are plain JS numbers here: JSON.parse does not keep Python's
 * int/float distinction (`1.0` reads as `1`). Byte-exact work (digests,
 * comparing packets) uses the packet text, never a re-serialization.
 */
import type { AttributionLevel, EvidenceBasis, Scope, UtilityLabel } from "../core/index.js";
import type { HistoryEntry } from "../core/projection.js";

export type { AttributionLevel, EvidenceBasis, Scope, UtilityLabel };

/** `ready`: accepted observations, no conflict. `empty`: nothing accepted. `review_required`: a quarantined observation id or a subject in conflict. `rejected`: the input could not be reduced (the packet says why in `rejections`). */
export type ProjectionStatus = "ready" | "empty" | "review_required" | "rejected";
/** Every ProjectionStatus. */
export const PROJECTION_STATUSES: readonly ProjectionStatus[] = ["ready", "empty", "review_required", "rejected"];

/** What a subject's evidence amounts to for review: nothing to review, attenuation proposed, a conflict, or attribution not established. */
export type ReviewState = "none" | "attenuation_proposed" | "conflict" | "unresolved_attribution";
/** The action a review proposes to a human or host (one per ReviewState, in order); mufold takes none. */
export type ReviewAction = "none" | "attenuate_or_review" | "manual_review" | "collect_attribution";

/** What a subject's evidence asks a human (or host) to look at. Never an action mufold takes. */
export interface Review {
  state: ReviewState;
  proposed_action: ReviewAction;
  reason_codes: string[];
  /** True exactly when `state` is `conflict`. */
  quarantine_proposed: boolean;
  automatic_deletion: false;
  action_authority_granted: false;
}

/** Observations of one subject at one evidence basis and label. */
export interface EvidenceLabelSummary {
  evidence_basis: EvidenceBasis;
  utility_label: UtilityLabel;
  observation_count: number;
  combined_confidence: number;
}

/** One memory (`item`, id `mui_…`), one set of memories used together (`set`, `mus_…`), or one application whose attribution is not established (`none`, `mul_…`). */
export interface Subject {
  subject_id: string;
  attribution_level: AttributionLevel;
  memory_ref_digests: string[];
  /** In [-1, 1]: + helpful, - harmful, 0 neutral or unknown. */
  utility_estimate: number;
  utility_bounds: { min: number; max: number };
  effective_utility_label: UtilityLabel;
  effective_evidence_basis: EvidenceBasis;
  confidence: number;
  uncertainty: number;
  support: Record<UtilityLabel, number>;
  evidence_strength: Record<EvidenceBasis, number>;
  evidence_label_summary: EvidenceLabelSummary[];
  observation_count: number;
  last_observed_at: string;
  last_observation_id: string;
  review: Review;
  read_only: true;
  automatic_deletion: false;
  action_authority_granted: false;
}

/** One accepted observation, enough to rebuild it (the validator does): the core's history entry. */
export type { HistoryEntry };

/** An observation id delivered with two or more different payloads: quarantined, none of its deliveries counted. */
export interface ConflictRejection {
  observation_id: string;
  reason_codes: string[];
  delivery_count: number;
  delivery_fingerprints: string[];
  delivery_fingerprints_truncated: boolean;
  quarantine_proposed: true;
  automatic_deletion: false;
  action_authority_granted: false;
}

/** Why a `rejected` packet was rejected (its only rejection entry). */
export interface PacketRejection {
  reason_codes: string[];
}

/** A subject whose review state is not `none`, mirrored for a host to decide on. */
export interface ReviewProposal {
  subject_id: string;
  attribution_level: AttributionLevel;
  memory_ref_digests: string[];
  state: Exclude<ReviewState, "none">;
  proposed_action: Exclude<ReviewAction, "none">;
  reason_codes: string[];
  quarantine_proposed: boolean;
  automatic_deletion: false;
  action_authority_granted: false;
}

/**
 * A packet: the projection of one reducer identity (scope + retrieval and
 * policy snapshots + reducer version). `status` discriminates it, as the
 * readback validator holds every packet to: a `rejected` packet's rejections
 * are PacketRejections (only why), any other packet's are ConflictRejections.
 *
 * ```ts
 * if (projection.status === "rejected") console.log(projection.rejections[0]?.reason_codes);
 * else for (const r of projection.rejections) console.log(r.observation_id, r.delivery_count);
 * ```
 */
export type Projection = AcceptedProjection | RejectedProjection;

/** A packet that reduced its input: `ready`, `empty` or `review_required`. */
export interface AcceptedProjection extends ProjectionFields {
  status: Exclude<ProjectionStatus, "rejected">;
  /** The observation ids quarantined for conflicting deliveries (at most 64); empty when there is none. */
  rejections: ConflictRejection[];
}

/** A packet whose input could not be reduced: it says why, and nothing else. */
export interface RejectedProjection extends ProjectionFields {
  status: "rejected";
  /** Why (the reducer writes one entry). */
  rejections: PacketRejection[];
}

/** The fields every packet has; `status` and `rejections` are in AcceptedProjection and RejectedProjection. */
export interface ProjectionFields {
  ok: boolean;
  schema_version: "memory_utility_projection_v0";
  status: ProjectionStatus;
  projection_ready: boolean;
  reducer_version: string;
  /** `mur_` + sha256 hex: the identity the packet is stored and read under. */
  reducer_identity: string;
  scope: Scope;
  retrieval_snapshot_ref: string;
  policy_snapshot_ref: string;
  accepted_observation_count: number;
  duplicate_observation_count: number;
  conflicting_observation_count: number;
  rejected_observation_count: number;
  lineage_observation_count: number;
  subject_count: number;
  item_subject_count: number;
  set_subject_count: number;
  unresolved_lineage_count: number;
  last_observed_at: string | null;
  last_observation_id: string | null;
  subjects: Subject[];
  observation_history: HistoryEntry[];
  observation_history_truncated: boolean;
  rejections: (ConflictRejection | PacketRejection)[];
  review_proposals: ReviewProposal[];
  read_only: true;
  grants_new_action_authority: false;
  provider_write_performed: false;
  external_writes_performed: false;
  raw_content_captured: false;
}
