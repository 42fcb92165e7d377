/**
 * The stored form of packet fragments: canonical JSON with every known object
 * key `"key":` written as two bytes, \x02 and the key's token, and every
 * known enumerated value (`"helpful"`, `false`, …) as \x03 and its token.
 * Canonical JSON escapes every control character inside strings, so a raw
 * \x02 or \x03 is always a token and expanding them gives back the canonical
 * bytes exactly. Most of a subject or history fragment is key names and enum
 * values: this roughly halves what Redis holds per delivery. The read
 * function (mufold_v1.lua, EXPANSION) and `expandTokens` are the two
 * expanders; a unit test holds their tables equal.
 */
import { canonicalJson, floatJson, needsEscape, quote, sortedKeys } from "./canonical-json.js";
import { PyFloat, type PyValue } from "./pyvalue.js";
import type { LabelSummaryEntry, ReducedSubject } from "./subject.js";
import { AsciiText } from "./ascii-text.js";
import { FRAGMENTS, type Fragment } from "./fragment.js";

/** Token i is the character 0x21 + i. Append only: stored fragments name keys by position. */
export const KEY_TOKENS = [
  "accepted_observation_count", "action_authority_granted", "agent_id", "application_receipt_id", "attribution_level",
  "automatic_deletion", "combined_confidence", "confidence", "conflicting_observation_count", "controlled_replay",
  "corpus_id", "created_at", "delivery_count", "delivery_fingerprints", "delivery_fingerprints_truncated",
  "deterministic_effect", "duplicate_observation_count", "effective_evidence_basis", "effective_utility_label",
  "evaluation_version", "evaluator_inference", "evaluator_ref", "evidence_basis", "evidence_label_summary",
  "evidence_refs", "evidence_strength", "external_writes_performed", "grants_new_action_authority", "harmful",
  "helpful", "insufficient", "item_subject_count", "last_observation_id", "last_observed_at",
  "lineage_observation_count", "max", "memory_ref_digests", "min", "neutral", "observation_count",
  "observation_fingerprint", "observation_history", "observation_history_truncated", "observation_id", "ok",
  "outcome_ref", "owner_correction", "policy_snapshot_ref", "project_id", "projection_ready", "proposed_action",
  "provider_write_performed", "quarantine_proposed", "raw_content_captured", "read_only", "reason_codes",
  "reducer_identity", "reducer_version", "rejected_observation_count", "rejections", "retrieval_snapshot_ref",
  "review", "review_proposals", "schema_version", "scope", "set_subject_count", "state", "status", "subject_count",
  "subject_id", "subjects", "support", "surface_id", "uncertainty", "unknown", "unresolved_lineage_count",
  "utility_bounds", "utility_estimate", "utility_label",
] as const;

/** Token i is the character 0x21 + i after \x03; each stands for the JSON of the value. Append only. */
export const VALUE_TOKENS = [
  false, true, "helpful", "harmful", "neutral", "unknown", "insufficient", "evaluator_inference", "deterministic_effect",
  "controlled_replay", "owner_correction", "item", "set", "none", "conflict", "attenuation_proposed", "unresolved_attribution",
  "manual_review", "attenuate_or_review", "collect_attribution", "negative_utility_requires_review", "same_evidence_tier_conflict",
  "strongest_evidence_unknown", "attribution_not_established", "conflicting_observation_delivery", "ready", "review_required", "empty",
] as const;

export const TOKEN_MARK = "\u0002";
export const VALUE_MARK = "\u0003";

/** `"key":` → its two-byte token, for every key in KEY_TOKENS. */
const tokenOf = new Map<string, string>(KEY_TOKENS.map((k, i) => [k, TOKEN_MARK + String.fromCharCode(0x21 + i)]));
const valueTokenOf = new Map<string | boolean, string>(VALUE_TOKENS.map((v, i) => [v, VALUE_MARK + String.fromCharCode(0x21 + i)]));

/** Every token (two characters) and the canonical text it stands for. */
export const EXPANSION: ReadonlyMap<string, string> = new Map([
  ...KEY_TOKENS.map((k, i) => [TOKEN_MARK + String.fromCharCode(0x21 + i), quote(k) + ":"] as const),
  ...VALUE_TOKENS.map((v, i) => [VALUE_MARK + String.fromCharCode(0x21 + i), JSON.stringify(v)] as const),
]);

/** The stored form of `"key":` (the canonical text when the key has no token). */
export function compactKey(key: string): string {
  return tokenOf.get(key) ?? quote(key) + ":";
}

/** The stored form of a string value. */
export function compactString(value: string): string {
  return valueTokenOf.get(value) ?? quote(value);
}

/** Canonical bytes of a stored fragment. */
export function expandTokens(text: string): string {
  // One scan, slices between tokens (a packet of 1,000 deliveries holds ~40,000 tokens: no regex callback per token).
  let out = "";
  let from = 0;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text.charCodeAt(i);
    if (c !== 2 && c !== 3) continue;
    const table = c === 2 ? KEY_TEXT : VALUE_TEXT;
    const expanded = table[text.charCodeAt(i + 1) - 0x21];
    if (expanded === undefined) {
      i++; // an unknown token stays as it is, both characters (as Lua's gsub leaves an unmatched pair)
      continue;
    }
    out += text.slice(from, i) + expanded;
    from = i + 2;
    i++;
  }
  return from === 0 ? text : out + text.slice(from);
}

/** expandTokens(text) written into `out`: no concatenation of slices made, then flattened to be written. */
export function putExpanded(out: AsciiText, text: string): void {
  let from = 0;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text.charCodeAt(i);
    if (c !== 2 && c !== 3) continue;
    const expanded = (c === 2 ? KEY_TEXT : VALUE_TEXT)[text.charCodeAt(i + 1) - 0x21];
    if (expanded === undefined) {
      i++; // as expandTokens: an unknown token stays as it is
      continue;
    }
    out.putRange(text, from, i).put(expanded);
    from = i + 2;
    i++;
  }
  out.putRange(text, from, text.length);
}

/** Expansions by token character (code - 0x21), for the scans above. */
const KEY_TEXT: readonly string[] = KEY_TOKENS.map((k) => quote(k) + ":");
const VALUE_TEXT: readonly string[] = VALUE_TOKENS.map((v) => JSON.stringify(v));

function write(v: PyValue): string {
  if (v === null) return "null";
  switch (typeof v) {
    case "string":
      return valueTokenOf.get(v) ?? quote(v);
    case "boolean":
      return valueTokenOf.get(v)!;
    case "number":
      return Object.is(v, -0) ? "0" : String(v);
    case "bigint":
      return v.toString();
  }
  if (v instanceof PyFloat) return floatJson(v.value);
  if (Array.isArray(v)) {
    let out = "[";
    for (let i = 0; i < v.length; i++) out += (i > 0 ? "," : "") + write(v[i]!);
    return out + "]";
  }
  const keys = sortedKeys(v);
  let out = "{";
  for (let i = 0; i < keys.length; i++) out += (i > 0 ? "," : "") + compactKey(keys[i]!) + write(v[keys[i]!]!);
  return out + "}";
}

/** canonicalJson(v) in the stored form: `expandTokens(compactJson(v)) === canonicalJson(v)`. */
export function compactJson(v: PyValue): string {
  return write(v);
}

// ---- A packet subject (the fragment the fold writes most), written from its type ----

const k = compactKey;
/**
 * The constant text before each value of a subject, its keys in canonical
 * order, in a dialect: the stored form (key and value tokens) or canonical
 * JSON. Each `+` of the writer below makes one string (a concatenation node),
 * so the constant runs are joined once here: a fragment is ~50 pieces instead
 * of ~90.
 */
function subjectPieces(key: (name: string) => string, json: (v: PyValue) => string) {
  return {
    level: "{" + key("action_authority_granted") + json(false) + "," + key("attribution_level"),
    confidence: "," + key("automatic_deletion") + json(false) + "," + key("confidence"),
    basis: "," + key("effective_evidence_basis"),
    label: "," + key("effective_utility_label"),
    summary: "," + key("evidence_label_summary") + "[",
    replay: "]," + key("evidence_strength") + "{" + key("controlled_replay"),
    effect: "," + key("deterministic_effect"),
    inference: "," + key("evaluator_inference"),
    insufficient: "," + key("insufficient"),
    owner: "," + key("owner_correction"),
    lastId: "}," + key("last_observation_id"),
    lastAt: "," + key("last_observed_at"),
    digests: "," + key("memory_ref_digests") + "[",
    count: "]," + key("observation_count"),
    review: "," + key("read_only") + json(true) + "," + key("review") + "{" + key("action_authority_granted") + json(false) + "," + key("automatic_deletion") + json(false) + "," + key("proposed_action"),
    quarantine: "," + key("quarantine_proposed"),
    reasons: "," + key("reason_codes") + "[",
    state: "]," + key("state"),
    subject: "}," + key("subject_id"),
    harmful: "," + key("support") + "{" + key("harmful"),
    helpful: "," + key("helpful"),
    neutral: "," + key("neutral"),
    unknown: "," + key("unknown"),
    uncertainty: "}," + key("uncertainty"),
    max: "," + key("utility_bounds") + "{" + key("max"),
    min: "," + key("min"),
    estimate: "}," + key("utility_estimate"),
    entry: "{" + key("combined_confidence"),
    entryBasis: "," + key("evidence_basis"),
    entryCount: "," + key("observation_count"),
    entryLabel: "," + key("utility_label"),
  };
}

const S = subjectPieces(k, compactJson);

/** How a subject is written: its pieces (above) and whether its string values are written as tokens. */
interface SubjectDialect {
  pieces: typeof S;
  tokens: boolean;
}

const STORED_SUBJECT: SubjectDialect = { pieces: S, tokens: true };
const CANONICAL_SUBJECT: SubjectDialect = { pieces: subjectPieces((name) => quote(name) + ":", canonicalJson), tokens: false };

const bool = (b: boolean): string => valueTokenOf.get(b)!;

/** A list of strings' stored form without its brackets. */
function strings(list: readonly string[]): string {
  let out = "";
  for (let i = 0; i < list.length; i++) out += (i > 0 ? "," : "") + compactString(list[i]!);
  return out;
}

/** The evidence summary's stored form without its brackets. */
function summary(entries: readonly LabelSummaryEntry[]): string {
  let out = "";
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    out += (i > 0 ? "," : "") + S.entry + floatJson(e.combined_confidence.value) + S.entryBasis + compactString(e.evidence_basis) + S.entryCount +
      String(e.observation_count) + S.entryLabel + compactString(e.utility_label) + "}";
  }
  return out;
}

/**
 * compactJson of a subject reduceSubject made, without inspecting it: its keys
 * are fixed by its type, so they are written as constants (S), in canonical
 * order (a unit test holds this equal to compactJson on real and on random
 * subjects). `read_only` and the four `false` (two of the subject's, two of
 * its review's) are constants of the type, written as part of the runs. The
 * generic writer looked every key up by name and checked each object's shape:
 * about twice the time of this one.
 */
export function storedSubject(s: ReducedSubject): string {
  return subjectAscii(s, STORED_SUBJECT) ?? storedSubjectSlow(s);
}

/** storedSubject as a fragment: its bytes, lent, when ASCII (a fold's subjects always are). */
export function storedSubjectFragment(s: ReducedSubject): Fragment {
  putSubject(s, STORED_SUBJECT);
  return text.lent(FRAGMENTS) ?? storedSubjectSlow(s);
}

/** storedSubject by concatenation: any text. */
function storedSubjectSlow(s: ReducedSubject): string {
  const r = s.review;
  const sup = s.support;
  const st = s.evidence_strength;
  return S.level + compactString(s.attribution_level) + S.confidence + floatJson(s.confidence.value) + S.basis + compactString(s.effective_evidence_basis) + S.label + compactString(s.effective_utility_label) +
    S.summary + summary(s.evidence_label_summary) +
    S.replay + String(st.controlled_replay) + S.effect + String(st.deterministic_effect) + S.inference + String(st.evaluator_inference) +
    S.insufficient + String(st.insufficient) + S.owner + String(st.owner_correction) +
    S.lastId + (s.last_observation_id === null ? "null" : compactString(s.last_observation_id)) +
    S.lastAt + (s.last_observed_at === null ? "null" : compactString(s.last_observed_at)) +
    S.digests + strings(s.memory_ref_digests) + S.count + String(s.observation_count) +
    S.review + compactString(r.proposed_action) + S.quarantine + bool(r.quarantine_proposed) + S.reasons + strings(r.reason_codes) + S.state + compactString(r.state) +
    S.subject + compactString(s.subject_id) +
    S.harmful + String(sup.harmful) + S.helpful + String(sup.helpful) + S.neutral + String(sup.neutral) + S.unknown + String(sup.unknown) +
    S.uncertainty + floatJson(s.uncertainty.value) + S.max + floatJson(s.utility_bounds.max.value) + S.min + floatJson(s.utility_bounds.min.value) +
    S.estimate + floatJson(s.utility_estimate.value) + "}";
}

/** A review proposal's fields (identity-analysis.ts, subjectOfGroup), as storedProposal writes them. */
export interface ProposalFields {
  subject_id: string;
  attribution_level: string;
  memory_ref_digests: readonly string[];
  state: string;
  proposed_action: string;
  reason_codes: readonly string[];
  quarantine_proposed: boolean;
  automatic_deletion: false;
  action_authority_granted: false;
}

const P = {
  authority: "{" + k("action_authority_granted") + bool(false) + "," + k("attribution_level"),
  deletion: "," + k("automatic_deletion") + bool(false) + "," + k("memory_ref_digests") + "[",
  action: "]," + k("proposed_action"),
  quarantine: "," + k("quarantine_proposed"),
  reasons: "," + k("reason_codes") + "[",
  state: "]," + k("state"),
  subject: "," + k("subject_id"),
};

/**
 * compactJson of a review proposal, its keys written as constants in canonical order (a unit test holds it equal
 * to compactJson): the generic writer sorted and looked up the nine keys of every proposal a flush rewrites.
 */
export function storedProposal(p: ProposalFields): string {
  return P.authority + compactString(p.attribution_level) + P.deletion + strings(p.memory_ref_digests) + P.action + compactString(p.proposed_action) +
    P.quarantine + bool(p.quarantine_proposed) + P.reasons + strings(p.reason_codes) + P.state + compactString(p.state) + P.subject + compactString(p.subject_id) + "}";
}

/** An AsciiText that writes string values as compactString and quote do, without making the quoted string first. */
export class CompactText extends AsciiText {
  string(value: string): this {
    const token = valueTokenOf.get(value);
    return token !== undefined ? this.put(token) : this.quoted(value);
  }

  quoted(value: string): this {
    return needsEscape(value) ? this.put(quote(value)) : this.put('"').put(value).put('"');
  }

  /** A string value in a dialect: as `string` writes it (`tokens`), else quoted. */
  value(value: string, tokens: boolean): this {
    return tokens ? this.string(value) : this.quoted(value);
  }

  valueOrNull(value: string | null, tokens: boolean): this {
    return value === null ? this.put("null") : this.value(value, tokens);
  }
}

const text = new CompactText();

/** A subject in `d`'s dialect, written into one buffer; null when a piece is not ASCII (a fold's subjects always are: refs, enums, ids, numbers). */
function subjectAscii(s: ReducedSubject, d: SubjectDialect): string | null {
  putSubject(s, d);
  return text.text();
}

/** A subject in `d`'s dialect, written into `text` (which says whether it was ASCII). */
function putSubject(s: ReducedSubject, d: SubjectDialect): void {
  const P = d.pieces;
  const t = d.tokens;
  const r = s.review;
  const sup = s.support;
  const st = s.evidence_strength;
  text.start().put(P.level).value(s.attribution_level, t).put(P.confidence).put(floatJson(s.confidence.value));
  text.put(P.basis).value(s.effective_evidence_basis, t).put(P.label).value(s.effective_utility_label, t).put(P.summary);
  const entries = s.evidence_label_summary;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (i > 0) text.put(",");
    text.put(P.entry).put(floatJson(e.combined_confidence.value)).put(P.entryBasis).value(e.evidence_basis, t);
    text.put(P.entryCount).put(String(e.observation_count)).put(P.entryLabel).value(e.utility_label, t).put("}");
  }
  text.put(P.replay).put(String(st.controlled_replay)).put(P.effect).put(String(st.deterministic_effect)).put(P.inference).put(String(st.evaluator_inference));
  text.put(P.insufficient).put(String(st.insufficient)).put(P.owner).put(String(st.owner_correction));
  text.put(P.lastId).valueOrNull(s.last_observation_id, t);
  text.put(P.lastAt).valueOrNull(s.last_observed_at, t);
  text.put(P.digests);
  putStrings(s.memory_ref_digests, t);
  text.put(P.count).put(String(s.observation_count));
  text.put(P.review).value(r.proposed_action, t).put(P.quarantine).put(t ? bool(r.quarantine_proposed) : String(r.quarantine_proposed)).put(P.reasons);
  putStrings(r.reason_codes, t);
  text.put(P.state).value(r.state, t).put(P.subject).value(s.subject_id, t);
  text.put(P.harmful).put(String(sup.harmful)).put(P.helpful).put(String(sup.helpful)).put(P.neutral).put(String(sup.neutral)).put(P.unknown).put(String(sup.unknown));
  text.put(P.uncertainty).put(floatJson(s.uncertainty.value)).put(P.max).put(floatJson(s.utility_bounds.max.value)).put(P.min).put(floatJson(s.utility_bounds.min.value));
  text.put(P.estimate).put(floatJson(s.utility_estimate.value)).put("}");
}

function putStrings(list: readonly string[], tokens: boolean): void {
  for (let i = 0; i < list.length; i++) {
    if (i > 0) text.put(",");
    text.value(list[i]!, tokens);
  }
}

/** canonicalJson of a subject reduceSubject made, written as storedSubject writes its stored form (a one-shot packet's subjects). */
export function canonicalSubject(s: ReducedSubject): string {
  return subjectAscii(s, CANONICAL_SUBJECT) ?? canonicalJson(s as unknown as PyValue);
}
