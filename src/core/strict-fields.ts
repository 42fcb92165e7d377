/**
 * The reducer's strict field rules (`utility_reducer._ref` and friends): values
 * must already be canonical, with no coercion and no surrounding whitespace.
 * Used for the reducer context and by the readback validator.
 */
import { fail } from "./errors.js";
import { SCOPE_FIELDS, asObject, parseContractTimestamp, requireExactFields, MEMORY_DIGEST_RE, OPAQUE_REF_MESSAGE, OPAQUE_REF_RE, type Scope } from "./fields.js";
import { pyStrip } from "./pystr.js";
import { PyFloat, pyStrCompare, type PyValue } from "./pyvalue.js";

const OBSERVATION_ID_RE = /^muo_[0-9a-f]{64}$/;

export function strictRef(value: PyValue | undefined, label: string): string {
  if (typeof value !== "string" || pyStrip(value) !== value || !OPAQUE_REF_RE.test(value)) {
    fail(`${label} ${OPAQUE_REF_MESSAGE}`);
  }
  return value;
}

export function strictObservationRef(value: PyValue | undefined, label: string): string {
  const result = strictRef(value, label);
  if (!OBSERVATION_ID_RE.test(result)) fail(`${label} must be a canonical observation id`);
  return result;
}

function sortedUniqueCanonical(result: string[]): boolean {
  for (let i = 1; i < result.length; i++) if (pyStrCompare(result[i - 1]!, result[i]!) >= 0) return false;
  return true;
}

export function strictMemoryDigests(value: PyValue | undefined, label: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > 16) {
    fail(`${label} must contain between 1 and 16 memory digests`);
  }
  const result: string[] = [];
  for (const item of value) {
    const digest = strictRef(item, label);
    if (!MEMORY_DIGEST_RE.test(digest)) fail(`${label} must contain canonical memory digests`);
    result.push(digest);
  }
  if (!sortedUniqueCanonical(result)) fail(`${label} must be sorted, unique, and canonical`);
  return result;
}

export function strictRefList(value: PyValue | undefined, label: string, maximum: number, minimum = 0): string[] {
  if (!Array.isArray(value) || value.length < minimum || value.length > maximum) {
    fail(`${label} must contain between ${minimum} and ${maximum} opaque references`);
  }
  const result = value.map((item) => strictRef(item, `${label}[]`));
  if (!sortedUniqueCanonical(result)) fail(`${label} must be sorted, unique, and canonical`);
  return result;
}

const SCOPE_FIELD_SET: ReadonlySet<string> = new Set(SCOPE_FIELDS);
const SORTED_SCOPE_FIELDS = [...SCOPE_FIELDS].sort();

export function strictScope(value: PyValue | undefined, label = "scope"): Scope {
  const raw = asObject(value, label);
  requireExactFields(raw, SCOPE_FIELD_SET, label);
  const out = {} as Scope;
  for (const key of SORTED_SCOPE_FIELDS) out[key] = strictRef(raw[key], `${label}.${key}`);
  return out;
}

export function strictTimestamp(value: PyValue | undefined, label: string): string {
  if (typeof value !== "string" || pyStrip(value) !== value) fail(`${label} must be an ISO timestamp`);
  const parsed = parseContractTimestamp(value);
  if (parsed === null) fail(`${label} must be an ISO timestamp`);
  if (parsed.offsetMicros === null) fail(`${label} must include a timezone`);
  return value;
}

export function strictEnum<T extends string>(value: PyValue | undefined, allowed: ReadonlySet<string>, label: string): T {
  if (typeof value !== "string" || !allowed.has(value)) fail(`${label} is invalid`);
  return value as T;
}

/** `_finite_float`: int or float (not bool), convertible, finite. */
export function finiteFloat(value: PyValue | undefined, label: string): number {
  let result: number;
  if (value instanceof PyFloat) result = value.value;
  else if (typeof value === "number") result = value;
  else if (typeof value === "bigint") result = Number(value);
  else fail(`${label} must be a finite number`);
  if (!Number.isFinite(result)) fail(`${label} must be a finite number`);
  return result;
}

/** `isinstance(v, int) and not isinstance(v, bool) and v >= minimum`. */
export function isIntAtLeast(value: PyValue | undefined, minimum: number): value is number | bigint {
  if (typeof value === "number") return Number.isInteger(value) && value >= minimum;
  if (typeof value === "bigint") return value >= BigInt(minimum);
  return false;
}
