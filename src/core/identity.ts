/** Reducer identity (`mur_`), subject ids (`mui_`/`mus_`/`mul_`) and the strict reducer context. */
import { canonicalDigest } from "./digest.js";
import type { Scope } from "./fields.js";
import type { AttributionLevel, Observation } from "./observation.js";
import { strictRef, strictScope } from "./strict-fields.js";
import type { PyObject, PyValue } from "./pyvalue.js";

export const PROJECTION_SCHEMA_VERSION = "memory_utility_projection_v0";
export const DEFAULT_REDUCER_VERSION = "memory_utility_reducer_v0";

export interface ReducerContext {
  scope: Scope;
  retrieval_snapshot_ref: string;
  policy_snapshot_ref: string;
  reducer_version: string;
}

/** `_normalized_context`: strict refs, no coercion (throws ContractError). */
export function normalizeContext(input: {
  scope: PyValue | undefined;
  retrieval_snapshot_ref: PyValue | undefined;
  policy_snapshot_ref: PyValue | undefined;
  reducer_version: PyValue | undefined;
}): ReducerContext {
  return {
    scope: strictScope(input.scope),
    retrieval_snapshot_ref: strictRef(input.retrieval_snapshot_ref, "retrieval_snapshot_ref"),
    policy_snapshot_ref: strictRef(input.policy_snapshot_ref, "policy_snapshot_ref"),
    reducer_version: strictRef(input.reducer_version, "reducer_version"),
  };
}

export function reducerIdentity(context: ReducerContext): string {
  return canonicalDigest(
    {
      schema_version: PROJECTION_SCHEMA_VERSION,
      scope: { ...context.scope },
      retrieval_snapshot_ref: context.retrieval_snapshot_ref,
      policy_snapshot_ref: context.policy_snapshot_ref,
      reducer_version: context.reducer_version,
    },
    "mur_",
  );
}

/** The identity an observation routes to under a reducer version. */
export function contextOfObservation(obs: Observation, reducerVersion: string): ReducerContext {
  return {
    scope: obs.scope,
    retrieval_snapshot_ref: obs.retrieval_snapshot_ref,
    policy_snapshot_ref: obs.policy_snapshot_ref,
    reducer_version: reducerVersion,
  };
}

export function subjectIdOf(obs: Pick<Observation, "attribution_level" | "memory_ref_digests" | "application_receipt_id">): string {
  const level: AttributionLevel = obs.attribution_level;
  if (level === "none") {
    const identity: PyObject = {
      attribution_level: level,
      application_receipt_id: obs.application_receipt_id,
      memory_ref_digests: [...obs.memory_ref_digests],
    };
    return canonicalDigest(identity, "mul_");
  }
  return canonicalDigest({ attribution_level: level, memory_ref_digests: [...obs.memory_ref_digests] }, level === "item" ? "mui_" : "mus_");
}
