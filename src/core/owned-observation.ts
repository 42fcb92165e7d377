/**
 * What a cached identity model keeps of an observation: a copy that shares no
 * memory with the text it was read from. Readers cut an observation's values
 * out of its record's text (or out of a stored fragment, when a model is
 * loaded from Redis), and in V8 a substring of 13 or more characters is a view
 * into its parent: each kept observation would hold its whole ~1 KB record
 * alive. The fold copies what it keeps (observations and the identity's
 * context), once, and nothing else pays for it (the embedded reducer's
 * observations live for one call).
 */
import { scopesEqual, type Scope } from "./fields.js";
import { remember } from "./bounded-memo.js";
import { detached } from "./flat-string.js";
import type { ReducerContext } from "./identity.js";
import { OBSERVATION_SCHEMA_VERSION, type AttributionLevel, type EvidenceBasis, type Observation, type UtilityLabel } from "./observation-model.js";

// The enums' own constants (a value cut from text is a view too).
const LABEL: Readonly<Record<UtilityLabel, UtilityLabel>> = { helpful: "helpful", harmful: "harmful", neutral: "neutral", unknown: "unknown" };
const LEVEL: Readonly<Record<AttributionLevel, AttributionLevel>> = { item: "item", set: "set", none: "none" };
const BASIS: Readonly<Record<EvidenceBasis, EvidenceBasis>> = {
  owner_correction: "owner_correction",
  controlled_replay: "controlled_replay",
  deterministic_effect: "deterministic_effect",
  evaluator_inference: "evaluator_inference",
  insufficient: "insufficient",
};

/**
 * Values that repeat across observations (memory ref digests, within a subject and across an identity's subjects;
 * reason codes; the evaluator's ref and version) are kept once per process, not once per observation: a bounded
 * pool, emptied when full (sharing is then lost for new copies, never correctness: a pooled value equals the
 * original). Lists of none or one value are shared too, frozen: nothing mutates an observation's lists (builders
 * copy them before changing them). Evidence refs, like the outcome ref, name one outcome's artifacts and rarely
 * repeat: pooled, nearly every one missed and, at ~88k in the pipeline bench's 100k records, they emptied both
 * pools over and over, losing the values that do repeat. They are copied plainly (plan 1.5-2 µs a record faster,
 * bench/engine.bench.ts side by side).
 */
const POOL_STRINGS = 8192;
const POOL_LISTS = 2048;
const pool = new Map<string, string>();
const singletons = new Map<string, readonly string[]>();
const NONE: readonly string[] = Object.freeze([]);

function pooled(s: string): string {
  const hit = pool.get(s);
  if (hit !== undefined) return hit;
  const own = detached(s);
  return remember(pool, POOL_STRINGS, own, own);
}

export function pooledList(list: readonly string[]): string[] {
  // Typed as mutable for the Observation interface; frozen, so a mutation would throw rather than spread.
  if (list.length === 0) return NONE as string[];
  if (list.length > 1) return list.map(pooled);
  const only = pooled(list[0]!);
  return (singletons.get(only) ?? remember(singletons, POOL_LISTS, only, Object.freeze([only]))) as string[];
}

/** A list of values that rarely repeat across observations (evidence refs), copied without the pools. */
function ownList(list: readonly string[]): string[] {
  return list.length === 0 ? (NONE as string[]) : list.map(detached);
}

function ownedScope(s: Scope): Scope {
  return { agent_id: detached(s.agent_id), project_id: detached(s.project_id), corpus_id: detached(s.corpus_id), surface_id: detached(s.surface_id) };
}

/** The observation's scope and snapshot refs are its identity context's (they are for every observation of an identity). */
export function ofContext(o: Observation, context: ReducerContext): boolean {
  return scopesEqual(o.scope, context.scope) && o.retrieval_snapshot_ref === context.retrieval_snapshot_ref && o.policy_snapshot_ref === context.policy_snapshot_ref;
}

/**
 * The same observation (equal in every field, the normalized property order
 * kept), owning its strings; lists copied to their exact length. `context`,
 * its model's owned context, lends its scope and snapshot refs when they are
 * the observation's (they are for every observation of its identity), so
 * those are not copied per observation.
 */
export function ownedObservation(o: Observation, context: ReducerContext): Observation {
  const shared = ofContext(o, context);
  return {
    schema_version: OBSERVATION_SCHEMA_VERSION,
    observation_id: detached(o.observation_id),
    scope: shared ? context.scope : ownedScope(o.scope),
    application_receipt_id: detached(o.application_receipt_id),
    memory_ref_digests: pooledList(o.memory_ref_digests),
    retrieval_snapshot_ref: shared ? context.retrieval_snapshot_ref : detached(o.retrieval_snapshot_ref),
    policy_snapshot_ref: shared ? context.policy_snapshot_ref : detached(o.policy_snapshot_ref),
    outcome_ref: detached(o.outcome_ref),
    utility_label: LABEL[o.utility_label],
    attribution_level: LEVEL[o.attribution_level],
    evidence_basis: BASIS[o.evidence_basis],
    confidence: o.confidence,
    reason_codes: pooledList(o.reason_codes),
    evidence_refs: ownList(o.evidence_refs),
    evaluator_ref: pooled(o.evaluator_ref),
    evaluation_version: pooled(o.evaluation_version),
    created_at: detached(o.created_at),
    grants_new_action_authority: false,
    provider_write_performed: false,
    external_writes_performed: false,
    raw_content_captured: false,
  };
}

/** The same reducer context, owning its strings (a model keeps its context; readers cut it from the first record). */
export function ownedContext(c: ReducerContext): ReducerContext {
  return {
    scope: ownedScope(c.scope),
    retrieval_snapshot_ref: detached(c.retrieval_snapshot_ref),
    policy_snapshot_ref: detached(c.policy_snapshot_ref),
    reducer_version: detached(c.reducer_version),
  };
}
