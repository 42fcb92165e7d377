/**
 * How deep the suite goes: MUFOLD_TEST_DEPTH, read here and nowhere else.
 *
 *   full   (the default: `npm test`, CI) every property at its full run count,
 *          every fixture, every differential at MUFOLD_DIFF_RUNS (default 2,000).
 *   quick  (`npm run test:quick`, and the runtime tier on the other pinned
 *          Nodes in scripts/test.sh) the same tests and the same assertions,
 *          on fewer generated cases: see quickRuns, quickOnly and diffRuns.
 *
 * Quick never skips a test and never changes what a test asserts; a run at
 * quick depth is a sample of the full one, which `npm test` still runs whole.
 * Any other value fails, so that a typo cannot quietly shrink a CI run.
 */
type TestDepth = "full" | "quick";

function readDepth(): TestDepth {
  const raw = process.env.MUFOLD_TEST_DEPTH;
  if (raw === undefined || raw === "" || raw === "full") return "full";
  if (raw === "quick") return "quick";
  throw new Error(`MUFOLD_TEST_DEPTH=${raw}: expected "full" (the default) or "quick"`);
}

const QUICK = readDepth() === "quick";

/** A property's run count: `full` at full depth, `quick` (default a tenth, at least 100) at quick depth. */
export function depthRuns(full: number, quick = Math.max(100, Math.round(full / 10))): number {
  return QUICK ? Math.min(full, quick) : full;
}

/** At full depth every item; at quick depth only those `cheap` accepts (a deterministic sample, named in the test). */
export function quickOnly<T>(items: readonly T[], cheap: (item: T) => boolean): T[] {
  return QUICK ? items.filter(cheap) : [...items];
}
