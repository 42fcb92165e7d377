/**
 * `reduce_reward_memory_utility_observations`: validate a batch, fold it into
 * identity state, and project the state into a packet that the readback
 * validator accepts. Invalid input yields the reference's rejected packet.
 */
import { ContractError, ObservationValidationError } from "./errors.js";
import { scopesEqual } from "./fields.js";
import {
  DEFAULT_REDUCER_VERSION,
  normalizeContext,
  reducerIdentity,
  subjectIdOf,
  type ReducerContext,
} from "./identity.js";
import { emptyIdentityState, foldDelivery, type IdentityState } from "./identity-state.js";
import { validateObservation, type AttributionLevel, type Observation } from "./observation.js";
import { latestOf } from "./ordering.js";
import {
  MAX_CONFLICT_FINGERPRINTS,
  MAX_PROJECTION_OBSERVATIONS,
  MAX_PROJECTION_REJECTIONS,
  MAX_PROJECTION_SUBJECTS,
  baseProjection,
  boundHistory,
  historyEntry,
  historyEntryToPy,
  rejectedProjectionUnchecked,
  type HistoryEntry,
} from "./projection.js";
import { validateProjection } from "./projection-validator.js";
import { isPyObject, pyEquals, type PyObject, type PyValue } from "./pyvalue.js";
import { reduceSubject } from "./subject.js";

export interface ReduceInput {
  observations: PyValue | undefined;
  scope: PyValue | undefined;
  retrieval_snapshot_ref: PyValue | undefined;
  policy_snapshot_ref: PyValue | undefined;
  reducer_version?: PyValue | undefined;
  previous_projection?: PyValue | null | undefined;
}

class ContextMismatch extends ContractError {
  constructor(readonly reasonCodes: string[]) {
    super([...reasonCodes].sort().join(","));
  }
}

export function rejectedProjection(context: ReducerContext | null, reasonCodes: readonly string[], rejectedCount = 1): PyObject {
  // Rejected packets are public packets too: they pass the readback validator.
  return validateProjection(rejectedProjectionUnchecked(context, reasonCodes, rejectedCount));
}

function validateBatch(observations: PyValue | undefined, context: ReducerContext): IdentityState {
  if (!Array.isArray(observations)) throw new ContractError("observations must be a list");
  if (observations.length > MAX_PROJECTION_OBSERVATIONS) {
    throw new ContractError("observations exceed the bounded reducer input limit");
  }
  const state = emptyIdentityState();
  observations.forEach((raw, index) => {
    if (!isPyObject(raw)) throw new ContractError(`observation[${index}] must be an object`);
    let item: Observation;
    try {
      item = validateObservation(raw);
    } catch (err) {
      if (err instanceof ObservationValidationError) {
        throw new ObservationValidationError(err.reasonCode, `observation[${index}] ${err.message}`);
      }
      throw err;
    }
    const mismatches = contextMismatches(item, context);
    if (mismatches.length > 0) throw new ContextMismatch(mismatches);
    foldDelivery(state, item);
  });
  return state;
}

export function contextMismatches(item: Observation, context: ReducerContext): string[] {
  const mismatches: string[] = [];
  if (!scopesEqual(item.scope, context.scope)) mismatches.push("scope_mismatch");
  if (item.retrieval_snapshot_ref !== context.retrieval_snapshot_ref) mismatches.push("retrieval_snapshot_mismatch");
  if (item.policy_snapshot_ref !== context.policy_snapshot_ref) mismatches.push("policy_snapshot_mismatch");
  return mismatches;
}

/** The reducer over already-validated deliveries: the same function the fold applies. */
export function projectIdentityState(context: ReducerContext, state: IdentityState): PyObject {
  if (state.deliveries > MAX_PROJECTION_OBSERVATIONS) return rejectedProjection(context, ["observation_malformed"]);
  const ids = [...state.byId.keys()].sort();
  const unique: Observation[] = [];
  const fingerprints = new Map<Observation, string>();
  const conflicts: PyObject[] = [];
  let duplicateCount = 0;
  let conflictingDeliveries = 0;
  for (const id of ids) {
    const versions = state.byId.get(id)!;
    let deliveries = 0;
    for (const v of versions.values()) {
      duplicateCount += v.count - 1;
      deliveries += v.count;
    }
    if (versions.size > 1) {
      conflictingDeliveries += deliveries;
      const prints = [...versions.keys()].sort();
      conflicts.push({
        observation_id: id,
        reason_codes: ["conflicting_observation_delivery"],
        delivery_count: deliveries,
        delivery_fingerprints: prints.slice(0, MAX_CONFLICT_FINGERPRINTS),
        delivery_fingerprints_truncated: prints.length > MAX_CONFLICT_FINGERPRINTS,
        quarantine_proposed: true,
        automatic_deletion: false,
        action_authority_granted: false,
      });
      continue;
    }
    const [fingerprint, only] = versions.entries().next().value!;
    unique.push(only.representative);
    fingerprints.set(only.representative, fingerprint);
  }

  // Group by subject: (level, digests) for item/set, (level, subject id) for none.
  const groups = new Map<string, { level: AttributionLevel; key: string[]; subjectId: string; items: Observation[] }>();
  for (const obs of unique) {
    const subjectId = subjectIdOf(obs);
    const key = obs.attribution_level === "none" ? [subjectId] : obs.memory_ref_digests;
    const mapKey = obs.attribution_level + "\u0000" + key.join("\u0000");
    let group = groups.get(mapKey);
    if (group === undefined) {
      group = { level: obs.attribution_level, key, subjectId, items: [] };
      groups.set(mapKey, group);
    }
    group.items.push(obs);
  }
  if (groups.size > MAX_PROJECTION_SUBJECTS) {
    return rejectedProjection(context, ["projection_subject_limit_exceeded"], unique.length);
  }
  const ordered = [...groups.values()].sort((a, b) => compareGroupKeys(a.level, a.key, b.level, b.key));

  const subjects: PyObject[] = [];
  const history: HistoryEntry[] = [];
  const proposals: PyObject[] = [];
  for (const group of ordered) {
    const items = group.items; // already in observation_id order
    const digests = group.level === "none" ? items[0]!.memory_ref_digests : group.key;
    const subject = reduceSubject(group.subjectId, group.level, digests, items);
    subjects.push(subject);
    for (const obs of items) history.push(historyEntry(obs, group.subjectId, fingerprints.get(obs)));
    const rv = subject.review as PyObject;
    if (rv.state !== "none") {
      proposals.push({
        subject_id: group.subjectId,
        attribution_level: group.level,
        memory_ref_digests: [...digests],
        state: rv.state!,
        proposed_action: rv.proposed_action!,
        reason_codes: [...(rv.reason_codes as string[])],
        quarantine_proposed: rv.quarantine_proposed!,
        automatic_deletion: false,
        action_authority_granted: false,
      });
    }
  }
  const [boundedHistory, truncated] = boundHistory(history);
  const rejections = conflicts.slice(0, MAX_PROJECTION_REJECTIONS);
  const accepted = unique.length;
  const subjectConflict = proposals.some((p) => p.state === "conflict");
  const [latestAt, latestId] = latestOf(unique);
  const status = conflicts.length > 0 || subjectConflict ? "review_required" : accepted > 0 ? "ready" : "empty";
  const packet = baseProjection(context, {
    ok: true,
    status,
    projection_ready: accepted > 0 && conflicts.length === 0 && !subjectConflict,
    reducer_identity: reducerIdentity(context),
    accepted_observation_count: accepted,
    duplicate_observation_count: duplicateCount,
    conflicting_observation_count: conflicts.length,
    rejected_observation_count: conflictingDeliveries,
    lineage_observation_count: accepted,
    subjects,
    history: boundedHistory.map(historyEntryToPy),
    history_truncated: truncated,
    rejections,
    review_proposals: proposals,
    last_observed_at: latestAt,
    last_observation_id: latestId,
  });
  return validateProjection(packet);
}

/** Python tuple order of (level, digests-or-(subject_id,)). */
function compareGroupKeys(la: string, ka: readonly string[], lb: string, kb: readonly string[]): number {
  if (la !== lb) return la < lb ? -1 : 1;
  const n = Math.min(ka.length, kb.length);
  for (let i = 0; i < n; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1;
  return ka.length - kb.length;
}

/**
 * The reducer entry point. Returns the packet; throws ContractError only where
 * the reference itself raises (its final readback validation of the packet).
 */
export function reduceObservations(input: ReduceInput): PyObject {
  let context: ReducerContext | null = null;
  let state: IdentityState;
  try {
    context = normalizeContext({
      scope: input.scope,
      retrieval_snapshot_ref: input.retrieval_snapshot_ref,
      policy_snapshot_ref: input.policy_snapshot_ref,
      reducer_version: input.reducer_version === undefined ? DEFAULT_REDUCER_VERSION : input.reducer_version,
    });
    const identity = reducerIdentity(context);
    if (input.previous_projection !== undefined && input.previous_projection !== null) {
      const prior = validateProjection(input.previous_projection);
      const c = context;
      const sameContext =
        pyEquals(prior.scope, { ...c.scope }) &&
        pyEquals(prior.retrieval_snapshot_ref, c.retrieval_snapshot_ref) &&
        pyEquals(prior.policy_snapshot_ref, c.policy_snapshot_ref) &&
        pyEquals(prior.reducer_version, c.reducer_version);
      if (!sameContext || prior.reducer_identity !== identity) {
        return rejectedProjection(context, ["reducer_identity_mismatch"]);
      }
    }
    state = validateBatch(input.observations, context);
  } catch (err) {
    if (err instanceof ObservationValidationError) return rejectedProjection(context, [err.reasonCode]);
    if (err instanceof ContextMismatch) return rejectedProjection(context, err.reasonCodes);
    if (err instanceof ContractError) return rejectedProjection(context, ["observation_malformed"]);
    throw err;
  }
  return projectIdentityState(context, state);
}
