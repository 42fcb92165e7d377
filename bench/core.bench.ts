/**
 * Core speed, side by side in one run: the same utility-project inputs reduced
 * by mufold (in process) and by the reference (loopx, in its own process via
 * the oracle, timed inside Python). Prints a markdown table of deliveries per
 * second and the ratio.
 *
 * The two sides take turns: each input is timed in `--rounds` rounds, each of
 * which runs mufold and then the reference, and each side's time is the median
 * of its samples over all rounds. A slow stretch of the machine then falls on
 * both sides instead of on one (timed one after the other, mufold's side at
 * 1,000 deliveries moved 62k-86k deliveries/s between runs of unchanged code).
 *
 *   npx tsx bench/core.bench.ts [--repeat N] [--rounds R]
 */
import { canonicalJson, observationToPy, utilityProject, utilityProjectBytes } from "../src/core/index.js";
import { simulate } from "../producers/simulation.js";
import { buildStreamInput } from "../test/support/arbitraries.js";
import { ReferenceOracle } from "../test/support/reference.js";
import { runUnderMufoldFlags } from "./mufold-flags.js";

// The embedded reducer runs in `mufold` processes: measure it under their V8 flags.
await runUnderMufoldFlags();

const flag = (name: string, fallback: number): number => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback);
const repeat = flag("--repeat", 20);
const rounds = flag("--rounds", 5);

function identityStream(deliveries: number, seed: number): string {
  const obs = [...simulate({ agents: 1, observationsPerAgent: deliveries, snapshotEvery: 1e9, duplicateRate: 0.1, conflictRate: 0.01, memories: 6, seed })].map((d) => d.observation);
  const first = obs[0]!;
  return canonicalJson({
    observations: obs.map((o) => observationToPy(o)),
    scope: { ...first.scope },
    retrieval_snapshot_ref: first.retrieval_snapshot_ref,
    policy_snapshot_ref: first.policy_snapshot_ref,
  });
}

/** One run of mufold, up to the bytes the CLI writes (its packet and newline, as the reference's side prints). */
function runMufold(text: string): number {
  return utilityProjectBytes(text).stdout.length;
}

/** Runs until the JIT has settled: 1 s and 10 runs (after 3, one run measured 300 deliveries at 11.5 ms a run, against 5.6 ms). */
const WARM_UP_MS = 1000;
const WARM_UP_RUNS = 10;

function warmUp(text: string): void {
  const warmUntil = Date.now() + WARM_UP_MS;
  for (let i = 0; i < WARM_UP_RUNS || Date.now() < warmUntil; i++) runMufold(text);
}

/** Seconds of each of `runs` runs of mufold on `text`. */
function timeMufold(text: string, runs: number): number[] {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    runMufold(text);
    samples.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return samples;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** `total` runs cut into `rounds` turns, at least one each. */
const share = (total: number, round: number): number => Math.max(1, Math.floor(total / rounds) + (round < total % rounds ? 1 : 0));

const inputs: { name: string; text: string; deliveries: number }[] = [
  { name: "one identity, 300 deliveries", text: identityStream(300, 1), deliveries: 300 },
  { name: "one identity, 1,000 deliveries", text: identityStream(1000, 2), deliveries: 1000 },
  ...(["history", "subjects", "deliveries"] as const).map((tier) => {
    const s = buildStreamInput(tier, 42, { fault: "none", calm: true });
    return { name: `generated '${tier}' stream`, text: s.text, deliveries: s.meta.deliveries };
  }),
];

const oracle = await ReferenceOracle.start();
const rows: string[] = [];
for (const input of inputs) {
  const status = JSON.parse(utilityProject(input.text).stdout).status ?? "invalid_request";
  warmUp(input.text);
  const mine: number[] = [];
  const reference: number[] = [];
  const referenceRuns = Math.max(3, Math.round(repeat / 4));
  for (let round = 0; round < rounds; round++) {
    mine.push(...timeMufold(input.text, share(repeat, round)));
    const ref = await oracle.request<{ seconds_per_run: number }>({ op: "time_project", input: input.text, repeat: share(referenceRuns, round) });
    reference.push(ref.seconds_per_run);
  }
  const ours = median(mine);
  const theirs = median(reference);
  rows.push(
    `| ${input.name} (${status}) | ${input.deliveries} | ${(input.deliveries / theirs).toFixed(0)} | ${(input.deliveries / ours).toFixed(0)} | ${(theirs / ours).toFixed(1)}x |`,
  );
}
await oracle.close();
console.log("| input | deliveries | loopx deliveries/s | mufold deliveries/s | mufold / loopx |");
console.log("|---|---|---|---|---|");
for (const r of rows) console.log(r);
