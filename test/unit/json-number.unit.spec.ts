// The one JSON number lexer (src/core/json-number.ts) takes exactly the lexeme CPython's json
// scanner takes: held against NUMBER_RE of Lib/json/scanner.py (with ASCII digits, as the C
// scanner `_json` reads them), at every start position of random text made of the characters a
// number is built from, and on the edge cases by name. The two callers' whole behaviour is held
// against Python itself in the reference tier (primitives, observation, conformance).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JSON_NUMBER, lexNumber } from "../../src/core/json-number.js";

/** CPython's NUMBER_RE, groups as there: integer, fraction, exponent. */
const NUMBER_RE = /(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;

/** What CPython matches at `start`: the end, and whether the lexeme is a float; null when no number starts there. */
function python(s: string, start: number): { end: number; float: boolean } | null {
  NUMBER_RE.lastIndex = start;
  const m = NUMBER_RE.exec(s);
  return m === null ? null : { end: start + m[0].length, float: m[2] !== undefined || m[3] !== undefined };
}

function lexed(s: string, start: number): { end: number; float: boolean } | null {
  const n = lexNumber(s, start);
  return n < 0 ? null : { end: n >> 1, float: (n & 1) === 1 };
}

describe("the JSON number lexer", () => {
  it.each([
    ["0", 1, false], ["-0", 2, false], ["7", 1, false], ["-12345", 6, false], ["01", 1, false], ["-01", 2, false],
    ["0.5", 3, true], ["1.", 1, false], ["1.e5", 1, false], ["1.5.5", 3, true], [".5", -1, false], ["-", -1, false], ["--1", -1, false],
    ["1e5", 3, true], ["1E+5", 4, true], ["1e-05", 5, true], ["1e", 1, false], ["1e+", 1, false], ["1e-x", 1, false], ["2.5e3,", 5, true],
    ["+1", -1, false], ["1\u0661", 1, false], ["\u0661", -1, false], ["Infinity", -1, false], ["-Infinity", -1, false], ["", -1, false],
  ] as const)("%j: ends at %d (float: %s), as CPython's scanner", (text, end, float) => {
    expect(lexed(text, 0)).toEqual(end < 0 ? null : { end, float });
    expect(python(text, 0)).toEqual(end < 0 ? null : { end, float });
  });

  it("answers positions far into a long text (the packed answer stays exact)", () => {
    const far = 50_000_000;
    const text = " ".repeat(far) + "-12.5e3]";
    expect(lexed(text, far)).toEqual({ end: far + 7, float: true });
  });

  it("matches NUMBER_RE at every position of random number-ish text", () => {
    const text = fc.string({ unit: fc.constantFrom(..."-+.eE0123456789 x\u0661"), maxLength: 24 });
    fc.assert(
      fc.property(text, (s) => {
        for (let i = 0; i <= s.length; i++) expect(lexed(s, i)).toEqual(python(s, i));
      }),
      { numRuns: 3000 },
    );
  });

  it("the regex form (the reader's canonical tier) is the same grammar", () => {
    const re = new RegExp(JSON_NUMBER, "y");
    const text = fc.string({ unit: fc.constantFrom(..."-+.eE0123456789 x"), maxLength: 24 });
    fc.assert(
      fc.property(text, (s) => {
        for (let i = 0; i <= s.length; i++) {
          re.lastIndex = i;
          const m = re.exec(s);
          expect(m === null ? null : i + m[0].length).toBe(lexed(s, i)?.end ?? null);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
