import { describe, expect, it } from "vitest";
import { CanonicalJsonError, PyFloat, canonicalJson, parsePyJson, PyJsonDecodeError, PyValueError } from "../../src/core/index.js";

describe("canonicalJson", () => {
  it("sorts keys recursively and uses compact separators", () => {
    expect(canonicalJson({ b: 1, a: { d: [true, null], c: "x" } })).toBe('{"a":{"c":"x","d":[true,null]},"b":1}');
  });
  it("keeps the int/float distinction of the lexeme", () => {
    expect(canonicalJson(parsePyJson("[1, 1.0, 1e0, -0, -0.0, 1E-5, 10000000000000000000000]"))).toBe(
      "[1,1.0,1.0,0,-0.0,1e-05,10000000000000000000000]",
    );
  });
  it("escapes like Python with ensure_ascii=False", () => {
    expect(canonicalJson("é\u2028\u007f\u0001\"\\\n\t")).toBe('"é\u2028\u007f\\u0001\\"\\\\\\n\\t"');
  });
  it("orders keys by code point, not UTF-16 unit", () => {
    expect(canonicalJson({ "\u{10000}": 1, "\uffff": 2 })).toBe('{"\uffff":2,"\u{10000}":1}');
  });
  it("rejects NaN and infinities unless allowed", () => {
    expect(() => canonicalJson(new PyFloat(NaN))).toThrow(CanonicalJsonError);
    expect(canonicalJson([new PyFloat(NaN), new PyFloat(-Infinity)], { allowNan: true })).toBe("[NaN,-Infinity]");
  });
});

describe("parsePyJson", () => {
  it("accepts Python's extra literals", () => {
    const v = parsePyJson('[NaN, Infinity, -Infinity]') as PyFloat[];
    expect(v.map((f) => f.value)).toEqual([NaN, Infinity, -Infinity]);
  });
  it("reports errors with Python's words and positions", () => {
    const message = (text: string) => {
      try {
        parsePyJson(text);
      } catch (err) {
        return (err as Error).message;
      }
      return "parsed";
    };
    expect(message("")).toBe("Expecting value: line 1 column 1 (char 0)");
    expect(message('{"a" 1}')).toBe("Expecting ':' delimiter: line 1 column 6 (char 5)");
    expect(message("[1,]")).toBe("Expecting value: line 1 column 4 (char 3)");
    expect(message('{"a":1,}')).toBe("Expecting property name enclosed in double quotes: line 1 column 8 (char 7)");
    expect(message("[1] x")).toBe("Extra data: line 1 column 5 (char 4)");
    expect(message('\n"abc')).toBe("Unterminated string starting at: line 2 column 1 (char 1)");
    expect(message('"a\u0001"')).toBe("Invalid control character at: line 1 column 3 (char 2)");
    expect(message('"\\x"')).toBe("Invalid \\escape: line 1 column 2 (char 1)");
    expect(message("01")).toBe("Extra data: line 1 column 2 (char 1)");
  });
  it("refuses ints past CPython's digit limit", () => {
    expect(() => parsePyJson("1".repeat(4301))).toThrow(PyValueError);
    expect(() => parsePyJson("{")).toThrow(PyJsonDecodeError);
  });
  it("keeps the last value of a duplicated key, like a dict", () => {
    expect(canonicalJson(parsePyJson('{"a":1,"a":2}'))).toBe('{"a":2}');
  });
});
