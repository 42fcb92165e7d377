import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareBytes, sortedByBytes } from "../../src/core/byte-order.js";
import { compareOrder, sortedInOrder } from "../../src/core/ordering.js";
import {
  canonicalJson,
  contextOfObservation,
  emptyIdentityState,
  foldDelivery,
  observationToPy,
  projectIdentityState,
  reducerIdentity,
  validateObservation,
  type Observation,
} from "../../src/core/index.js";
import { assembleParts, computeParts } from "../../src/core/packet-parts.js";
import { simulate } from "../../producers/simulation.js";

describe("compareBytes", () => {
  it("orders by UTF-8 bytes (code points), not UTF-16 units", () => {
    const astral = "\u{1F600}"; // F0 9F 98 80 in UTF-8, a surrogate pair in UTF-16
    expect(Buffer.compare(Buffer.from(astral), Buffer.from("\uFFFF"))).toBe(1); // the expected order, from the encodings
    expect(compareBytes(astral, "\uFFFF")).toBeGreaterThan(0);
    expect(astral < "\uFFFF").toBe(true); // what `<` says instead
    const words = ["b", "\uE000", "a\u{10000}", "a", "\uD7FF", "\u{1F600}", "", "ab"];
    const byEncoding = [...words].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect([...words].sort(compareBytes)).toEqual(byEncoding);
  });
});

describe("sortedByBytes", () => {
  const byEncoding = (words: string[]) => [...words].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  it("sorts ASCII keys (the native comparison's case) in byte order", () => {
    const words = ["b", "a\u0000z", "a", "", "ab", "A", "a\u0001", "~"];
    expect(sortedByBytes([...words], (w) => w)).toEqual(byEncoding(words));
  });
  it("sorts keys with units at or above U+D800 in byte order, where UTF-16 order differs", () => {
    const words = ["b", "\uE000", "a\u{10000}", "a", "\uD7FF", "\u{1F600}", "\uFFFF", "ab"];
    expect([...words].sort()).not.toEqual(byEncoding(words)); // the case the check exists for
    expect(sortedByBytes([...words], (w) => w)).toEqual(byEncoding(words));
    expect(sortedByBytes(words.map((w) => ({ member: w })), (x) => x.member).map((x) => x.member)).toEqual(byEncoding(words));
  });
});

describe("the fragment path orders history like the reducer when created_at holds astral characters", () => {
  it("two entries at one instant whose separators straddle U+FFFF", () => {
    const all = [...simulate({ agents: 1, observationsPerAgent: 40, scopesPerAgent: 1, snapshotEvery: 1000, seed: 9 })].map((d) => d.observation);
    const context = contextOfObservation(all[0]!, "memory_utility_reducer_v0");
    const same = all.filter((o) => reducerIdentity(contextOfObservation(o, "memory_utility_reducer_v0")) === reducerIdentity(context));
    const ids = [...new Set(same.map((o) => o.observation_id))];
    expect(ids.length).toBeGreaterThanOrEqual(2);
    const pick = (id: string, sep: string): Observation => {
      const py = observationToPy(same.find((o) => o.observation_id === id)!);
      py.created_at = `2026-11-01${sep}00:00:00+00:00`;
      return validateObservation(py);
    };
    const state = emptyIdentityState();
    for (const o of [pick(ids[0]!, "\u{1F600}"), pick(ids[1]!, "\uFFFF")]) foldDelivery(state, o);
    expect(assembleParts(computeParts(context, state))).toBe(canonicalJson(projectIdentityState(context, state)));
  });
});

describe("sortedInOrder", () => {
  it("is the reference's order key sort: instant, then raw created_at, then id", () => {
    // Equal instants written with different offsets, equal created_at with different ids, and plain time order.
    const items = [
      { created_at: "2026-11-01T01:00:00+01:00", observation_id: "b" },
      { created_at: "2026-11-01T00:00:00Z", observation_id: "c" },
      { created_at: "2026-11-01T00:00:00+00:00", observation_id: "a" },
      { created_at: "2026-11-01T00:00:00Z", observation_id: "a" },
      { created_at: "2026-10-31T23:59:59.999999Z", observation_id: "z" },
      { created_at: "2026-11-01T00:00:00.000001Z", observation_id: "0" },
    ];
    // Expected by hand: the instant first; at 00:00:00Z the raw strings in code-point order
    // ("…T00:00:00+00:00" < "…T00:00:00Z" < "…T01:00:00+01:00"), then, for one raw string, the ids.
    const expected = [
      ["2026-10-31T23:59:59.999999Z", "z"],
      ["2026-11-01T00:00:00+00:00", "a"],
      ["2026-11-01T00:00:00Z", "a"],
      ["2026-11-01T00:00:00Z", "c"],
      ["2026-11-01T01:00:00+01:00", "b"],
      ["2026-11-01T00:00:00.000001Z", "0"],
    ];
    expect(sortedInOrder(items).map((o) => [o.created_at, o.observation_id])).toEqual(expected);
    expect(sortedInOrder(items)).toEqual([...items].sort(compareOrder));
  });

  it("agrees with a comparison sort by compareOrder over years, offsets and shared seconds", () => {
    const pad = (n: number, w: number) => String(n).padStart(w, "0");
    const stamp = fc
      .record({
        year: fc.constantFrom(1, 1970, 2026, 2027, 9999),
        month: fc.integer({ min: 1, max: 12 }),
        day: fc.integer({ min: 1, max: 28 }),
        hour: fc.integer({ min: 0, max: 23 }),
        minute: fc.constantFrom(0, 1, 59),
        second: fc.constantFrom(0, 30, 59),
        micros: fc.option(fc.constantFrom(0, 1, 500000, 999999)),
        offset: fc.constantFrom("Z", "+00:00", "+01:00", "-05:30", "+14:00"),
      })
      .map((t) => `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}T${pad(t.hour, 2)}:${pad(t.minute, 2)}:${pad(t.second, 2)}${t.micros === null ? "" : "." + pad(t.micros, 6)}${t.offset}`);
    const item = fc.record({ created_at: stamp, observation_id: fc.constantFrom("a", "b", "muo_1", "muo_2") });
    fc.assert(
      fc.property(fc.array(item, { maxLength: 200 }), (items) => {
        expect(sortedInOrder(items)).toEqual([...items].sort(compareOrder));
      }),
      { numRuns: 300 },
    );
    // More items than its keys' index bits hold.
    const many = Array.from({ length: 9000 }, (_, i) => ({ created_at: `2026-01-01T00:00:${pad(i % 60, 2)}Z`, observation_id: pad(9000 - i, 5) }));
    expect(sortedInOrder(many)).toEqual([...many].sort(compareOrder));
  });
});
