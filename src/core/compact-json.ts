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
import { floatJson, quote, sortedKeys } from "./canonical-json.js";
import { PyFloat, pyStrCompare, type PyValue } from "./pyvalue.js";

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

/** Expansions by token character (code - 0x21), for the scan above. */
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

/** A fixed-shape object's keys in canonical order, with their stored forms. */
interface Shape {
  keys: readonly string[];
  stored: readonly string[];
}

function shape(keys: readonly string[]): Shape {
  const sorted = [...keys].sort(pyStrCompare);
  return { keys: sorted, stored: sorted.map((k, i) => (i === 0 ? "{" : ",") + compactKey(k)) };
}

/** Whether `v` has exactly the shape's keys (any order). */
function fits(v: { [k: string]: PyValue }, s: Shape): boolean {
  let n = 0;
  for (const k in v) {
    if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
    n++;
  }
  if (n !== s.keys.length) return false;
  for (const k of s.keys) if (!Object.prototype.hasOwnProperty.call(v, k)) return false;
  return true;
}

function writeShaped(v: { [k: string]: PyValue }, s: Shape, nested: ReadonlyMap<string, Shape>): string {
  let out = "";
  for (let i = 0; i < s.keys.length; i++) {
    const k = s.keys[i]!;
    const x = v[k]!;
    const inner = nested.get(k);
    out += s.stored[i]! + (inner !== undefined && x !== null && typeof x === "object" && !Array.isArray(x) && !(x instanceof PyFloat) && fits(x, inner) ? writeShaped(x, inner, NONE) : write(x));
  }
  return out + "}";
}

const NONE: ReadonlyMap<string, Shape> = new Map();
const SUBJECT = shape([
  "subject_id", "attribution_level", "memory_ref_digests", "utility_estimate", "utility_bounds", "effective_utility_label",
  "effective_evidence_basis", "confidence", "uncertainty", "support", "evidence_strength", "evidence_label_summary",
  "observation_count", "last_observed_at", "last_observation_id", "review", "read_only", "automatic_deletion", "action_authority_granted",
]);
const SUBJECT_NESTED = new Map<string, Shape>([
  ["utility_bounds", shape(["min", "max"])],
  ["support", shape(["helpful", "harmful", "neutral", "unknown"])],
  ["evidence_strength", shape(["insufficient", "evaluator_inference", "deterministic_effect", "controlled_replay", "owner_correction"])],
  ["review", shape(["state", "proposed_action", "reason_codes", "quarantine_proposed", "automatic_deletion", "action_authority_granted"])],
]);

/**
 * compactJson of a packet subject, written in its fixed key order (the
 * fragment the fold writes most): what compactJson gives, without listing and
 * sorting keys per object. Any other shape goes through compactJson.
 */
export function compactSubject(v: PyValue): string {
  if (v === null || typeof v !== "object" || Array.isArray(v) || v instanceof PyFloat || !fits(v, SUBJECT)) return compactJson(v);
  return writeShaped(v, SUBJECT, SUBJECT_NESTED);
}
