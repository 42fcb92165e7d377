/** Reducer identity (`mur_`), subject ids (`mui_`/`mus_`/`mul_`) and the strict reducer context. */
import { quote } from "./canonical-json.js";
import { canonicalDigest, sha256Hex } from "./digest.js";
import type { Scope } from "./fields.js";
import type { AttributionLevel, Observation } from "./observation.js";
import { strictRef, strictScope } from "./strict-fields.js";
import type { PyValue } from "./pyvalue.js";

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

const identities = new Map<string, string>();

/** `mur_` id of a context; memoized, since the fold asks once per record. */
export function reducerIdentity(context: ReducerContext): string {
  const s = context.scope;
  const key = `${s.agent_id}\u0000${s.project_id}\u0000${s.corpus_id}\u0000${s.surface_id}\u0000${context.retrieval_snapshot_ref}\u0000${context.policy_snapshot_ref}\u0000${context.reducer_version}`;
  let id = identities.get(key);
  if (id === undefined) {
    id = computeReducerIdentity(context);
    if (identities.size >= 20_000) identities.clear();
    identities.set(key, id);
  }
  return id;
}

function computeReducerIdentity(context: ReducerContext): string {
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

/** `mui_`/`mus_` over {attribution_level, memory_ref_digests}; `mul_` adds the receipt id (one lineage subject per receipt). */
export function subjectIdOf(obs: Pick<Observation, "attribution_level" | "memory_ref_digests" | "application_receipt_id">): string {
  const level: AttributionLevel = obs.attribution_level;
  const digests = obs.memory_ref_digests.map(quote).join(",");
  if (level === "none") {
    return "mul_" + sha256Hex(`{"application_receipt_id":${quote(obs.application_receipt_id)},"attribution_level":"none","memory_ref_digests":[${digests}]}`);
  }
  return (level === "item" ? "mui_" : "mus_") + sha256Hex(`{"attribution_level":${quote(level)},"memory_ref_digests":[${digests}]}`);
}
