/** Reducer identity (`mur_`), subject ids (`mui_`/`mus_`/`mul_`) and the strict reducer context. */
import { needsEscape, quote } from "./canonical-json.js";
import { AsciiDigest } from "./digest.js";
import { scopeJson } from "./observation-json.js";
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

/**
 * Memo of identities, one Map level per context field (agent, project, corpus, surface, retrieval ref, policy
 * ref, reducer version): a lookup hashes the strings the record already holds, where a joined key would be a
 * new string every record.
 */
type Memo = Map<string, Memo | string>;
let identities: Memo = new Map();
let memoized = 0;

function below(level: Memo, part: string): Memo {
  let next = level.get(part) as Memo | undefined;
  if (next === undefined) level.set(part, (next = new Map()));
  return next;
}

/** What every reducer identity looks like: `mur_` and 64 lowercase hex digits. */
export const IDENTITY_PATTERN = /^mur_[0-9a-f]{64}$/;

/** `mur_` id of a context; memoized, since the fold asks once per record. */
export function reducerIdentity(context: ReducerContext): string {
  const s = context.scope;
  const level = below(below(below(below(below(below(identities, s.agent_id), s.project_id), s.corpus_id), s.surface_id), context.retrieval_snapshot_ref), context.policy_snapshot_ref);
  let id = level.get(context.reducer_version) as string | undefined;
  if (id === undefined) {
    id = computeReducerIdentity(context);
    if (++memoized > 20_000) {
      identities = new Map();
      memoized = 0;
      return id;
    }
    level.set(context.reducer_version, id);
  }
  return id;
}

/**
 * canonicalDigest({schema_version, scope, retrieval_snapshot_ref, policy_snapshot_ref, reducer_version}, "mur_"),
 * its keys written in canonical order into the hash's buffer: the generic writer made ~2 KB of garbage a new
 * identity (test/unit/identity-json.unit.spec.ts holds the two equal).
 */
function computeReducerIdentity(context: ReducerContext): string {
  const h = identityDigest.start().put('{"policy_snapshot_ref":');
  putQuoted(h, context.policy_snapshot_ref).put(',"reducer_version":');
  putQuoted(h, context.reducer_version).put(',"retrieval_snapshot_ref":');
  putQuoted(h, context.retrieval_snapshot_ref).put(',"schema_version":');
  putQuoted(h, PROJECTION_SCHEMA_VERSION).put(',"scope":');
  putScope(h, context.scope);
  return h.put("}").prefixedHex("mur_");
}

const identityDigest = new AsciiDigest();

function putScope(h: AsciiDigest, s: Scope): AsciiDigest {
  putQuoted(h.put('{"agent_id":'), s.agent_id).put(',"corpus_id":');
  putQuoted(h, s.corpus_id).put(',"project_id":');
  putQuoted(h, s.project_id).put(',"surface_id":');
  return putQuoted(h, s.surface_id).put("}");
}

/** canonicalJson of a context (its four fields and its scope's four), written by its keys in canonical order. */
export function contextJson(c: ReducerContext): string {
  return (
    `{"policy_snapshot_ref":${quote(c.policy_snapshot_ref)},"reducer_version":${quote(c.reducer_version)}` +
    `,"retrieval_snapshot_ref":${quote(c.retrieval_snapshot_ref)},"scope":${scopeJson(c.scope)}}`
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

const subjectDigest = new AsciiDigest();

/** `s` as canonical JSON writes it, into `h`: quoted as it is, or escaped when JSON escapes it. */
function putQuoted(h: AsciiDigest, s: string): AsciiDigest {
  return needsEscape(s) ? h.putText(quote(s)) : h.char(0x22).putText(s).char(0x22);
}

/**
 * `mui_`/`mus_` over {attribution_level, memory_ref_digests}; `mul_` adds the receipt id (one lineage subject per
 * receipt). The canonical JSON is written into a reused buffer, not built as a string (a fold hashes one per new
 * subject: ~0.3 KB of young garbage a record).
 */
export function subjectIdOf(obs: Pick<Observation, "attribution_level" | "memory_ref_digests" | "application_receipt_id">): string {
  const level: AttributionLevel = obs.attribution_level;
  const h = subjectDigest.start();
  if (level === "none") putQuoted(h.put('{"application_receipt_id":'), obs.application_receipt_id).put(',"attribution_level":"none","memory_ref_digests":[');
  else putQuoted(h.put('{"attribution_level":'), level).put(',"memory_ref_digests":[');
  const digests = obs.memory_ref_digests;
  for (let i = 0; i < digests.length; i++) putQuoted(i > 0 ? h.char(0x2c) : h, digests[i]!);
  return h.put("]}").prefixedHex(level === "none" ? "mul_" : level === "item" ? "mui_" : "mus_");
}
