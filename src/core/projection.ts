/** Packet shapes: the base projection, history entries, the history bound and rejected packets. */
import { DEFAULT_REDUCER_VERSION, PROJECTION_SCHEMA_VERSION, reducerIdentity, type ReducerContext } from "./identity.js";
import { observationFingerprint, type AttributionLevel, type EvidenceBasis, type Observation, type UtilityLabel } from "./observation.js";
import { compareOrder } from "./ordering.js";
import { PyFloat, type PyObject } from "./pyvalue.js";

import { MAX_PROJECTION_HISTORY } from "./projection-limits.js";

export * from "./projection-limits.js";

export const REJECTED_CONTEXT: ReducerContext = {
  scope: { agent_id: "rejected", project_id: "rejected", corpus_id: "rejected", surface_id: "rejected" },
  retrieval_snapshot_ref: "rejected",
  policy_snapshot_ref: "rejected",
  reducer_version: DEFAULT_REDUCER_VERSION,
};

export interface ProjectionParts {
  ok: boolean;
  status: string;
  projection_ready: boolean;
  reducer_identity: string;
  accepted_observation_count?: number;
  duplicate_observation_count?: number;
  conflicting_observation_count?: number;
  rejected_observation_count?: number;
  lineage_observation_count?: number;
  subjects?: PyObject[];
  history?: PyObject[];
  history_truncated?: boolean;
  rejections?: PyObject[];
  review_proposals?: PyObject[];
  last_observed_at?: string | null;
  last_observation_id?: string | null;
}

export function baseProjection(context: ReducerContext, p: ProjectionParts): PyObject {
  const subjects = p.subjects ?? [];
  let items = 0;
  let sets = 0;
  let nones = 0;
  for (const s of subjects) {
    if (s.attribution_level === "item") items++;
    else if (s.attribution_level === "set") sets++;
    else if (s.attribution_level === "none") nones++;
  }
  return {
    ok: p.ok,
    schema_version: PROJECTION_SCHEMA_VERSION,
    status: p.status,
    projection_ready: p.projection_ready,
    reducer_version: context.reducer_version,
    reducer_identity: p.reducer_identity,
    scope: { ...context.scope },
    retrieval_snapshot_ref: context.retrieval_snapshot_ref,
    policy_snapshot_ref: context.policy_snapshot_ref,
    accepted_observation_count: p.accepted_observation_count ?? 0,
    duplicate_observation_count: p.duplicate_observation_count ?? 0,
    conflicting_observation_count: p.conflicting_observation_count ?? 0,
    rejected_observation_count: p.rejected_observation_count ?? 0,
    lineage_observation_count: p.lineage_observation_count ?? 0,
    subject_count: subjects.length,
    item_subject_count: items,
    set_subject_count: sets,
    unresolved_lineage_count: nones,
    last_observed_at: p.last_observed_at ?? null,
    last_observation_id: p.last_observation_id ?? null,
    subjects,
    observation_history: p.history ?? [],
    observation_history_truncated: p.history_truncated ?? false,
    rejections: p.rejections ?? [],
    review_proposals: p.review_proposals ?? [],
    read_only: true,
    grants_new_action_authority: false,
    provider_write_performed: false,
    external_writes_performed: false,
    raw_content_captured: false,
  };
}

/** The unvalidated rejected packet; callers pass it through the readback validator. */
export function rejectedProjectionUnchecked(context: ReducerContext | null, reasonCodes: readonly string[], rejectedCount = 1): PyObject {
  const ctx = context ?? REJECTED_CONTEXT;
  return baseProjection(ctx, {
    ok: false,
    status: "rejected",
    projection_ready: false,
    reducer_identity: reducerIdentity(ctx),
    rejected_observation_count: rejectedCount,
    rejections: [{ reason_codes: [...new Set(reasonCodes)].sort() }],
  });
}

/** A history entry carries everything needed to rebuild its observation. */
export interface HistoryEntry {
  observation_id: string;
  observation_fingerprint: string;
  subject_id: string;
  application_receipt_id: string;
  outcome_ref: string;
  memory_ref_digests: string[];
  attribution_level: AttributionLevel;
  utility_label: UtilityLabel;
  evidence_basis: EvidenceBasis;
  confidence: number;
  reason_codes: string[];
  evidence_refs: string[];
  evaluator_ref: string;
  evaluation_version: string;
  created_at: string;
}

export function historyEntry(obs: Observation, subjectId: string, fingerprint = observationFingerprint(obs)): HistoryEntry {
  return {
    observation_id: obs.observation_id,
    observation_fingerprint: fingerprint,
    subject_id: subjectId,
    application_receipt_id: obs.application_receipt_id,
    outcome_ref: obs.outcome_ref,
    memory_ref_digests: [...obs.memory_ref_digests],
    attribution_level: obs.attribution_level,
    utility_label: obs.utility_label,
    evidence_basis: obs.evidence_basis,
    confidence: obs.confidence,
    reason_codes: [...obs.reason_codes],
    evidence_refs: [...obs.evidence_refs],
    evaluator_ref: obs.evaluator_ref,
    evaluation_version: obs.evaluation_version,
    created_at: obs.created_at,
  };
}

export function historyEntryToPy(entry: HistoryEntry): PyObject {
  return { ...(entry as unknown as PyObject), confidence: new PyFloat(entry.confidence) };
}

/** `_bound_history`: chronological; past MAX_PROJECTION_HISTORY (256), keep every subject's latest, then the newest others. */
export function boundHistory<T extends HistoryEntry>(history: readonly T[]): [T[], boolean] {
  const ordered = [...history].sort(compareOrder);
  if (ordered.length <= MAX_PROJECTION_HISTORY) return [ordered, false];
  const latestBySubject = new Map<string, T>();
  for (const entry of ordered) latestBySubject.set(entry.subject_id, entry);
  const retained = [...latestBySubject.values()];
  const retainedIds = new Set(retained.map((e) => e.observation_id));
  for (let i = ordered.length - 1; i >= 0 && retained.length < MAX_PROJECTION_HISTORY; i--) {
    const entry = ordered[i]!;
    if (retainedIds.has(entry.observation_id)) continue;
    retained.push(entry);
    retainedIds.add(entry.observation_id);
  }
  return [retained.sort(compareOrder), true];
}
