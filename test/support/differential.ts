/** Knobs and helpers shared by the differential tests. */
import { depthRuns } from "./depth.js";

/** Streams per run: MUFOLD_DIFF_RUNS, default 2,000 (the CI size; 200 at MUFOLD_TEST_DEPTH=quick, ./depth.ts). */
export function diffRuns(fallback = depthRuns(2000, 200)): number {
  const v = Number(process.env.MUFOLD_DIFF_RUNS ?? fallback);
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

/** The seed of this run, printed so a failure can be replayed with MUFOLD_DIFF_SEED. */
export function diffSeed(): number {
  const fromEnv = process.env.MUFOLD_DIFF_SEED;
  return fromEnv !== undefined ? Number(fromEnv) : (Date.now() ^ (process.pid << 8)) >>> 0;
}

/** Where two strings first differ, with context, for a readable failure. */
export function firstDifference(got: string, expected: string): string {
  let i = 0;
  while (i < got.length && i < expected.length && got[i] === expected[i]) i++;
  const from = Math.max(0, i - 120);
  return `at char ${i}:\n  mufold: …${got.slice(from, i + 120)}…\n  loopx:  …${expected.slice(from, i + 120)}…`;
}
