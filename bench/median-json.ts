/**
 * The median of several runs of the pipeline bench, as docs/benchmarks.json
 * records it (issue 35 judges on the median of three), and the runs side by
 * side for docs/benchmarks.md:
 *
 *   npx tsx bench/median-json.ts --out docs/benchmarks.json RUN1.json RUN2.json RUN3.json
 *
 * Each number is the median of that number across the runs (each value from
 * within one run: ratios are the median of the runs' ratios, not a ratio of
 * medians). A number some runs measured and others did not is null; the runs
 * must be of one commit and one command (but for their --json), or nothing is written. Lists (the raw
 * points behind the charts) and texts come from the run whose `fold_over_raw`
 * is the median. The charts are drawn again from the median. Prints a table of
 * the bounds' keys: each run, then the median.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { writeBenchmarkCharts } from "./render-charts.js";

type Json = Record<string, unknown>;

/** Issue 35's bounds, in its order, with the keys they compare. */
const TABLE_KEYS = [
  "worker_young_allocated_bytes_per_record", "worker_promoted_bytes_per_record", "worker_cpu_us_per_record", "worker_main_thread_us_per_record",
  "worker_other_threads_us_per_record", "fold_over_raw", "replay_over_raw", "e2e_obs_per_s", "latency_p99_ms_at_5000", "replay_cpu_us_per_record",
  "replay_2_workers_cpu_us_per_record", "fold_2_workers_cpu_us_per_record", "rss_mib_at_10k_identities", "rss_mib_at_300k_identities",
  "rss_mib_at_1m_identities", "core_over_reference_300", "core_over_reference_1000", "mufold_over_naive_loopx_fold", "redis_bytes_per_delivery",
  "plan_us_per_delivery_n10", "plan_us_per_delivery_n1000", "fold_records_per_s", "raw_kafkajs_records_per_s", "replay_over_live", "replay_2_workers_over_1",
] as const;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The median run's value for what is not a number; the median of the numbers; null when only some runs have one. */
function combine(values: readonly unknown[], pick: number): unknown {
  if (values.every(isObject)) {
    const keys = new Set(values.flatMap((v) => Object.keys(v as Json)));
    return Object.fromEntries([...keys].map((k) => [k, combine(values.map((v) => (v as Json)[k]), pick)]));
  }
  if (values.every(isNumber)) return Number(median(values as number[]).toPrecision(12));
  if (values.some(isNumber)) return null;
  return values[pick];
}

/** A run's command without where it wrote its JSON (each run writes its own file). */
const withoutOutput = (command: string) => command.replace(/ --json \S+/, "");

/** `out`: where the median is written, which its command names. */
export function medianOfRuns(runs: readonly Json[], out = "docs/benchmarks.json"): Json {
  if (runs.length < 3 || runs.length % 2 === 0) throw new Error(`give an odd number of runs, three or more (got ${runs.length})`);
  for (const key of ["git_commit", "command", "node"] as const) {
    const seen = new Set(runs.map((r) => (key === "command" ? withoutOutput(String(r[key])) : String(r[key]))));
    if (seen.size !== 1) throw new Error(`the runs differ in ${key}: ${[...seen].join(" / ")}`);
  }
  if (runs.some((r) => r.git_dirty !== false)) throw new Error("a run was measured on a dirty tree");
  const order = runs.map((r, i) => [Number(r.fold_over_raw), i] as const).sort((a, b) => a[0] - b[0]);
  const pick = order[order.length >> 1]![1];
  const med = combine(runs, pick) as Json;
  med.command = `${withoutOutput(String(runs[0]!.command))} --json ${out}`;
  med.median_of = runs.map((r) => ({ measured_at: r.measured_at, seconds_total: r.seconds_total }));
  return med;
}

const cell = (v: unknown) => (v === null || v === undefined ? "—" : typeof v === "number" ? v.toLocaleString("en-US", { maximumFractionDigits: 3 }) : String(v));

export function runsTable(runs: readonly Json[], med: Json): string {
  const head = `| key | ${runs.map((_, i) => `run ${i + 1}`).join(" | ")} | median |`;
  const rule = `|---|${runs.map(() => "---|").join("")}---|`;
  const rows = TABLE_KEYS.map((k) => `| \`${k}\` | ${runs.map((r) => cell(r[k])).join(" | ")} | ${cell(med[k])} |`);
  return [head, rule, ...rows].join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { values, positionals } = parseArgs({ options: { out: { type: "string" } }, allowPositionals: true });
  if (values.out === undefined || positionals.length === 0) {
    process.stderr.write("usage: npx tsx bench/median-json.ts --out docs/benchmarks.json RUN1.json RUN2.json RUN3.json\n");
    process.exit(2);
  }
  const runs = positionals.map((p) => JSON.parse(readFileSync(p, "utf8")) as Json);
  const med = medianOfRuns(runs, values.out);
  writeFileSync(values.out, JSON.stringify(med, null, 2) + "\n");
  for (const path of writeBenchmarkCharts(med, dirname(values.out))) process.stderr.write(`wrote ${path}\n`);
  process.stdout.write(runsTable(runs, med) + "\n");
}
