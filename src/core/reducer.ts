/**
 * `reduce_reward_memory_utility_observations`: validate a batch, fold it into
 * identity state, and project the state into a packet that the readback
 * validator accepts. Invalid input yields the reference's rejected packet.
 */
import { ContractError, ObservationValidationError } from "./errors.js";
import { scopesEqual } from "./fields.js";
import { analyzeIdentityState, subjectOfGroup, type IdentityAnalysis } from "./identity-analysis.js";
import { DEFAULT_REDUCER_VERSION, normalizeContext, reducerIdentity, type ReducerContext } from "./identity.js";
import { emptyIdentityState, foldDelivery, type IdentityState } from "./identity-state.js";
import { normalizedFingerprint, validateObservation, type Observation } from "./observation.js";
import { ReadObservation } from "./observation-reader.js";
import { latestOf } from "./ordering.js";
import {
  MAX_PROJECTION_OBSERVATIONS,
  MAX_PROJECTION_REJECTIONS,
  baseProjection,
  boundHistory,
  historyEntry,
  historyEntryToPy,
  rejectedProjectionUnchecked,
  type HistoryEntry,
} from "./projection.js";
import { validateProjection } from "./projection-validator.js";
import { isPyObject, pyEquals, type PyObject, type PyValue } from "./pyvalue.js";

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

export function contextMismatches(item: Observation, context: ReducerContext): string[] {
  const mismatches: string[] = [];
  if (!scopesEqual(item.scope, context.scope)) mismatches.push("scope_mismatch");
  if (item.retrieval_snapshot_ref !== context.retrieval_snapshot_ref) mismatches.push("retrieval_snapshot_mismatch");
  if (item.policy_snapshot_ref !== context.policy_snapshot_ref) mismatches.push("policy_snapshot_mismatch");
  return mismatches;
}

function validateBatch(observations: PyValue | undefined, context: ReducerContext): IdentityState {
  if (!Array.isArray(observations)) throw new ContractError("observations must be a list");
  if (observations.length > MAX_PROJECTION_OBSERVATIONS) {
    throw new ContractError("observations exceed the bounded reducer input limit");
  }
  const state = emptyIdentityState();
  observations.forEach((raw, index) => {
    // Observations the request parser already read and validated (observation-reader.ts).
    const read = raw instanceof ReadObservation ? raw : null;
    const item = read !== null ? read.observation : validateBatchItem(raw, index);
    if (!sameContext(item, context)) throw new ContextMismatch(contextMismatches(item, context));
    foldDelivery(state, item, read !== null ? read.fingerprint : normalizedFingerprint(item));
  });
  return state;
}

function validateBatchItem(raw: PyValue | undefined, index: number): Observation {
  if (!isPyObject(raw)) throw new ContractError(`observation[${index}] must be an object`);
  try {
    return validateObservation(raw);
  } catch (err) {
    if (err instanceof ObservationValidationError) {
      throw new ObservationValidationError(err.reasonCode, `observation[${index}] ${err.message}`);
    }
    throw err;
  }
}

function sameContext(item: Observation, context: ReducerContext): boolean {
  return (
    scopesEqual(item.scope, context.scope) &&
    item.retrieval_snapshot_ref === context.retrieval_snapshot_ref &&
    item.policy_snapshot_ref === context.policy_snapshot_ref
  );
}

/** The counters a packet's summary is made of (from an analysis, or kept incrementally by the fold). */
export interface SummaryCounts {
  accepted: number;
  /** created_at and id of the latest accepted observation in order, or nulls. */
  latest: [string | null, string | null];
  duplicates: number;
  conflicts: number;
  conflictingDeliveries: number;
  /** Some review proposal's state is conflict. */
  conflictProposal: boolean;
}

/** Status, readiness and counters of an accepted packet. */
export function summaryOf(context: ReducerContext, c: SummaryCounts) {
  const counters = summaryCountersOf(c);
  return { ok: true, reducer_identity: reducerIdentity(context), ...counters };
}

/** The summary's fields that depend on the counts only (summaryOf without `ok` and the reducer identity). */
export function summaryCountersOf(c: SummaryCounts) {
  const conflicted = c.conflicts > 0 || c.conflictProposal;
  const [latestAt, latestId] = c.latest;
  return {
    status: conflicted ? "review_required" : c.accepted > 0 ? "ready" : "empty",
    projection_ready: c.accepted > 0 && !conflicted,
    accepted_observation_count: c.accepted,
    duplicate_observation_count: c.duplicates,
    conflicting_observation_count: c.conflicts,
    rejected_observation_count: c.conflictingDeliveries,
    lineage_observation_count: c.accepted,
    last_observed_at: latestAt,
    last_observation_id: latestId,
  };
}

/** The summary's counters of an analysis and its review proposals (`latest`: `_latest` of its accepted observations, when the caller has it). */
export function countsOf(a: IdentityAnalysis, proposals: readonly PyObject[], latest: [string | null, string | null] = latestOf(a.unique)): SummaryCounts {
  return {
    accepted: a.unique.length,
    latest,
    duplicates: a.duplicateCount,
    conflicts: a.conflicts.length,
    conflictingDeliveries: a.conflictingDeliveries,
    conflictProposal: proposals.some((p) => p.state === "conflict"),
  };
}

/** Status, readiness and counters of an accepted packet, from an analysis. */
export function packetSummary(context: ReducerContext, a: IdentityAnalysis, proposals: readonly PyObject[]) {
  return summaryOf(context, countsOf(a, proposals));
}

/** The rejected packet an identity state projects to, or null when it is within bounds. */
export function boundsRejection(context: ReducerContext, a: IdentityAnalysis): PyObject | null {
  if (a.overDeliveryLimit) return rejectedProjection(context, ["observation_malformed"]);
  if (a.overSubjectLimit) return rejectedProjection(context, ["projection_subject_limit_exceeded"], a.unique.length);
  return null;
}

/** The reducer over already-validated deliveries: the same function the fold applies. */
export function projectIdentityState(context: ReducerContext, state: IdentityState): PyObject {
  const a = analyzeIdentityState(state);
  const rejected = boundsRejection(context, a);
  if (rejected !== null) return rejected;
  const subjects: PyObject[] = [];
  const history: HistoryEntry[] = [];
  const proposals: PyObject[] = [];
  for (const group of a.groups) {
    const { subject, proposal } = subjectOfGroup(group);
    subjects.push(subject);
    if (proposal !== null) proposals.push(proposal);
  }
  for (let i = 0; i < a.unique.length; i++) history.push(historyEntry(a.unique[i]!, a.groupOf[i]!.subjectId, a.fingerprints[i]));
  const [boundedHistory, truncated] = boundHistory(history);
  return validateProjection(
    baseProjection(context, {
      ...packetSummary(context, a, proposals),
      subjects,
      history: boundedHistory.map(historyEntryToPy),
      history_truncated: truncated,
      rejections: a.conflicts.slice(0, MAX_PROJECTION_REJECTIONS),
      review_proposals: proposals,
    }),
  );
}

/** Either a finished packet (rejected input) or validated state to project. */
export type PreparedReduction = { kind: "packet"; packet: PyObject } | { kind: "state"; context: ReducerContext; state: IdentityState };

/** Validate the request and its observations, as the reference does before reducing. */
export function prepareReduction(input: ReduceInput): PreparedReduction {
  let context: ReducerContext | null = null;
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
        return { kind: "packet", packet: rejectedProjection(context, ["reducer_identity_mismatch"]) };
      }
    }
    return { kind: "state", context, state: validateBatch(input.observations, context) };
  } catch (err) {
    if (err instanceof ObservationValidationError) return { kind: "packet", packet: rejectedProjection(context, [err.reasonCode]) };
    if (err instanceof ContextMismatch) return { kind: "packet", packet: rejectedProjection(context, err.reasonCodes) };
    if (err instanceof ContractError) return { kind: "packet", packet: rejectedProjection(context, ["observation_malformed"]) };
    throw err;
  }
}

/**
 * The reducer entry point. Returns the packet; throws ContractError only where
 * the reference itself raises (its final readback validation of the packet).
 */
export function reduceObservations(input: ReduceInput): PyObject {
  const prepared = prepareReduction(input);
  return prepared.kind === "packet" ? prepared.packet : projectIdentityState(prepared.context, prepared.state);
}
