/**
 * Canonical JSON, byte for byte what CPython writes with
 * `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
 * allow_nan=False)`. Digests in the contract are sha256 over its UTF-8 bytes.
 */
import { pyFloatRepr } from "./pyfloat.js";
import { PyFloat, pyStrCompare, type PyValue } from "./pyvalue.js";

export class CanonicalJsonError extends Error {
  override name = "ValueError";
}

/** Characters JSON.stringify may escape: the quote, the backslash, controls and (lone) surrogates. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * Python's ensure_ascii=False string escaping matches JSON.stringify for well-formed strings.
 * Most strings of the contract need no escape: wrapping them in quotes is cheaper than stringify.
 */
export function quote(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/** Whether quote(s) escapes something, i.e. is more than `s` between two quotes. */
export function needsEscape(s: string): boolean {
  return NEEDS_ESCAPE.test(s);
}

export function floatJson(x: number, allowNan = false): string {
  if (Number.isFinite(x)) return pyFloatRepr(x);
  if (!allowNan) throw new CanonicalJsonError("Out of range float values are not JSON compliant");
  return x !== x ? "NaN" : x > 0 ? "Infinity" : "-Infinity";
}

/** An object's keys in Python's str order (objects the core builds are usually in order already: checked first). */
export function sortedKeys(v: object): string[] {
  const keys = Object.keys(v);
  for (let i = 1; i < keys.length; i++) {
    if (pyStrCompare(keys[i - 1]!, keys[i]!) > 0) return keys.sort(pyStrCompare);
  }
  return keys;
}

function write(v: PyValue, allowNan: boolean): string {
  if (v === null) return "null";
  switch (typeof v) {
    case "string":
      return quote(v);
    case "boolean":
      return v ? "true" : "false";
    case "number":
      return Object.is(v, -0) ? "0" : String(v);
    case "bigint":
      return v.toString();
  }
  if (v instanceof PyFloat) return floatJson(v.value, allowNan);
  if (Array.isArray(v)) {
    let out = "[";
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out += ",";
      out += write(v[i]!, allowNan);
    }
    return out + "]";
  }
  const keys = sortedKeys(v);
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (i > 0) out += ",";
    out += quote(k) + ":" + write(v[k]!, allowNan);
  }
  return out + "}";
}

/** Sorted-key compact JSON; `allowNan` mirrors Python's flag (default False). */
export function canonicalJson(v: PyValue, options: { allowNan?: boolean } = {}): string {
  return write(v, options.allowNan ?? false);
}
