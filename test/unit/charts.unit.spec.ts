/**
 * The benchmark pictures (bench/charts.ts, bench/render-charts.ts): well-formed
 * SVG, one bar or point per value, values scaled to the plot (a value v is
 * v/max of the plot height above its bottom), and text escaped.
 */
import { describe, expect, it } from "vitest";
import { barChart, lineChart } from "../../bench/charts.js";
import { latencyChart, memoryChart, throughputChart } from "../../bench/render-charts.js";
import { byClass, parseXml, textOf, XmlError, type XmlElement } from "../support/xml.js";

const n = (e: XmlElement, attr: string) => Number(e.attrs[attr]);

function plotOf(svg: XmlElement) {
  const [plot] = byClass(svg, "plot");
  expect(plot).toBeDefined();
  return { x: n(plot!, "x"), y: n(plot!, "y"), width: n(plot!, "width"), height: n(plot!, "height"), bottom: n(plot!, "y") + n(plot!, "height") };
}

describe("the well-formedness check itself", () => {
  it("accepts a small document and refuses what is not XML", () => {
    expect(textOf(parseXml('<?xml version="1.0"?><a x="1"><b>t &amp; &#60;</b><c/></a>'))).toBe("t & <");
    for (const bad of ["<a><b></a></b>", "<a>x & y</a>", '<a x="<"/>', "<a/><b/>", "<a>", "<a x=1/>", '<a x="1" x="2"/>', "<a>&nbsp;</a>", "text"]) {
      expect(() => parseXml(bad), bad).toThrow(XmlError);
    }
  });
});

describe("barChart", () => {
  const bars = [
    { label: "raw kafkajs", value: 92_937 },
    { label: "fold", value: 11_339 },
    { label: "e2e", value: 9_481 },
    { label: "zero", value: 0 },
  ];

  it("is well-formed SVG with one bar per value, each v/max of the plot height tall, standing on its bottom", () => {
    const svg = parseXml(barChart({ title: "Throughput", unit: "records/s", valueLabel: "throughput", bars }));
    expect(svg.name).toBe("svg");
    const plot = plotOf(svg);
    const rects = byClass(svg, "bar");
    expect(rects).toHaveLength(bars.length);
    const max = 92_937;
    rects.forEach((r, i) => {
      const expected = (bars[i]!.value / max) * plot.height;
      expect(n(r, "height")).toBeCloseTo(expected, 1);
      expect(n(r, "y") + n(r, "height")).toBeCloseTo(plot.bottom, 1);
      expect(n(r, "x")).toBeGreaterThanOrEqual(plot.x);
      expect(n(r, "x") + n(r, "width")).toBeLessThanOrEqual(plot.x + plot.width);
    });
    // The largest bar fills the plot; bars go left to right in input order.
    expect(n(rects[0]!, "y")).toBeCloseTo(plot.y, 1);
    expect(rects.map((r) => n(r, "x"))).toEqual([...rects.map((r) => n(r, "x"))].sort((a, b) => a - b));
    expect(byClass(svg, "bar-value").map(textOf)).toEqual(["92,937", "11,339", "9,481", "0"]);
    expect(byClass(svg, "x-tick").map(textOf)).toEqual(["raw kafkajs", "fold", "e2e", "zero"]);
    expect(textOf(byClass(svg, "y-title")[0]!)).toBe("throughput (records/s)");
  });

  it("escapes < and & in the title, labels and unit", () => {
    const text = barChart({ title: "a < b & c", subtitle: "x<y", unit: "<u>", valueLabel: "v&v", bars: [{ label: "<script>&", value: 3 }] });
    expect(text).not.toContain("<script>");
    expect(text).toContain("&lt;script&gt;&amp;");
    const svg = parseXml(text);
    expect(textOf(byClass(svg, "title")[0]!)).toBe("a < b & c");
    expect(textOf(byClass(svg, "subtitle")[0]!)).toBe("x<y");
    expect(textOf(byClass(svg, "x-tick")[0]!)).toBe("<script>&");
    expect(textOf(byClass(svg, "y-title")[0]!)).toBe("v&v (<u>)");
  });

  it("all zeros or no bars: still a well-formed picture, no NaN", () => {
    const zeros = barChart({ title: "t", unit: "u", valueLabel: "v", bars: [{ label: "a", value: 0 }] });
    expect(zeros).not.toContain("NaN");
    expect(n(byClass(parseXml(zeros), "bar")[0]!, "height")).toBe(0);
    const empty = parseXml(barChart({ title: "t", unit: "u", valueLabel: "v", bars: [] }));
    expect(byClass(empty, "bar")).toHaveLength(0);
    expect(textOf(byClass(empty, "no-data")[0]!)).toBe("no data in this run");
  });

  it("refuses a negative or non-finite value", () => {
    expect(() => barChart({ title: "t", unit: "u", valueLabel: "v", bars: [{ label: "a", value: -1 }] })).toThrow(RangeError);
    expect(() => barChart({ title: "t", unit: "u", valueLabel: "v", bars: [{ label: "a", value: Number.NaN }] })).toThrow(RangeError);
  });
});

describe("lineChart", () => {
  it("linear x: one point per value at x/xmax across and y/ymax up the plot", () => {
    const series = [
      { name: "rss", points: [{ x: 10_000, y: 308 }, { x: 50_000, y: 453 }, { x: 300_000, y: 473 }] },
      { name: "peak & more", points: [{ x: 10_000, y: 308 }, { x: 300_000, y: 562 }] },
    ];
    const svg = parseXml(lineChart({ title: "Memory", xLabel: "identities", yLabel: "RSS", unit: "MiB", xScale: "linear", series }));
    const plot = plotOf(svg);
    const points = byClass(svg, "point");
    expect(points).toHaveLength(5);
    for (const p of points) {
      const x = n(p, "data-x");
      const y = n(p, "data-value");
      expect(n(p, "cx")).toBeCloseTo(plot.x + (x / 300_000) * plot.width, 1);
      expect(n(p, "cy")).toBeCloseTo(plot.bottom - (y / 562) * plot.height, 1);
    }
    expect(points.map((p) => p.attrs["data-series"])).toEqual(["rss", "rss", "rss", "peak & more", "peak & more"]);
    expect(byClass(svg, "line")).toHaveLength(2);
    expect(byClass(svg, "legend").map(textOf)).toEqual(["rss", "peak & more"]);
  });

  it("category x: the distinct x values evenly spaced in order, labelled by xTick", () => {
    const series = [{ name: "2000/s", points: [{ x: 99, y: 217 }, { x: 50, y: 27 }, { x: 99.9, y: 400 }] }];
    const svg = parseXml(lineChart({ title: "Latency", xLabel: "percentile", yLabel: "latency", unit: "ms", xScale: "category", xTick: (x) => `p${x}`, series }));
    const plot = plotOf(svg);
    const byX = new Map(byClass(svg, "point").map((p) => [n(p, "data-x"), p]));
    [50, 99, 99.9].forEach((x, i) => expect(n(byX.get(x)!, "cx")).toBeCloseTo(plot.x + ((i + 0.5) / 3) * plot.width, 1));
    expect(n(byX.get(50)!, "cy")).toBeCloseTo(plot.bottom - (27 / 400) * plot.height, 1);
    expect(byClass(svg, "x-tick").map(textOf)).toEqual(["p50", "p99", "p99.9"]);
  });
});

describe("the benchmark pictures from docs/benchmarks.json's keys", () => {
  it("throughput: a bar for each stage the run measured, none for absent or null keys", () => {
    const svg = parseXml(throughputChart({ fold_records_per_s: 11_339, raw_kafkajs_records_per_s: 92_937, e2e_obs_per_s: null, replay_records_per_s: 16_287 }));
    expect(byClass(svg, "bar").map((b) => n(b, "data-value"))).toEqual([92_937, 11_339, 16_287]);
  });

  it("latency: the flat p50/p99 keys of each rate, or the percentile object when the run wrote one", () => {
    const flat = parseXml(latencyChart({ latency_p50_ms_at_2000: 27, latency_p99_ms_at_2000: 217, latency_p50_ms_at_5000: 119, latency_p99_ms_at_5000: 538 }));
    const points = byClass(flat, "point").map((p) => [p.attrs["data-series"], n(p, "data-x"), n(p, "data-value")]);
    expect(points).toEqual([
      ["offered 2,000 obs/s", 50, 27],
      ["offered 2,000 obs/s", 99, 217],
      ["offered 5,000 obs/s", 50, 119],
      ["offered 5,000 obs/s", 99, 538],
    ]);
    const full = parseXml(latencyChart({ latency_p50_ms_at_2000: 1, latency_percentiles_ms_by_rate: { "2000": { p50: 27, p90: 80, "p99.9": 300, max: 410 } } }));
    expect(byClass(full, "point").map((p) => n(p, "data-value"))).toEqual([27, 80, 300, 410]);
    expect(byClass(full, "x-tick").map(textOf)).toEqual(["p50", "p90", "p99.9", "max"]);
  });

  it("memory: RSS and peak by identities; a null point (worker out of memory) is left out and named", () => {
    const text = memoryChart({ rss_mib_by_identities: { "10000": 308, "300000": null }, rss_peak_mib_by_identities: { "10000": 310, "300000": 900 } });
    const svg = parseXml(text);
    expect(byClass(svg, "point").map((p) => [p.attrs["data-series"], n(p, "data-x"), n(p, "data-value")])).toEqual([
      ["RSS after catching up", 10_000, 308],
      ["peak RSS while folding", 10_000, 310],
      ["peak RSS while folding", 300_000, 900],
    ]);
    expect(textOf(byClass(svg, "subtitle")[0]!)).toContain("no point at 300,000");
  });

  it("memory: the mean RSS from spawn to caught up is a series of its own when the run wrote it; its null points are left out", () => {
    const series = (json: Record<string, unknown>) => byClass(parseXml(memoryChart(json)), "point").map((p) => [p.attrs["data-series"], n(p, "data-x"), n(p, "data-value")]);
    const base = { rss_mib_by_identities: { "10000": 272, "300000": 359 } };
    expect(series({ ...base, rss_mean_mib_by_identities: { "10000": null, "50000": 359, "300000": 446 } }).filter(([s]) => s === "mean RSS, spawn to caught up")).toEqual([
      ["mean RSS, spawn to caught up", 50_000, 359],
      ["mean RSS, spawn to caught up", 300_000, 446],
    ]);
    // A JSON without the key (written before it existed): no mean series.
    expect(new Set(series(base).map(([s]) => s))).toEqual(new Set(["RSS after catching up"]));
  });
});
