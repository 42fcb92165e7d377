import { describe, expect, it } from "vitest";
import { pyFromIsoFormat } from "../../src/core/index.js";
import { instantOf } from "../../src/core/ordering.js";

/** 1970-01-01 in utcInstant's seconds: its proleptic Gregorian ordinal (Python's `date(1970, 1, 1).toordinal()`, 719,163) in days. */
const EPOCH_SECONDS = 719_163 * 86_400;

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

describe("instantOf", () => {
  it("gives each timestamp its own instant, however many and however alike their endings", () => {
    // The same time of day on 3,000 days (alike in their last characters), then each again in reverse: every answer
    // is checked against Date.parse, so a remembered instant handed to another timestamp would show.
    const days = Array.from({ length: 3_000 }, (_, i) => new Date(Date.UTC(2020, 0, 1) + i * 86_400_000).toISOString().slice(0, 10));
    const texts = days.flatMap((d) => [`${d}T12:34:56Z`, `${d}T12:34:56.5+00:00`, `${d} 12:34:56-01:00`]);
    for (const text of [...texts, ...texts.reverse()]) {
      const ms = Date.parse(text.replace(" ", "T"));
      expect(instantOf(text), text).toEqual({ seconds: Math.floor(ms / 1000) + EPOCH_SECONDS, micros: (ms % 1000) * 1000 });
    }
  });
});
