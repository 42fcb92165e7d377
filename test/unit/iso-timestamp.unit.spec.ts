import { describe, expect, it } from "vitest";
import { pyFromIsoFormat } from "../../src/core/index.js";

// Each row was checked against CPython 3.11's datetime.fromisoformat (its C implementation).
describe("pyFromIsoFormat", () => {
  const accepted: [string, number[], number | null][] = [
    ["2026-08-15T12:30:45:5", [2026, 8, 15, 12, 30, 45, 500000], null],
    ["2026-08-15é12:30", [2026, 8, 15, 12, 30, 0, 0], null],
    ["2026-08-15T12:30+00:99", [2026, 8, 15, 12, 30, 0, 0], 5940e6],
    ["2026-08-15T12:30+0100", [2026, 8, 15, 12, 30, 0, 0], 3600e6],
    ["2026-08-15T12:30+01", [2026, 8, 15, 12, 30, 0, 0], 3600e6],
    ["2026-08-15T12:30:45,5+01:00:30.5", [2026, 8, 15, 12, 30, 45, 500000], 3630.5e6],
    ["2026-08-15T12:30:45.1234567891+05:30", [2026, 8, 15, 12, 30, 45, 123456], 19800e6],
    ["2026-W33-6T00:00+00:00", [2026, 8, 15, 0, 0, 0, 0], 0],
    ["2026W336T0000+0000", [2026, 8, 15, 0, 0, 0, 0], 0],
    ["2026-08-15 12", [2026, 8, 15, 12, 0, 0, 0], null],
    ["2026-08-15T12:30-23:59:59.999999", [2026, 8, 15, 12, 30, 0, 0], -86399999999],
    ["2026-08-15\u000012:00", [2026, 8, 15, 12, 0, 0, 0], null],
    ["2026-08-15T12:30:45.+00:00", [2026, 8, 15, 12, 30, 45, 0], 0],
    ["2026-08-15T12.5", [2026, 8, 15, 12, 0, 0, 500000], null],
    ["0001-01-01T00:00+01:00", [1, 1, 1, 0, 0, 0, 0], 3600e6],
  ];
  it.each(accepted)("accepts %j", (text, fields, offset) => {
    const d = pyFromIsoFormat(text);
    expect(d).not.toBeNull();
    expect([d!.year, d!.month, d!.day, d!.hour, d!.minute, d!.second, d!.microsecond]).toEqual(fields);
    expect(d!.offsetMicros).toBe(offset);
  });
  const rejected = [
    "2026-08-15T12:30:45.", "2026-08-15T1230456", "2026-228", "2026228", "2026-08-15T", "2026-08-15T12:3",
    "2026-08-15T12:30+24:00", " 2026-08-15", "2026-08-15T12:30:45.123abc", "2026-02-29", "2026-08-15T24:00",
  ];
  it.each(rejected)("rejects %j", (text) => {
    expect(pyFromIsoFormat(text)).toBeNull();
  });
});
