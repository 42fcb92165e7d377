/**
 * The offset index and the as-of read rebuilt from it (src/fold/offset-index.ts): deliveries folded through the
 * model into the memory store, then for every point the packet rebuilt from the stored parts and index is
 * compared with the oracle (the reducer over that prefix of the deliveries, test/support/oracle.ts).
 */
import { describe, expect, it } from "vitest";
import { MAX_INDEX_ENTRIES, packetAsOf, type LogPosition } from "../../src/fold/offset-index.js";
import { Prng } from "../../producers/simulation.js";
import { observationFingerprint } from "../../src/core/observation.js";
import { fold, G, history, workload, type Placed } from "../support/indexed-identity.js";
import { expectedPackets } from "../support/oracle.js";

/** How many leading characters two strings share. */
function sharedDigits(a: string, b: string): number {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return i;
}

/** The oracle over the deliveries at or before the points (filtered here, not by the code under test). */
function expected(placed: readonly Placed[], points: readonly LogPosition[], identity: string): string {
  const chosen = placed.filter((p) => points.some((q) => q.partition === p.partition && p.offset <= q.offset)).map((p) => p.observation);
  if (chosen.length === 0) return "";
  return expectedPackets(chosen).get(identity)!;
}

describe("as-of reads from the offset index", () => {
  it("give the reducer's bytes over every prefix, on one partition and on both", async () => {
    for (const seed of [1, 2, 3]) {
      const rng = new Prng(seed * 7);
      const placed = workload(seed, 120);
      const { store, identity, context } = await fold(placed, rng);
      const stored = await history(store, identity, context);
      expect(stored.index).toHaveLength(placed.length);
      expect(stored.index.some((e) => e.includes("<")), "a retry became its payload's earliest").toBe(true);
      const ends = [0, 1].map((p) => placed.filter((d) => d.partition === p).at(-1)!.offset);
      for (const d of placed) {
        const both = [
          { partition: d.partition, offset: d.offset },
          { partition: 1 - d.partition, offset: BigInt(rng.int(0, Number(ends[1 - d.partition]!))) },
        ];
        for (const points of [[both[0]!], both]) {
          const want = expected(placed, points, identity);
          const got = packetAsOf(stored, { points });
          expect(got?.packet).toBe(want);
          expect(got?.used).toBe(placed.filter((p) => points.some((q) => q.partition === p.partition && p.offset <= q.offset)).length);
        }
      }
      // At the latest offsets of both partitions: the live packet.
      const latest = [0, 1].map((p) => ({ partition: p, offset: ends[p]! }));
      expect(packetAsOf(stored, { points: latest })?.packet).toBe(await store.read(G, identity));
    }
  });

  it("resolve refs that share their first digits (hundreds of payloads)", async () => {
    const rng = new Prng(11);
    const placed = workload(11, 900).slice(0, 1000);
    const { store, identity, context } = await fold(placed, rng);
    const stored = await history(store, identity, context);
    expect(stored.index.some((e) => /[+.][0-9a-f]{5,}/.test(e)), "some ref is longer than the minimum").toBe(true);
    // Each ref is the shortest prefix, of 4 digits at least, that no other payload delivered up to it shares
    // (worked out here from the fingerprints; every delivery is indexed, in the order placed).
    const known = new Set<string>();
    placed.forEach((p, i) => {
      const hex = observationFingerprint(p.observation).slice("muof_".length);
      let length = 4;
      for (const other of known) if (other !== hex) length = Math.max(length, sharedDigits(hex, other) + 1);
      known.add(hex);
      expect(/[+.]([0-9a-f]+)/.exec(stored.index[i]!)?.[1]).toBe(hex.slice(0, length));
    });
    for (let i = 0; i < 12; i++) {
      const d = rng.pick(placed);
      const points = [{ partition: d.partition, offset: d.offset }, { partition: 1 - d.partition, offset: 1n << 40n }];
      expect(packetAsOf(stored, { points })?.packet).toBe(expected(placed, points, identity));
    }
  });

  it("past the delivery bound: the rejected packet from the delivery that crossed it, nothing before (the payloads are dropped)", async () => {
    const rng = new Prng(5);
    const placed = workload(5, 1200).slice(0, 1100).map((p, i) => ({ ...p, partition: 0, offset: BigInt(i * 2) }));
    const { store, identity, context } = await fold(placed, rng);
    const stored = await history(store, identity, context);
    expect(stored.index).toHaveLength(MAX_INDEX_ENTRIES);
    expect(stored.deliveries).toBe(1100);
    const crossing = placed[MAX_INDEX_ENTRIES - 1]!.offset;
    expect(packetAsOf(stored, { points: [{ partition: 0, offset: crossing }] })?.packet).toBe(expected(placed, [{ partition: 0, offset: crossing }], identity));
    expect(packetAsOf(stored, { points: [{ partition: 0, offset: 1n << 40n }] })?.packet).toBe(await store.read(G, identity));
    expect(packetAsOf(stored, { points: [{ partition: 0, offset: crossing - 1n }] })).toBeNull();
  });

  it("at a time: the reducer over the deliveries whose timestamp is at or before it, out of offset order included", async () => {
    for (const seed of [6, 7]) {
      const rng = new Prng(seed);
      const placed = workload(seed, 150);
      const { store, identity, context } = await fold(placed, rng);
      const stored = await history(store, identity, context);
      const times = placed.map((p) => Number(p.timestamp));
      expect(times.some((t, i) => i > 0 && t < times[i - 1]!), "timestamps out of offset order").toBe(true);
      for (let i = 0; i < 25; i++) {
        const time = rng.pick(times) + rng.int(-1, 1);
        const chosen = placed.filter((p) => Number(p.timestamp) <= time);
        const got = packetAsOf(stored, { time });
        expect(got?.used ?? 0).toBe(chosen.length);
        if (chosen.length === 0) expect(JSON.parse(got!.packet)).toMatchObject({ status: "empty", accepted_observation_count: 0 });
        else expect(got?.packet).toBe(expectedPackets(chosen.map((p) => p.observation)).get(identity));
        // The last offset used on each partition, found here by the test's own filter.
        const last = [0, 1].flatMap((partition) => {
          const offsets = chosen.filter((p) => p.partition === partition).map((p) => p.offset);
          return offsets.length === 0 ? [] : [{ partition, offset: offsets.reduce((a, b) => (a > b ? a : b)) }];
        });
        expect(got?.last).toEqual(last);
      }
      expect(packetAsOf(stored, { time: Math.max(...times) })?.packet).toBe(await store.read(G, identity));
    }
  });

  it("a delivery indexed without a timestamp (a record that had none) refuses a time, not an offset", async () => {
    const placed = workload(8, 20).map((p, i) => (i === 7 ? { ...p, timestamp: "-1" } : p));
    const { store, identity, context } = await fold(placed, new Prng(8));
    const stored = await history(store, identity, context);
    expect(stored.index[7]).toMatch(/^\d+:\d+[+.]/);
    expect(stored.index[6]).toMatch(/^\d+:\d+\/\d+[+.]/);
    expect(() => packetAsOf(stored, { time: Number(placed[3]!.timestamp) })).toThrow(/indexed without a timestamp/);
    const point = { partition: placed[9]!.partition, offset: placed[9]!.offset };
    expect(packetAsOf(stored, { points: [point] })?.packet).toBe(expected(placed, [point], identity));
  });

  it("refuse an index that does not cover the stored deliveries", async () => {
    const placed = workload(4, 30);
    const { store, identity, context } = await fold(placed, new Prng(4));
    const stored = await history(store, identity, context);
    expect(() => packetAsOf({ ...stored, index: stored.index.slice(1) }, { points: [{ partition: 0, offset: 0n }] })).toThrow(/holds \d+ of the identity's \d+ deliveries/);
  });
});
