/**
 * Field rules shared by the observation validator and the builder, ported
 * from the reference's lenient input normalizers (`str(v or "").strip()`).
 */
import { ContractError, ObservationValidationError, fail } from "./errors.js";
import { commonIsoFormat, pyFromIsoFormat, type IsoDateTime } from "./iso-timestamp.js";
import { pyReprStrList } from "./pyrepr.js";
import { pyStrStrip } from "./pystr.js";
import { isPyObject, pySorted, pyStrCompare, type PyObject, type PyValue } from "./pyvalue.js";

export const OPAQUE_REF_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$/;
export const EXISTING_TOKEN_RE = /^[A-Za-z0-9][A-Za-z0-9._:/#-]{0,199}$/;
export const MEMORY_DIGEST_RE = /^(?:[0-9a-f]{16}|sha256:[0-9a-f]{64})$/;

export const SCOPE_FIELDS = ["agent_id", "project_id", "corpus_id", "surface_id"] as const;

// A type literal, not an interface: a Scope must stay assignable to the core's PyObject (index signature).
/**
 * Where an observation applies. Each field is an opaque reference: 1 to 200 characters, each a letter, digit,
 * `_`, `.`, `:` or `-`, the first a letter or digit.
 */
export type Scope = {
  agent_id: string;
  project_id: string;
  corpus_id: string;
  surface_id: string;
};

export function asObject(value: PyValue | undefined, label: string): PyObject {
  if (!isPyObject(value)) fail(`${label} must be an object`);
  return value;
}

/** Exact key set; message lists missing and unknown keys like Python's list repr. */
export function requireExactFields(value: PyObject, expected: ReadonlySet<string>, label: string): void {
  let count = 0;
  let same = true;
  for (const k in value) {
    count++;
    if (!expected.has(k)) {
      same = false;
      break;
    }
  }
  if (same && count === expected.size) return;
  const keys = Object.keys(value);
  const missing = pySorted([...expected].filter((k) => !Object.prototype.hasOwnProperty.call(value, k)));
  const unknown = pySorted(keys.filter((k) => !expected.has(k)));
  fail(`${label} has invalid fields: missing=${pyReprStrList(missing)}, unknown=${pyReprStrList(unknown)}`);
}

/**
 * The reference's words for a value that fails OPAQUE_REF_RE. The contract's validators keep them byte for
 * byte (the tests compare them with loopx, and the fold's DLQ records carry them); mufold's own API adds the form.
 */
export const OPAQUE_REF_MESSAGE = "must be an opaque public-safe reference";

/** OPAQUE_REF_RE in words, for messages a person reads. */
export const OPAQUE_REF_FORM = "1 to 200 characters, each a letter, digit, '_', '.', ':' or '-', the first a letter or digit";

/**
 * `err` with the accepted form appended when it is the contract's malformed-reference error (same class and
 * reason code); anything else unchanged. For mufold's own API, whose callers see the message but no regex.
 */
export function statingRefForm(err: unknown): unknown {
  if (!(err instanceof ContractError) || !err.message.endsWith(OPAQUE_REF_MESSAGE)) return err;
  const message = `${err.message}: ${OPAQUE_REF_FORM}`;
  return err instanceof ObservationValidationError ? new ObservationValidationError(err.reasonCode, message) : new ContractError(message);
}

export function opaqueRef(value: PyValue | undefined, label: string): string {
  const result = pyStrStrip(value);
  if (!OPAQUE_REF_RE.test(result)) fail(`${label} ${OPAQUE_REF_MESSAGE}`);
  return result;
}

export function existingToken(value: PyValue | undefined, label: string): string {
  const result = pyStrStrip(value);
  if (!EXISTING_TOKEN_RE.test(result)) fail(`${label} must be a compact public-safe token`);
  return result;
}

export function refList(value: PyValue | undefined, label: string, maximum: number, minimum = 0): string[] {
  if (!Array.isArray(value) || value.length < minimum || value.length > maximum) {
    fail(`${label} must be a list containing between ${minimum} and ${maximum} opaque references`);
  }
  const result = value.map((item) => opaqueRef(item, label)).sort(pyStrCompare);
  for (let i = 1; i < result.length; i++) {
    if (result[i] === result[i - 1]) fail(`${label} must not contain duplicates`);
  }
  return result;
}

export const MAX_MEMORY_DIGESTS = 16;

export function memoryDigests(value: PyValue | undefined, label: string, minimum = 1): string[] {
  const result = refList(value, label, MAX_MEMORY_DIGESTS, minimum);
  for (const item of result) {
    if (!MEMORY_DIGEST_RE.test(item)) fail(`${label} must contain only canonical opaque memory digests`);
  }
  return result;
}

const SCOPE_FIELD_SET: ReadonlySet<string> = new Set(SCOPE_FIELDS);

export function scopeOf(value: PyValue | undefined, label: string): Scope {
  const raw = asObject(value, label);
  requireExactFields(raw, SCOPE_FIELD_SET, label);
  return {
    agent_id: opaqueRef(raw.agent_id, `${label}.agent_id`),
    project_id: opaqueRef(raw.project_id, `${label}.project_id`),
    corpus_id: opaqueRef(raw.corpus_id, `${label}.corpus_id`),
    surface_id: opaqueRef(raw.surface_id, `${label}.surface_id`),
  };
}

/** Parse after the reference's `Z` -> `+00:00` replacement; null if invalid. */
export function parseContractTimestamp(text: string): IsoDateTime | null {
  // In the common shape a Z can only be the offset, which parses as +00:00 does: no replacement needed.
  const common = commonIsoFormat(text);
  if (common !== undefined) return common;
  return pyFromIsoFormat(text.includes("Z") ? text.replaceAll("Z", "+00:00") : text);
}

/** Lenient timestamp: stripped original text, must parse and carry an offset. */
export function timestampField(value: PyValue | undefined, label: string): string {
  const result = pyStrStrip(value);
  const parsed = parseContractTimestamp(result);
  if (parsed === null) fail(`${label} must be an ISO timestamp`);
  if (parsed.offsetMicros === null) fail(`${label} must include a timezone`);
  return result;
}

export function falseBoundary(value: PyObject, key: string, label: string): false {
  if (value[key] !== false) fail(`${label}.${key} must be false`);
  return false;
}

export function scopesEqual(a: Scope, b: Scope): boolean {
  return a.agent_id === b.agent_id && a.project_id === b.project_id && a.corpus_id === b.corpus_id && a.surface_id === b.surface_id;
}

export function listsEqual(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
