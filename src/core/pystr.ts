/** Python `str` behaviours the contract leans on: `str(v or "")` coercion and `strip()`. */
import { pyFloatRepr } from "./pyfloat.js";
import { PyFloat, pyTruthy, type PyValue } from "./pyvalue.js";

/** Characters for which Python's `str.isspace()` is true (what `strip()` removes). */
function isPyWhitespace(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
  if (c < 0x85) return false;
  return (
    c === 0x85 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

/** Python `s.strip()` (differs from JS `trim()` on U+001C..U+001F, U+0085 and U+FEFF). */
export function pyStrip(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && isPyWhitespace(s.charCodeAt(start))) start++;
  while (end > start && isPyWhitespace(s.charCodeAt(end - 1))) end--;
  return start === 0 && end === s.length ? s : s.slice(start, end);
}

/**
 * Python `str(value or "")` for JSON values. Lists and dicts only need to be
 * recognisably not a reference: their repr always holds `[`, `{` or a quote.
 */
export function pyStrOr(value: PyValue | undefined): string {
  if (value === undefined || !pyTruthy(value)) return "";
  if (typeof value === "string") return value;
  if (value === true) return "True";
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (value instanceof PyFloat) return pyFloatRepr(value.value);
  return Array.isArray(value) ? "[…]" : "{…}";
}

/** `str(value or "").strip()`. */
export function pyStrStrip(value: PyValue | undefined): string {
  return pyStrip(pyStrOr(value));
}
