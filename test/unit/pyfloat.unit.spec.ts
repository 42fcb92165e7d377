import { describe, expect, it } from "vitest";
import { pyFloatRepr, pyRound6 } from "../../src/core/index.js";

// Expected strings were produced by CPython 3.11 (`repr(x)`, `repr(round(x, 6))`).
describe("pyFloatRepr", () => {
  const cases: [number, string][] = [
    [0.1, "0.1"], [1.0, "1.0"], [1e-5, "1e-05"], [1e16, "1e+16"], [1.5e16, "1.5e+16"],
    [123456789012345.0, "123456789012345.0"], [1234567890123456.0, "1234567890123456.0"], [0.0001, "0.0001"],
    [0.00012, "0.00012"], [5e-324, "5e-324"], [1.7976931348623157e308, "1.7976931348623157e+308"], [-0.0, "-0.0"],
    [0.0, "0.0"], [2.5, "2.5"], [1e22, "1e+22"], [1e-7, "1e-07"], [0.30000000000000004, "0.30000000000000004"],
    [-1.25e-10, "-1.25e-10"], [9007199254740993.0, "9007199254740992.0"], [100.0, "100.0"], [1e15, "1000000000000000.0"],
  ];
  it.each(cases)("repr(%s) == %s", (x, expected) => {
    expect(pyFloatRepr(x)).toBe(expected);
  });
  it("writes non-finite values like Python", () => {
    expect([pyFloatRepr(NaN), pyFloatRepr(Infinity), pyFloatRepr(-Infinity)]).toEqual(["nan", "inf", "-inf"]);
  });
  it("writes each value the same on every call, past its memo's bound too, and tells -0.0 from 0.0", () => {
    // Python's repr is the shortest text that reads back as the value: JSON.parse checks the round trip.
    const values = Array.from({ length: 20_000 }, (_, i) => (i % 2 === 0 ? 1 : -1) * (i + 1) * 1.37e-3);
    for (const round of [1, 2]) {
      for (const x of values) {
        const text = pyFloatRepr(x);
        expect(JSON.parse(text), `round ${round}`).toBe(x);
        expect(text).toMatch(/^-?\d+\.\d+$/);
      }
    }
    expect([pyFloatRepr(0.0), pyFloatRepr(-0.0), pyFloatRepr(0.0), pyFloatRepr(-0.0)]).toEqual(["0.0", "-0.0", "0.0", "-0.0"]);
    expect([pyFloatRepr(0.1), pyFloatRepr(0.1), pyFloatRepr(1e-5), pyFloatRepr(1e-5)]).toEqual(["0.1", "0.1", "1e-05", "1e-05"]);
  });
});

describe("pyRound6", () => {
  const cases: [number, string][] = [
    [0.0078125, "0.007812"], [5e-7, "0.0"], [1.5e-6, "2e-06"], [2.5e-6, "3e-06"], [0.1234565, "0.123456"],
    [0.9999995, "1.0"], [0.3000005, "0.300001"], [0.9999999, "1.0"], [-1e-9, "-0.0"], [-0.0078125, "-0.007812"],
    [0.7, "0.7"], [4.999999e-7, "0.0"],
  ];
  it.each(cases)("round(%s, 6) == %s", (x, expected) => {
    expect(pyFloatRepr(pyRound6(x))).toBe(expected);
  });
  it("differs from toFixed on an exact binary tie (ties to even)", () => {
    expect((0.0078125).toFixed(6)).toBe("0.007813");
    expect(pyRound6(0.0078125)).toBe(0.007812);
  });
});
