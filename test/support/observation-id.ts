// Test-side derivation of the reference's `observation_id` (loopx
// memory_utility._observation_id): "muo_" + sha256 hex of the canonical JSON
// (sorted keys, compact separators) of the 12 identity fields of the
// NORMALIZED observation. Independent of src/ on purpose: generators use it to
// build valid observations, so it must not share bugs with the code under test.
import { createHash } from "node:crypto";

export interface ObservationScope {
  agent_id: string;
  project_id: string;
  corpus_id: string;
  surface_id: string;
}

/** The identity fields, as strings / string lists (padding and order are normalized here). */
export interface ObservationIdentity {
  schema_version: string;
  scope: ObservationScope;
  application_receipt_id: string;
  memory_ref_digests: readonly string[];
  retrieval_snapshot_ref: string;
  policy_snapshot_ref: string;
  outcome_ref: string;
  attribution_level: string;
  evidence_basis: string;
  evidence_refs: readonly string[];
  evaluator_ref: string;
  evaluation_version: string;
}

// Python's str.isspace() set (what str.strip() removes). Differs from JS trim():
// includes U+001C..U+001F and U+0085, excludes U+FEFF.
const PY_WHITESPACE = new Set<number>([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000,
  0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028,
  0x2029, 0x202f, 0x205f, 0x3000,
]);

/** Python `str.strip()` (no argument). */
export function pyStrip(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && PY_WHITESPACE.has(s.charCodeAt(start))) start++;
  while (end > start && PY_WHITESPACE.has(s.charCodeAt(end - 1))) end--;
  return s.slice(start, end);
}

/** Code-point order, like Python's sort of str (differs from JS default sort only beyond the BMP). */
export function comparePy(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = x.value.codePointAt(0) ?? 0;
    const cy = y.value.codePointAt(0) ?? 0;
    if (cx !== cy) return cx < cy ? -1 : 1;
  }
}

function requireString(value: unknown, label: string): string {
  if (typeof value !== "string") {
    throw new TypeError(`${label} must be a string (coerce like Python str() before calling)`);
  }
  return value;
}

function strippedList(value: unknown, label: string): string[] {
  if (!Array.isArray(value)) throw new TypeError(`${label} must be an array of strings`);
  return value.map((item, i) => pyStrip(requireString(item, `${label}[${i}]`))).sort(comparePy);
}

/**
 * Canonical JSON for plain JSON data (strings, booleans, null, arrays, objects):
 * keys sorted recursively, compact. Exact w.r.t. Python's
 * json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False) for
 * such data (both escape only '"', '\\' and U+0000..U+001F, with the same
 * short forms) except for lone surrogates; numbers are rejected because their
 * Python rendering differs (use the oracle for those).
 */
export function canonicalJsonPlain(value: unknown): string {
  if (value === null || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJsonPlain(v)).join(",")}]`;
  if (typeof value === "object") {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj).sort(comparePy);
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJsonPlain(obj[k])}`).join(",")}}`;
  }
  throw new TypeError(`canonicalJsonPlain: unsupported value of type ${typeof value}`);
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Normalize the 12 identity fields the way the reference validator does (strip strings, sort lists). */
export function normalizedIdentity(obs: ObservationIdentity | Record<string, unknown>): Record<string, unknown> {
  const o = obs as Record<string, unknown>;
  const scopeRaw = o["scope"];
  if (scopeRaw === null || typeof scopeRaw !== "object" || Array.isArray(scopeRaw)) {
    throw new TypeError("scope must be an object");
  }
  const s = scopeRaw as Record<string, unknown>;
  const scope = {
    agent_id: pyStrip(requireString(s["agent_id"], "scope.agent_id")),
    project_id: pyStrip(requireString(s["project_id"], "scope.project_id")),
    corpus_id: pyStrip(requireString(s["corpus_id"], "scope.corpus_id")),
    surface_id: pyStrip(requireString(s["surface_id"], "scope.surface_id")),
  };
  return {
    // schema_version is compared exactly (never stripped) by the validator.
    schema_version: requireString(o["schema_version"], "schema_version"),
    scope,
    application_receipt_id: pyStrip(requireString(o["application_receipt_id"], "application_receipt_id")),
    memory_ref_digests: strippedList(o["memory_ref_digests"], "memory_ref_digests"),
    retrieval_snapshot_ref: pyStrip(requireString(o["retrieval_snapshot_ref"], "retrieval_snapshot_ref")),
    policy_snapshot_ref: pyStrip(requireString(o["policy_snapshot_ref"], "policy_snapshot_ref")),
    outcome_ref: pyStrip(requireString(o["outcome_ref"], "outcome_ref")),
    attribution_level: pyStrip(requireString(o["attribution_level"], "attribution_level")),
    evidence_basis: pyStrip(requireString(o["evidence_basis"], "evidence_basis")),
    evidence_refs: strippedList(o["evidence_refs"], "evidence_refs"),
    evaluator_ref: pyStrip(requireString(o["evaluator_ref"], "evaluator_ref")),
    evaluation_version: pyStrip(requireString(o["evaluation_version"], "evaluation_version")),
  };
}

/**
 * "muo_" + sha256(canonical JSON of the normalized identity fields). Extra keys
 * (utility_label, confidence, created_at, ...) are ignored. Values must be
 * strings / string lists: coerce non-strings with Python str() semantics first.
 */
export function observationId(obs: ObservationIdentity | Record<string, unknown>): string {
  return `muo_${sha256Hex(canonicalJsonPlain(normalizedIdentity(obs)))}`;
}
