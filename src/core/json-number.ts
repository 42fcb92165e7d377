/**
 * The JSON number lexer, as CPython's json scanner (`_json`'s
 * `_match_number_unicode`) matches a number: `-?(0|[1-9][0-9]*)`, then
 * `(\.[0-9]+)?([eE][-+]?[0-9]+)?`, ASCII digits only. The one lexer of
 * the exact parser (pyjson-parse.ts) and of the observation reader's plain
 * tier (observation-reader.ts, per record on the fold's decode path), so the
 * two always take the same lexeme.
 *
 * `lexNumber` answers with one small integer, `end * 2 + float`, which the
 * caller unpacks in place (`lexed >> 1`, `lexed & 1`): no allocation and no
 * state on the per-record path. Unpacking through helper functions, or
 * lexing in two calls, read a document of numbers ~15% slower (V8 stopped
 * inlining them into the parser's scan loop).
 */

/** The same grammar as a regex source, for lexing inside a larger pattern (the reader's canonical tier). */
export const JSON_NUMBER = String.raw`-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?`;

/**
 * The number at `start`: -1 when none starts there, else `end * 2 + float`,
 * with `end` the position past its lexeme and `float` 1 when a fraction or an
 * exponent matched (Python's `float`), 0 for an int. A `.` or an `e` not
 * followed by digits is not part of the number (the caller then refuses what
 * follows, as Python does). V8 strings are shorter than 2^29, so the result
 * is a small integer.
 */
export function lexNumber(s: string, start: number): number {
  let i = start;
  if (s.charCodeAt(i) === 0x2d) i++; // -
  const d0 = s.charCodeAt(i);
  if (d0 === 0x30) i++; // a leading 0 is the whole integer part
  else if (d0 >= 0x31 && d0 <= 0x39) while (isDigit(s.charCodeAt(++i)));
  else return -1;
  let float = 0;
  if (s.charCodeAt(i) === 0x2e && isDigit(s.charCodeAt(i + 1))) { // .
    i += 2;
    while (isDigit(s.charCodeAt(i))) i++;
    float = 1;
  }
  const e = s.charCodeAt(i);
  if (e === 0x65 || e === 0x45) { // e E
    let j = i + 1;
    const sign = s.charCodeAt(j);
    if (sign === 0x2b || sign === 0x2d) j++; // + -
    if (isDigit(s.charCodeAt(j))) {
      while (isDigit(s.charCodeAt(++j)));
      i = j;
      float = 1;
    }
  }
  return i * 2 + float;
}

/** charCodeAt past the end is NaN, which is no digit: the loops stop at the end of the text. */
function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
