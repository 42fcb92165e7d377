/**
 * deploy/grafana/mufold-dashboard.json against a real fold worker's /metrics:
 * a `mufold fold --http-port` process folds a fresh topic with a malformed
 * record (a dead letter with a reason) and an undecodable batch (a parked
 * partition), so every series the dashboard reads has samples. Each metric
 * name in each query must be on /metrics (a histogram's `_bucket` only when
 * its base is a histogram), and each label the dashboard groups by, matches
 * on or prints must be on that metric's samples.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import type { Settings } from "../../src/config/settings.js";
import { dropPrefix, spawnWorker, stopWorker, testSettings } from "../support/pipeline.js";
import { produceRawBatch } from "../support/kafka-raw.js";
import { encodeRecords, lz4StoredFrame, recordBatch } from "../support/record-batch.js";
import { waitFor } from "../support/wait.js";
import { freePort } from "../support/free-port.js";

const DASHBOARD = fileURLToPath(new URL("../../deploy/grafana/mufold-dashboard.json", import.meta.url));
const PKG_VERSION = (JSON.parse(readFileSync(fileURLToPath(new URL("../../package.json", import.meta.url)), "utf8")) as { version: string }).version;
const LZ4 = 3;
/** Labels Prometheus adds to every series it scrapes: never on /metrics itself. */
const TARGET_LABELS = new Set(["instance", "job"]);
/** PromQL words that are not metric names (functions are recognised by their "(" instead). */
const KEYWORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "inf", "nan"]);

interface Query {
  where: string;
  expr: string;
  legend?: string;
}

interface ParsedQuery {
  metrics: string[];
  /** Labels in by (…) / without (…) / on (…) / ignoring (…). */
  grouping: string[];
  /** Labels in {…} matchers, per metric. */
  matchers: Map<string, string[]>;
}

/** The names and labels a PromQL expression reads (enough PromQL for a dashboard; unknown words count as metric names). */
function parsePromQL(expr: string): ParsedQuery {
  let rest = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""'); // strings: no names inside
  rest = rest.replace(/\[[^\]]*\]/g, " "); // range selectors, [$__rate_interval]
  const grouping: string[] = [];
  rest = rest.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_all, _kw: string, labels: string) => {
    grouping.push(...labels.split(",").map((l) => l.trim()).filter(Boolean));
    return " ";
  });
  const metrics: string[] = [];
  const matchers = new Map<string, string[]>();
  const re = /([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{[^}]*\})?(\s*\()?/g;
  for (let m = re.exec(rest); m !== null; m = re.exec(rest)) {
    const [, word, selector, call] = m;
    if (call !== undefined || KEYWORDS.has(word!.toLowerCase())) continue;
    if (m.index > 0 && /[\d.$]/.test(rest[m.index - 1]!)) continue; // 1e3, 0.99, $var
    metrics.push(word!);
    if (selector !== undefined) {
      const labels = [...selector.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)/g)].map((x) => x[1]!);
      matchers.set(word!, [...(matchers.get(word!) ?? []), ...labels]);
    }
  }
  return { metrics, grouping, matchers };
}

interface Exposition {
  types: Map<string, string>;
  samples: { name: string; labels: Record<string, string>; value: number }[];
}

function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Exposition["samples"] = [];
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type !== null) types.set(type[1]!, type[2]!);
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`unreadable exposition line: ${line}`);
    const labels = Object.fromEntries([...(m[2] ?? "").matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1]!, x[2]!]));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

/** The samples a name in a query selects: a counter's or gauge's own, or a histogram's _bucket/_sum/_count series. */
function seriesOf(exposition: Exposition, name: string): { kind: string; labels: Set<string> } {
  let kind = exposition.types.get(name);
  if (kind === undefined) {
    const suffix = /^(.*)_(bucket|sum|count)$/.exec(name);
    const baseKind = suffix === null ? undefined : exposition.types.get(suffix[1]!);
    // _bucket exists only for a histogram; _sum and _count for a histogram or a summary.
    if (suffix !== null && (baseKind === "histogram" || (baseKind === "summary" && suffix[2] !== "bucket"))) kind = `${baseKind} ${suffix[2]}`;
  }
  if (kind === undefined || kind === "histogram" || kind === "summary") throw new Error(`${name} is not a series on /metrics`);
  const samples = exposition.samples.filter((s) => s.name === name);
  if (samples.length === 0) throw new Error(`${name} is declared on /metrics but has no samples: its labels cannot be checked`);
  return { kind, labels: new Set(samples.flatMap((s) => Object.keys(s.labels))) };
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as {
  panels: { title: string; targets?: { expr: string; legendFormat?: string }[] }[];
  templating: { list: { name: string; type: string; query?: { query: string } | string }[] };
};
const queries: Query[] = [
  ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr, legend: t.legendFormat }))),
  ...dashboard.templating.list
    .filter((v) => v.type === "query")
    .map((v) => {
      const q = typeof v.query === "string" ? v.query : v.query!.query;
      const m = /^label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$/.exec(q);
      if (m === null) throw new Error(`variable ${v.name}: unrecognised query ${q}`);
      return { where: `variable $${v.name}`, expr: `sum by (${m[2]}) (${m[1]})` };
    }),
];

let settings: Settings;
let exposition: Exposition;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  settings = testSettings({ partitions: 2 });
  cleanups.push(() => dropPrefix(settings));
  const observations = [...simulate({ agents: 6, observationsPerAgent: 10, duplicateRate: 0.1, conflictRate: 0.05, snapshotEvery: 5, seed: 91 })].map((d) => d.observation);
  await produce(settings, [...observations.map(observationRecord), { key: null, value: "not json" }]);
  // An LZ4 batch whose content checksum is wrong (the broker stores it as is) parks partition 1.
  const good = observationRecord(observations[0]!);
  const corrupt = lz4StoredFrame(encodeRecords([{ key: String(good.key), value: String(good.value), headers: { schema: "memory_utility_observation_v0" } }]), { corruptChecksum: true });
  await produceRawBatch(settings.brokers, settings.topic, 1, recordBatch({ codec: LZ4, count: 1, payload: corrupt }));

  const port = await freePort();
  const child = spawnWorker(settings, { MUFOLD_HTTP_PORT: String(port) });
  cleanups.push(() => stopWorker(child));
  const text = await waitFor("a dead letter, partition 1 parked and both partitions' lag on /metrics", async () => {
    const body = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text(), () => undefined);
    if (body === undefined) return undefined;
    const parked = body.includes(`mufold_partitions_parked{topic="${settings.topic}",partition="1"} 1`);
    const dead = /^mufold_dead_letters_total\{reason="value_not_json"\} 1$/m.test(body);
    const lag = body.includes(`mufold_consumer_lag{topic="${settings.topic}",partition="0"}`);
    return parked && dead && lag ? body : undefined;
  });
  exposition = parseExposition(text);
});

afterAll(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

describe("the Grafana dashboard against a fold worker's /metrics", () => {
  it("reads the series the operations guide asks for", () => {
    const names = new Set(queries.flatMap((q) => parsePromQL(q.expr).metrics));
    for (const name of [
      "mufold_consumer_lag",
      "mufold_records_consumed_total",
      "mufold_dead_letters_total",
      "mufold_batch_seconds_bucket",
      "mufold_apply_seconds_bucket",
      "mufold_identities_cached",
      "mufold_partitions_parked",
      "mufold_build_info",
    ]) {
      expect(names, name).toContain(name);
    }
    const grouped = queries.filter((q) => /mufold_dead_letters_total/.test(q.expr)).flatMap((q) => parsePromQL(q.expr).grouping);
    expect(grouped).toContain("reason");
  });

  it("every metric name of every query is on /metrics, with samples; _bucket only of a histogram", () => {
    let checked = 0;
    for (const q of queries) {
      const { metrics } = parsePromQL(q.expr);
      expect(metrics.length, `${q.where}: no metric in ${q.expr}`).toBeGreaterThan(0);
      for (const name of metrics) {
        expect(() => seriesOf(exposition, name), `${q.where}: ${q.expr}`).not.toThrow();
        if (name.endsWith("_bucket")) expect(seriesOf(exposition, name).kind).toBe("histogram bucket");
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(queries.length);
  });

  it("every label a query groups by, matches on or prints in its legend is on the metric it reads", () => {
    for (const q of queries) {
      const { metrics, grouping, matchers } = parsePromQL(q.expr);
      const legend = [...(q.legend ?? "").matchAll(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g)].map((m) => m[1]!);
      for (const name of metrics) {
        const { labels } = seriesOf(exposition, name);
        for (const label of [...grouping, ...legend].filter((l) => !TARGET_LABELS.has(l))) {
          expect(labels.has(label), `${q.where}: ${name} has no label "${label}" (it has ${[...labels].join(", ") || "none"})`).toBe(true);
        }
        for (const label of matchers.get(name) ?? []) expect(labels.has(label), `${q.where}: ${name} has no label "${label}"`).toBe(true);
      }
    }
  });

  it("the labels the brief names carry the worker's values: lag by topic and partition, dead letters by reason, build info", () => {
    const lag = exposition.samples.filter((s) => s.name === "mufold_consumer_lag");
    expect(lag.map((s) => s.labels.topic)).toEqual(lag.map(() => settings.topic));
    expect(lag.map((s) => s.labels.partition)).toContain("0");
    const build = exposition.samples.filter((s) => s.name === "mufold_build_info");
    expect(build).toEqual([{ name: "mufold_build_info", labels: { version: PKG_VERSION, node: expect.stringMatching(/^v\d+\.\d+\.\d+/), reducer_version: settings.reducerVersion }, value: 1 }]);
  });

  it("the PromQL reader finds names and labels where they are (so the checks above can fail)", () => {
    expect(parsePromQL('histogram_quantile(0.99, sum by (le) (rate(mufold_batch_seconds_bucket{job="x"}[$__rate_interval])))')).toEqual({
      metrics: ["mufold_batch_seconds_bucket"],
      grouping: ["le"],
      matchers: new Map([["mufold_batch_seconds_bucket", ["job"]]]),
    });
    expect(parsePromQL("sum(mufold_partitions_parked) or vector(0)").metrics).toEqual(["mufold_partitions_parked"]);
    expect(() => seriesOf(exposition, "mufold_no_such_metric")).toThrow(/not a series/);
    expect(() => seriesOf(exposition, "mufold_batch_seconds")).toThrow(/not a series/); // a histogram is read through its series
    expect(() => seriesOf(exposition, "mufold_records_consumed_bucket")).toThrow(/not a series/);
  });
});
