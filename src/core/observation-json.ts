/**
 * Canonical JSON of the contract's fixed shapes, written directly in sorted
 * key order. Byte-identical to canonicalJson over the same values (a unit
 * test holds them together) but without building, sorting and walking a
 * generic object per observation: this is the reducer's hot path.
 */
import { floatJson, quote } from "./canonical-json.js";
import { CompactText, compactKey as k, compactString } from "./compact-json.js";
import type { Observation } from "./observation-model.js";

function list(xs: readonly string[]): string {
  let out = "[";
  for (let i = 0; i < xs.length; i++) out += (i ? "," : "") + quote(xs[i]!);
  return out + "]";
}

function scopeJson(o: Observation): string {
  const s = o.scope;
  return `{"agent_id":${quote(s.agent_id)},"corpus_id":${quote(s.corpus_id)},"project_id":${quote(s.project_id)},"surface_id":${quote(s.surface_id)}}`;
}

/** canonicalJson(observationToPy(o)), optionally without created_at (the fingerprint's input). */
export function observationJson(o: Observation, withCreatedAt = true): string {
  return (
    `{"application_receipt_id":${quote(o.application_receipt_id)}` +
    `,"attribution_level":${quote(o.attribution_level)}` +
    `,"confidence":${floatJson(o.confidence)}` +
    (withCreatedAt ? `,"created_at":${quote(o.created_at)}` : "") +
    `,"evaluation_version":${quote(o.evaluation_version)}` +
    `,"evaluator_ref":${quote(o.evaluator_ref)}` +
    `,"evidence_basis":${quote(o.evidence_basis)}` +
    `,"evidence_refs":${list(o.evidence_refs)}` +
    `,"external_writes_performed":false,"grants_new_action_authority":false` +
    `,"memory_ref_digests":${list(o.memory_ref_digests)}` +
    `,"observation_id":${quote(o.observation_id)}` +
    `,"outcome_ref":${quote(o.outcome_ref)}` +
    `,"policy_snapshot_ref":${quote(o.policy_snapshot_ref)}` +
    `,"provider_write_performed":false,"raw_content_captured":false` +
    `,"reason_codes":${list(o.reason_codes)}` +
    `,"retrieval_snapshot_ref":${quote(o.retrieval_snapshot_ref)}` +
    `,"schema_version":${quote(o.schema_version)}` +
    `,"scope":${scopeJson(o)}` +
    `,"utility_label":${quote(o.utility_label)}}`
  );
}

/** The canonical identity the observation id hashes. */
export function observationIdentityJson(o: Pick<Observation, "schema_version" | "scope" | "application_receipt_id" | "memory_ref_digests" | "retrieval_snapshot_ref" | "policy_snapshot_ref" | "outcome_ref" | "attribution_level" | "evidence_basis" | "evidence_refs" | "evaluator_ref" | "evaluation_version">): string {
  return (
    `{"application_receipt_id":${quote(o.application_receipt_id)}` +
    `,"attribution_level":${quote(o.attribution_level)}` +
    `,"evaluation_version":${quote(o.evaluation_version)}` +
    `,"evaluator_ref":${quote(o.evaluator_ref)}` +
    `,"evidence_basis":${quote(o.evidence_basis)}` +
    `,"evidence_refs":${list(o.evidence_refs)}` +
    `,"memory_ref_digests":${list(o.memory_ref_digests)}` +
    `,"outcome_ref":${quote(o.outcome_ref)}` +
    `,"policy_snapshot_ref":${quote(o.policy_snapshot_ref)}` +
    `,"retrieval_snapshot_ref":${quote(o.retrieval_snapshot_ref)}` +
    `,"schema_version":${quote(o.schema_version)}` +
    `,"scope":${scopeJson(o as Observation)}}`
  );
}

/** A history entry of the packet. */
export function historyEntryJson(o: Observation, fingerprint: string, subjectId: string): string {
  return (
    `{"application_receipt_id":${quote(o.application_receipt_id)}` +
    `,"attribution_level":${quote(o.attribution_level)}` +
    `,"confidence":${floatJson(o.confidence)}` +
    `,"created_at":${quote(o.created_at)}` +
    `,"evaluation_version":${quote(o.evaluation_version)}` +
    `,"evaluator_ref":${quote(o.evaluator_ref)}` +
    `,"evidence_basis":${quote(o.evidence_basis)}` +
    `,"evidence_refs":${list(o.evidence_refs)}` +
    `,"memory_ref_digests":${list(o.memory_ref_digests)}` +
    `,"observation_fingerprint":${quote(fingerprint)}` +
    `,"observation_id":${quote(o.observation_id)}` +
    `,"outcome_ref":${quote(o.outcome_ref)}` +
    `,"reason_codes":${list(o.reason_codes)}` +
    `,"subject_id":${quote(subjectId)}` +
    `,"utility_label":${quote(o.utility_label)}}`
  );
}

/**
 * A list of validated references (OPAQUE_REF_RE, memory digests): nothing in
 * them needs escaping, so they are quoted and joined natively.
 */
function refs(xs: readonly string[]): string {
  return xs.length === 0 ? "[]" : `["${xs.join('","')}"]`;
}

/**
 * historyEntryJson in the stored form (compact-json.ts): keys as tokens. Every
 * field but created_at is a validated reference, an enum or a sha256 id (an
 * Observation is only made by validation), so only created_at goes through quote.
 */
export function historyEntryStored(o: Observation, fingerprint: string, subjectId: string): string {
  const ascii = historyEntryAscii(o, fingerprint, subjectId);
  if (ascii !== null) return ascii;
  return (
    `{${K.application_receipt_id}"${o.application_receipt_id}",${K.attribution_level}${compactString(o.attribution_level)}` +
    `,${K.confidence}${floatJson(o.confidence)},${K.created_at}${quote(o.created_at)}` +
    `,${K.evaluation_version}"${o.evaluation_version}",${K.evaluator_ref}"${o.evaluator_ref}"` +
    `,${K.evidence_basis}${compactString(o.evidence_basis)},${K.evidence_refs}${refs(o.evidence_refs)}` +
    `,${K.memory_ref_digests}${refs(o.memory_ref_digests)},${K.observation_fingerprint}"${fingerprint}"` +
    `,${K.observation_id}"${o.observation_id}",${K.outcome_ref}"${o.outcome_ref}",${K.reason_codes}${refs(o.reason_codes)}` +
    `,${K.subject_id}"${subjectId}",${K.utility_label}${compactString(o.utility_label)}}`
  );
}

const text = new CompactText();

/** historyEntryStored written into one buffer; null when created_at is not ASCII (every other field is: refs, enums, ids). */
function historyEntryAscii(o: Observation, fingerprint: string, subjectId: string): string | null {
  putHistoryEntry(text.start(), o, fingerprint, subjectId, K);
  return text.text();
}

/** One history entry and the list it is written in. */
export interface HistoryEntryOf {
  readonly obs: Observation;
  readonly fingerprint: string;
  readonly subjectId: string;
}

const listText = new CompactText();

/**
 * `[` + historyEntryJson of each entry, comma-separated, + `]`: the canonical
 * history list of a packet assembled once (the one-shot reduction), written
 * into one buffer. Stored fragments would each be a string, joined, and then
 * expanded token by token: at 300 deliveries that was a fifth of the reduction.
 */
export function historyListJson(entries: readonly HistoryEntryOf[]): string {
  listText.start().put("[");
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (i > 0) listText.put(",");
    putHistoryEntry(listText, e.obs, e.fingerprint, e.subjectId, CANONICAL_KEYS);
  }
  const ascii = listText.put("]").text();
  return ascii ?? "[" + entries.map((e) => historyEntryJson(e.obs, e.fingerprint, e.subjectId)).join(",") + "]";
}

/**
 * A history entry in the dialect of `keys`: K (the stored form: key tokens, and
 * enum values as tokens) or CANONICAL_KEYS (`"key":` and quoted values).
 */
function putHistoryEntry(out: CompactText, o: Observation, fingerprint: string, subjectId: string, keys: Record<string, string>): void {
  const tokens = keys === K;
  out.put("{").put(keys.application_receipt_id!).put('"').put(o.application_receipt_id).put('",').put(keys.attribution_level!);
  putEnum(out, o.attribution_level, tokens);
  out.put(",").put(keys.confidence!).put(floatJson(o.confidence)).put(",").put(keys.created_at!).quoted(o.created_at);
  out.put(",").put(keys.evaluation_version!).put('"').put(o.evaluation_version).put('",').put(keys.evaluator_ref!).put('"').put(o.evaluator_ref).put('"');
  out.put(",").put(keys.evidence_basis!);
  putEnum(out, o.evidence_basis, tokens);
  out.put(",").put(keys.evidence_refs!);
  putRefs(out, o.evidence_refs);
  out.put(",").put(keys.memory_ref_digests!);
  putRefs(out, o.memory_ref_digests);
  out.put(",").put(keys.observation_fingerprint!).put('"').put(fingerprint).put('"');
  out.put(",").put(keys.observation_id!).put('"').put(o.observation_id).put('",').put(keys.outcome_ref!).put('"').put(o.outcome_ref).put('",').put(keys.reason_codes!);
  putRefs(out, o.reason_codes);
  out.put(",").put(keys.subject_id!).put('"').put(subjectId).put('",').put(keys.utility_label!);
  putEnum(out, o.utility_label, tokens);
  out.put("}");
}

/** An enum's value: its token in the stored form, else quoted (enum values need no escape). */
function putEnum(out: CompactText, value: string, tokens: boolean): void {
  if (tokens) out.string(value);
  else out.put('"').put(value).put('"');
}

function putRefs(out: CompactText, xs: readonly string[]): void {
  if (xs.length === 0) {
    out.put("[]");
    return;
  }
  out.put('["').put(xs[0]!);
  for (let i = 1; i < xs.length; i++) out.put('","').put(xs[i]!);
  out.put('"]');
}

const HISTORY_KEYS = ["application_receipt_id", "attribution_level", "confidence", "created_at", "evaluation_version", "evaluator_ref", "evidence_basis", "evidence_refs",
  "memory_ref_digests", "observation_fingerprint", "observation_id", "outcome_ref", "reason_codes", "subject_id", "utility_label"];
const K = Object.fromEntries(HISTORY_KEYS.map((key) => [key, k(key)])) as Record<string, string>;
const CANONICAL_KEYS = Object.fromEntries(HISTORY_KEYS.map((key) => [key, quote(key) + ":"])) as Record<string, string>;
