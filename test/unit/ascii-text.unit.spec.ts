/** AsciiText: pieces written into one buffer read back as the concatenation, or null when they are not ASCII. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AsciiText } from "../../src/core/ascii-text.js";
import { compareBytes } from "../../src/core/byte-order.js";
import { compareOrder, instantOf } from "../../src/core/ordering.js";
import { historyMember, subjectMember } from "../../src/core/sort-keys.js";

describe("AsciiText", () => {
  it("reads back exactly the concatenation of ASCII pieces and zero-padded numbers, past its first buffer", () => {
    const text = new AsciiText();
    const piece = fc.oneof(fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)), maxLength: 3000 }), fc.tuple(fc.nat({ max: 2 ** 40 }), fc.nat({ max: 20 })));
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), (pieces) => {
        text.start();
        let expected = "";
        for (const p of pieces) {
          if (typeof p === "string") {
            text.put(p);
            expected += p;
          } else {
            text.digits(p[0], p[1]);
            expected += String(p[0]).padStart(p[1], "0");
          }
        }
        expect(text.text()).toBe(expected);
      }),
      { numRuns: 200 },
    );
  });

  it("is null once a piece is not ASCII, or a number is negative or not an integer; start clears that", () => {
    const text = new AsciiText();
    expect(text.start().put("ab").put("é").put("c").text()).toBeNull();
    expect(text.start().put("ab").digits(-1, 3).text()).toBeNull();
    expect(text.start().digits(1.5, 3).text()).toBeNull();
    expect(text.start().put("ok").digits(7, 3).text()).toBe("ok007");
    // Widths narrower than the number, zero, and numbers across 2^31 and up to 2^53 - 1.
    const cases: [number, number, string][] = [
      [0, 0, "0"], [5, 0, "5"], [0, 3, "000"], [123, 1, "123"], [99, 2, "99"], [100, 2, "100"],
      [2 ** 31 - 1, 3, "2147483647"], [2 ** 31, 12, "002147483648"], [2 ** 53 - 1, 0, "9007199254740991"],
      [10 ** 15, 16, "1000000000000000"], [10 ** 15, 15, "1000000000000000"], [7, 20, "00000000000000000007"],
    ];
    for (const [n, width, expected] of cases) expect(text.start().digits(n, width).text(), `${n}/${width}`).toBe(expected);
    // Short pieces are copied by a loop and long ones by the native writer: a non-ASCII character spoils either,
    // a character past U+00FF as well (its low byte would read as ASCII), and a spoiled text stays spoiled.
    for (const bad of ["\u0100", "\u4e01", "\u{1f600}", "\u0080", "\u00ff"]) {
      for (const piece of [`a${bad}`, `${"a".repeat(40)}${bad}`]) {
        expect(text.start().put("x").put(piece).put("y").text(), JSON.stringify(piece)).toBeNull();
      }
    }
    expect(text.start().put("\u0041").put("\u007f").put("b".repeat(100)).text()).toBe("A\u007f" + "b".repeat(100));
    // At the buffer's end: a long piece whose UTF-8 would not fit is not cut to look ASCII.
    for (const fill of [8100, 8150, 8191]) {
      expect(text.start().put("a".repeat(fill)).put(`${"b".repeat(40)}\u00e9`).text(), String(fill)).toBeNull();
      expect(text.start().put("a".repeat(fill)).put(`${"b".repeat(40)}\u{1f600}`).text(), String(fill)).toBeNull();
      expect(text.start().put("a".repeat(fill)).put("b".repeat(50)).text()).toBe("a".repeat(fill) + "b".repeat(50));
    }
  });
});

describe("AsciiText.take", () => {
  it("hands over the bytes written: later writes, past the first buffer too, leave them as they were", () => {
    const text = new AsciiText();
    const first = text.start().put("first ").put("x".repeat(100)).take()!;
    const second = text.start().put("second ").put("y".repeat(20000)).take()!;
    text.start().put("z".repeat(40000));
    expect(first.toString("latin1")).toBe("first " + "x".repeat(100));
    expect(second.toString("latin1")).toBe("second " + "y".repeat(20000));
    expect(text.text()).toBe("z".repeat(40000));
    expect(text.start().put("caf\u00e9 ").put("\u00e9".repeat(40)).take()).toBeNull();
  });
});

describe("historyMember", () => {
  it("is the same string whichever way it is written (ASCII created_at through the buffer, any other concatenated)", () => {
    const id = "muo_" + "a".repeat(64);
    for (const createdAt of ["2026-01-02T10:00:00+00:00", "2026-01-02T10:00:00.123456+05:30", "0001-01-01T00:00:00+14:00", "2026-01-02T10:00:00\u0000+00:00", "2026-01-02T10:00:00\u0001+00:00"]) {
      // The member as the order key's definition writes it: the UTC instant (seconds biased by 10,000,000, 13
      // digits; microseconds, 6), created_at with NUL and \x01 escaped, NUL, the id.
      const { seconds, micros } = instantOf(createdAt);
      const escaped = createdAt.replace(/\u0001/g, "\u0001\u0002").replace(/\u0000/g, "\u0001\u0001");
      const expected = String(seconds + 10_000_000).padStart(13, "0") + String(micros).padStart(6, "0") + escaped + "\u0000" + id;
      expect(historyMember(createdAt, id)).toBe(expected);
    }
  });

  /** Only what the contract accepts is ever compared (a NUL after a fraction, say, is not). */
  const validated = (createdAt: string): boolean => {
    try {
      instantOf(createdAt);
      return true;
    } catch {
      return false;
    }
  };

  // A model keeps its history in compareOrder's order and makes members only to write them (identity-parts.ts):
  // the two orders must be one.
  it("orders as compareOrder does: same instant in other offsets, fractions, NUL and \\x01, other ids", () => {
    const two = (n: number) => String(n).padStart(2, "0");
    const fields = fc.record({
      y: fc.constantFrom(1, 2026, 9999),
      mo: fc.constantFrom(1, 12),
      d: fc.constantFrom(1, 28),
      h: fc.constantFrom(0, 5, 23),
      mi: fc.constantFrom(0, 30),
      s: fc.constantFrom(0, 59),
      frac: fc.constantFrom("", ".5", ".50", ".123456", ".000001"),
      tail: fc.constantFrom("", "\u0000", "\u0001"),
      zone: fc.constantFrom("Z", "+00:00", "+05:30", "-08:00", "+14:00"),
      id: fc.constantFrom("muo_" + "a".repeat(64), "muo_" + "b".repeat(64), "muo_a"),
    });
    type Fields = typeof fields extends fc.Arbitrary<infer F> ? F : never;
    const observation = (t: Fields) => ({ created_at: `${String(t.y).padStart(4, "0")}-${two(t.mo)}-${two(t.d)}T${two(t.h)}:${two(t.mi)}:${two(t.s)}${t.frac}${t.tail}${t.zone}`, observation_id: t.id });
    // The second observation is the first with one to three fields drawn again: most pairs share an instant
    // or most of one, so the later parts of the order (micros, the raw text, the id) decide.
    const keys = ["y", "mo", "d", "h", "mi", "s", "frac", "tail", "zone", "id"] as const;
    const pair = fc.tuple(fields, fields, fc.subarray([...keys], { minLength: 1, maxLength: 3 })).map(([t, other, changed]) => {
      const u = { ...t };
      for (const k of changed) (u as Record<string, unknown>)[k] = other[k];
      return [observation(t), observation(u)] as const;
    });
    fc.assert(
      fc.property(pair.filter(([a, b]) => validated(a.created_at) && validated(b.created_at)), ([a, b]) => {
        expect(Math.sign(compareOrder(a, b))).toBe(Math.sign(compareBytes(historyMember(a.created_at, a.observation_id), historyMember(b.created_at, b.observation_id))));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("subjectMember", () => {
  it("is the level, NUL, each key element followed by \\x01, NUL and the id, whichever way it is written", () => {
    const id = "mus_" + "b".repeat(64);
    const cases: [string, string[]][] = [
      ["item", ["00000000000000aa"]],
      ["set", ["00000000000000aa", `sha256:${"cd".repeat(32)}`]],
      ["none", [id]],
      ["set", ["é-not-ascii", "00000000000000aa"]],
    ];
    for (const [level, key] of cases) {
      expect(subjectMember(level, key, id)).toBe(`${level}\u0000${key.map((k) => `${k}\u0001`).join("")}\u0000${id}`);
    }
  });
});
