/**
 * Run as `node --expose-gc --import tsx retention-probe.ts canonical|plain`:
 * prints the bytes of heap each observation read by the fast path keeps once
 * its text is gone (observation-retention.unit.spec.ts). A process of its own,
 * so the heap holds nothing but the probe. Each text is read at an offset
 * inside PADDING spaces: an observation that kept its text alive would keep
 * the padding too.
 */
import { canonicalJson, observationToPy, type Observation } from "../../src/core/index.js";
import { readObservation } from "../../src/core/observation-reader.js";
import { simulate } from "../../producers/simulation.js";

const PADDING = 4000;
const gc = (globalThis as { gc?: () => void }).gc!;
const plain = process.argv[2] === "plain";

/** Canonical text; or, for the plain tier, whitespace and the keys in reverse order. */
function text(o: Observation): string {
  const canonical = canonicalJson(observationToPy(o));
  if (!plain) return canonical;
  return JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(canonical) as Record<string, unknown>).reverse()), null, 1);
}

const observations = [...simulate({ agents: 50, observationsPerAgent: 80, snapshotEvery: 10, duplicateRate: 0, conflictRate: 0, seed: 7 })].map((d) => d.observation);
const hold: Observation[][] = [];

/** Heap kept per observation read (and held) after full collections. */
function round(part: Observation[]): number {
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  let list: string[] | null = part.map((o) => " ".repeat(PADDING) + text(o));
  const kept: Observation[] = [];
  for (const t of list) kept.push(readObservation(t, PADDING)!.observation);
  list = null;
  hold.push(kept);
  gc();
  gc();
  return (process.memoryUsage().heapUsed - before) / kept.length;
}

// The first round compiles the reader and makes its one-time allocations; the second is the measurement.
round(observations.slice(0, 2000));
console.log(JSON.stringify({ padding: PADDING, perObservation: round(observations.slice(2000, 4000)) }));
