/**
 * The benchmark pictures from the pipeline bench's JSON (docs/benchmarks.json):
 *   bench-throughput.svg  records/s by stage (the stages this run measured)
 *   bench-latency.svg     produce-to-readback latency percentiles at each offered rate
 *   bench-memory.svg      worker RSS (after catching up, and peak) vs identities
 *
 *   npx tsx bench/render-charts.ts docs/benchmarks.json docs/
 *
 * bench/pipeline.bench.ts calls writeBenchmarkCharts after writing --json, so
 * one run refreshes the numbers and the pictures.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { barChart, lineChart, type Bar, type Series } from "./charts.js";

type BenchJson = Record<string, unknown>;

/** The throughput keys in the order of the pipeline (a key absent or null in the run is left out). */
const STAGES: readonly (readonly [key: string, label: string])[] = [
  ["produce_records_per_s", "produce\n(1 producer)"],
  ["kcat_records_per_s", "kcat\nconsumption"],
  ["raw_kafkajs_records_per_s", "raw kafkajs\nconsumption"],
  ["fold_records_per_s", "fold\n(1 worker)"],
  ["e2e_obs_per_s", "end to end\n(2 workers)"],
  ["replay_records_per_s", "replay\n(1 process)"],
  ["replay_2_workers_records_per_s", "replay\n(--workers 2)"],
];

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

function provenance(json: BenchJson): string | undefined {
  const parts: string[] = [];
  if (typeof json.git_commit === "string") parts.push(`commit ${json.git_commit.slice(0, 7)}${json.git_dirty === true ? " (dirty)" : ""}`);
  if (typeof json.measured_at === "string") parts.push(`measured ${json.measured_at.slice(0, 10)}`);
  return parts.length > 0 ? parts.join(", ") : undefined;
}

export function throughputChart(json: BenchJson): string {
  const bars: Bar[] = STAGES.filter(([key]) => finite(json[key])).map(([key, label]) => ({ label, value: json[key] as number }));
  const records = finite(json.records) ? `${json.records.toLocaleString("en-US")} records per stage` : undefined;
  const subtitle = [provenance(json), records].filter((s) => s !== undefined).join(", ");
  return barChart({ title: "Pipeline throughput by stage", subtitle, unit: "records/s", valueLabel: "throughput", bars });
}

/** x of a percentile on the chart: its number, with "max" as 100. */
const percentileX = (name: string): number | undefined => (name === "max" ? 100 : /^p(\d+(\.\d+)?)$/.test(name) ? Number(name.slice(1)) : undefined);

/**
 * Percentiles (ms) by offered rate: from `latency_percentiles_ms_by_rate` ({rate: {p50, p90, …, max}}) when the run
 * wrote it, else from the flat issue-10 keys `latency_p<P>_ms_at_<rate>`.
 */
export function latencyPercentiles(json: BenchJson): Map<number, Map<number, number>> {
  const out = new Map<number, Map<number, number>>();
  const put = (rate: number, x: number | undefined, ms: unknown) => {
    if (x === undefined || !finite(ms) || !Number.isFinite(rate)) return;
    if (!out.has(rate)) out.set(rate, new Map());
    out.get(rate)!.set(x, ms);
  };
  const byRate = json.latency_percentiles_ms_by_rate;
  if (typeof byRate === "object" && byRate !== null) {
    for (const [rate, percentiles] of Object.entries(byRate as Record<string, Record<string, unknown>>)) {
      for (const [name, ms] of Object.entries(percentiles ?? {})) put(Number(rate), percentileX(name), ms);
    }
  } else {
    for (const [key, ms] of Object.entries(json)) {
      const m = /^latency_p(\d+)_ms_at_(\d+)$/.exec(key);
      if (m !== null) put(Number(m[2]), Number(m[1]), ms);
    }
  }
  return new Map([...out].sort(([a], [b]) => a - b));
}

export function latencyChart(json: BenchJson): string {
  const series: Series[] = [...latencyPercentiles(json)].map(([rate, points]) => ({
    name: `offered ${rate.toLocaleString("en-US")} obs/s`,
    points: [...points].map(([x, y]) => ({ x, y })),
  }));
  const seconds = finite(json.latency_seconds) ? `, ${json.latency_seconds} s at each rate` : "";
  return lineChart({
    title: "Produce-to-readback latency distribution",
    subtitle: `${provenance(json) ?? "this run"}${seconds}; two fold workers`,
    xLabel: "percentile",
    yLabel: "latency",
    unit: "ms",
    xScale: "category",
    xTick: (x) => (x === 100 ? "max" : `p${x}`),
    series,
  });
}

function pointsOf(v: unknown): { x: number; y: number }[] {
  if (typeof v !== "object" || v === null) return [];
  return Object.entries(v as Record<string, unknown>)
    .filter((e): e is [string, number] => finite(e[1]))
    .map(([x, y]) => ({ x: Number(x), y }))
    .filter((p) => Number.isFinite(p.x));
}

export function memoryChart(json: BenchJson): string {
  const series: Series[] = [
    { name: "RSS after catching up", points: pointsOf(json.rss_mib_by_identities) },
    { name: "peak RSS while folding", points: pointsOf(json.rss_peak_mib_by_identities) },
    { name: "mean RSS, spawn to caught up", points: pointsOf(json.rss_mean_mib_by_identities) },
  ].filter((s) => s.points.length > 0);
  // A worker that ran out of memory has a null point: say so, rather than let the line end quietly.
  const died = Object.entries((json.rss_mib_by_identities ?? {}) as Record<string, unknown>)
    .filter(([, v]) => v === null)
    .map(([n]) => Number(n).toLocaleString("en-US"));
  const limits = [
    finite(json.rss_cache_size) ? `cache ${json.rss_cache_size.toLocaleString("en-US")} identities` : undefined,
    finite(json.rss_max_old_space_mb) ? `--max-old-space-size=${json.rss_max_old_space_mb}` : undefined,
    died.length > 0 ? `no point at ${died.join(", ")}: the worker exited before catching up` : undefined,
  ].filter((s) => s !== undefined);
  return lineChart({
    title: "Fold worker memory vs identities",
    subtitle: [provenance(json), ...limits].filter((s) => s !== undefined).join("; "),
    xLabel: "identities folded (one observation each)",
    yLabel: "RSS",
    unit: "MiB",
    xScale: "linear",
    series,
  });
}

/** The three pictures as [file name, SVG]. */
export function benchmarkCharts(json: BenchJson): [string, string][] {
  return [
    ["bench-throughput.svg", throughputChart(json)],
    ["bench-latency.svg", latencyChart(json)],
    ["bench-memory.svg", memoryChart(json)],
  ];
}

/** Write the pictures into `dir`; returns the paths written. */
export function writeBenchmarkCharts(json: BenchJson, dir: string): string[] {
  return benchmarkCharts(json).map(([name, svg]) => {
    const path = join(dir, name);
    writeFileSync(path, svg + "\n");
    return path;
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const [input, dir] = process.argv.slice(2);
  if (input === undefined || dir === undefined) {
    process.stderr.write("usage: npx tsx bench/render-charts.ts BENCHMARKS.json OUTPUT_DIR\n");
    process.exit(2);
  }
  for (const path of writeBenchmarkCharts(JSON.parse(readFileSync(input, "utf8")) as BenchJson, dir)) process.stdout.write(`${path}\n`);
}
