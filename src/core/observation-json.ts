/**
 * Canonical JSON of the contract's fixed shapes, written directly in sorted
 * key order. Byte-identical to canonicalJson over the same values (a unit
 * test holds them together) but without building, sorting and walking a
 * generic object per observation: this is the reducer's hot path.
 */
import { floatJson, quote } from "./canonical-json.js";
import { CompactText, compactKey as k, compactString } from "./compact-json.js";
import type { Observation } from "./observation-model.js";
import { FRAGMENTS, type Fragment } from "./fragment.js";
import type { Scope } from "./fields.js";

/** canonicalJson of a scope, written by its keys in canonical order. */
export function scopeJson(s: Scope): string {
  return `{"agent_id":${quote(s.agent_id)},"corpus_id":${quote(s.corpus_id)},"project_id":${quote(s.project_id)},"surface_id":${quote(s.surface_id)}}`;
}

function list(xs: readonly string[]): string {
  let out = "[";
  for (let i = 0; i < xs.length; i++) out += (i ? "," : "") + quote(xs[i]!);
  return out + "]";
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
    `,"scope":${scopeJson(o.scope)}` +
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
    `,"scope":${scopeJson((o as Observation).scope)}}`
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
  return historyEntryAscii(o, fingerprint, subjectId) ?? historyEntrySlow(o, fingerprint, subjectId);
}

/** historyEntryStored as a fragment: its bytes, lent, when ASCII (as a fold's entries are but for a non-ASCII created_at). */
export function historyEntryFragment(o: Observation, fingerprint: string, subjectId: string): Fragment {
  putHistoryEntry(text.start(), o, fingerprint, subjectId, STORED);
  return text.lent(FRAGMENTS) ?? historyEntrySlow(o, fingerprint, subjectId);
}

function historyEntrySlow(o: Observation, fingerprint: string, subjectId: string): string {
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
  putHistoryEntry(text.start(), o, fingerprint, subjectId, STORED);
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
  putHistoryList(listText.start(), entries);
  return listText.text() ?? historyListSlow(entries);
}

/** The canonical history list as historyListJson writes it, into `out`. */
export function putHistoryList(out: CompactText, entries: readonly HistoryEntryOf[]): void {
  out.put("[");
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (i > 0) out.put(",");
    putHistoryEntry(out, e.obs, e.fingerprint, e.subjectId, CANONICAL);
  }
  out.put("]");
}

function historyListSlow(entries: readonly HistoryEntryOf[]): string {
  return "[" + entries.map((e) => historyEntryJson(e.obs, e.fingerprint, e.subjectId)).join(",") + "]";
}

/**
 * A history entry in the dialect of `dialect`: STORED (key tokens, and enum
 * values as tokens) or CANONICAL (`"key":` and quoted values). The text
 * between two values is one piece, quotes and commas included: half the
 * writes of a key, a quote and a comma each.
 */
function putHistoryEntry(out: CompactText, o: Observation, fingerprint: string, subjectId: string, dialect: HistoryDialect): void {
  const p = dialect.pieces;
  const tokens = dialect.tokens;
  out.put(p[0]!).put(o.application_receipt_id).put(p[1]!);
  putEnum(out, o.attribution_level, tokens);
  out.put(p[2]!).put(floatJson(o.confidence)).put(p[3]!).quoted(o.created_at);
  out.put(p[4]!).put(o.evaluation_version).put(p[5]!).put(o.evaluator_ref).put(p[6]!);
  putEnum(out, o.evidence_basis, tokens);
  out.put(p[7]!);
  putRefs(out, o.evidence_refs);
  out.put(p[8]!);
  putRefs(out, o.memory_ref_digests);
  out.put(p[9]!).put(fingerprint).put(p[10]!).put(o.observation_id).put(p[11]!).put(o.outcome_ref).put(p[12]!);
  putRefs(out, o.reason_codes);
  out.put(p[13]!).put(subjectId).put(p[14]!);
  putEnum(out, o.utility_label, tokens);
  out.put(p[15]!);
}

/** An enum's value: its token in the stored form, else bare (the dialect's pieces quote it). */
function putEnum(out: CompactText, value: string, tokens: boolean): void {
  if (tokens) out.string(value);
  else out.put(value);
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

/** A history entry's text around its values: putHistoryEntry writes value, piece, value, … in HISTORY_KEYS' order. */
interface HistoryDialect {
  /** Enum values are written as tokens (the stored form), not quoted. */
  tokens: boolean;
  /** One more than the values: the first opens the entry, the last closes it. */
  pieces: string[];
}

/** Each history value's kind: a plain string (quoted), an enum (a token in the stored form), or written as it is. */
const VALUE_KINDS: readonly ("string" | "enum" | "as is")[] = [
  "string", "enum", "as is", "as is", "string", "string", "enum", "as is", "as is", "string", "string", "string", "as is", "string", "enum",
];

function historyDialect(keyText: (key: string) => string, tokens: boolean): HistoryDialect {
  const quoted = (i: number) => VALUE_KINDS[i] === "string" || (VALUE_KINDS[i] === "enum" && !tokens);
  const pieces = HISTORY_KEYS.map((key, i) => (i === 0 ? "{" : (quoted(i - 1) ? '"' : "") + ",") + keyText(key) + (quoted(i) ? '"' : ""));
  pieces.push((quoted(HISTORY_KEYS.length - 1) ? '"' : "") + "}");
  return { tokens, pieces };
}

const STORED = historyDialect((key) => K[key]!, true);
const CANONICAL = historyDialect((key) => quote(key) + ":", false);
