/**
 * The value model of the core: JSON values as Python's `json` module sees them.
 *
 * Python keeps the int/float distinction that JavaScript loses (`1` vs `1.0`),
 * and the contract's bytes depend on it, so floats are boxed in `PyFloat`.
 * A plain JS `number` is always a Python int (a safe integer); ints beyond
 * 2^53 are `bigint`. Objects are plain records with string keys.
 */
export class PyFloat {
  constructor(readonly value: number) {}
}

export type PyInt = number | bigint;
export type PyValue = null | boolean | string | PyInt | PyFloat | PyValue[] | PyObject;
export interface PyObject {
  [key: string]: PyValue;
}

export function isPyObject(value: unknown): value is PyObject {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof PyFloat)
  );
}

/** Python truthiness, as in `value or ""`. */
export function pyTruthy(value: PyValue | undefined): boolean {
  if (value === null || value === undefined || value === false) return false;
  if (value === true) return true;
  if (typeof value === "string") return value.length > 0;
  if (typeof value === "number") return value !== 0;
  if (typeof value === "bigint") return value !== 0n;
  if (value instanceof PyFloat) return value.value !== 0; // NaN is truthy, as in Python
  if (Array.isArray(value)) return value.length > 0;
  return Object.keys(value).length > 0;
}

/** Numeric value of a Python number or bool (bool is an int in Python). */
function numericOf(value: PyValue): number | bigint | undefined {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "number" || typeof value === "bigint") return value;
  if (value instanceof PyFloat) return value.value;
  return undefined;
}

function numbersEqual(a: number | bigint, b: number | bigint): boolean {
  if (typeof a === "number" && typeof b === "number") return a === b;
  if (typeof a === "bigint" && typeof b === "bigint") return a === b;
  const f = typeof a === "number" ? a : (b as number);
  const i = typeof a === "bigint" ? a : (b as bigint);
  return Number.isInteger(f) && BigInt(f) === i;
}

/** Python `==` over JSON-shaped values: numbers compare by value across int/float/bool. */
export function pyEquals(a: PyValue | undefined, b: PyValue | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  const na = numericOf(a);
  const nb = numericOf(b);
  if (na !== undefined || nb !== undefined) {
    return na !== undefined && nb !== undefined && numbersEqual(na, nb);
  }
  if (typeof a === "string" || typeof b === "string" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!pyEquals(a[i], b[i])) return false;
    return true;
  }
  const ka = Object.keys(a as PyObject);
  const ob = b as PyObject;
  if (ka.length !== Object.keys(ob).length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(ob, k)) return false;
    if (!pyEquals((a as PyObject)[k], ob[k])) return false;
  }
  return true;
}

/**
 * Python's code-point string order. JS `<` compares UTF-16 code units, which
 * differs from code points only when an astral character meets U+E000..U+FFFF.
 */
export function pyStrCompare(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) {
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

export function pySorted(values: readonly string[]): string[] {
  return [...values].sort(pyStrCompare);
}
