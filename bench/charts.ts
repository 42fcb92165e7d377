/**
 * A small SVG chart renderer for the benchmark pictures (docs/bench-*.svg):
 * a bar chart and a line chart with points, each with a title, a subtitle,
 * axes with tick labels, axis titles with units, and the value of every bar
 * written on it. Pure functions from data to an SVG string; no dependencies.
 *
 * Scaling is deliberately plain so a reader can check it: the value axis runs
 * from 0 to the largest value shown (a bar of value v is v/max of the plot
 * height tall), with grid lines at round steps below that.
 */

export interface Bar {
  label: string;
  value: number;
}

export interface BarChartSpec {
  title: string;
  subtitle?: string;
  /** Unit of the values, shown in the value axis title. */
  unit: string;
  /** Title of the value axis (the unit is appended). */
  valueLabel: string;
  bars: readonly Bar[];
}

export interface Point {
  x: number;
  y: number;
}

export interface Series {
  name: string;
  points: readonly Point[];
}

export interface LineChartSpec {
  title: string;
  subtitle?: string;
  xLabel: string;
  yLabel: string;
  /** Unit of the y values (in the y axis title and the point tooltips). */
  unit: string;
  /**
   * "linear": x positions proportional to x from 0 to the largest x;
   * "category": the distinct x values, sorted, evenly spaced (percentiles, rates).
   */
  xScale: "linear" | "category";
  /** How an x value is written on the x axis (default: the number with thousands separators). */
  xTick?: (x: number) => string;
  series: readonly Series[];
}

export const WIDTH = 760;
export const HEIGHT = 440;
/** The plot area's distance from the picture's edges: title, subtitle and legend above, tick labels and the x title below. */
const MARGIN = { top: 108, right: 64, bottom: 84, left: 88 };
/** The value axis goes this far above the plot's top (the largest value), so labels above it stay inside the frame. */
const HEADROOM = 26;
const PALETTE = ["#3b6ea5", "#d9822b", "#4e9a57", "#a8445b", "#7a5ea8", "#8a7a3a"];
const FONT = "font-family=\"-apple-system, 'Segoe UI', Helvetica, Arial, sans-serif\"";

/** Escape text for an XML text node or a double-quoted attribute. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** Coordinates with two decimals at most (the SVG stays small and diffs stay quiet). */
const num = (x: number): string => String(Math.round(x * 100) / 100);

export function formatNumber(x: number): string {
  return x.toLocaleString("en-US", { maximumFractionDigits: Math.abs(x) >= 100 ? 0 : 2 });
}

/** A round step (1, 2 or 5 × 10^k) giving about `count` intervals up to `max`. */
export function niceStep(max: number, count = 5): number {
  if (!(max > 0)) return 1;
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const f = raw / power;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * power;
}

function ticks(max: number): number[] {
  const step = niceStep(max);
  const out: number[] = [];
  for (let t = 0; t <= max * (1 + 1e-9); t += step) out.push(Math.round(t / step) * step);
  return out;
}

function assertValues(values: readonly number[], what: string): void {
  for (const v of values) if (!Number.isFinite(v) || v < 0) throw new RangeError(`${what}: ${v} is not a finite non-negative number`);
}

interface Frame {
  x: number;
  y: number;
  width: number;
  height: number;
}

const PLOT: Frame = { x: MARGIN.left, y: MARGIN.top, width: WIDTH - MARGIN.left - MARGIN.right, height: HEIGHT - MARGIN.top - MARGIN.bottom };

/**
 * The picture, its title and subtitle, the plot frame, the value axis (0 … max) with grid lines and its title.
 * `rect.plot` is the scaled area: 0 at its bottom, the largest value at its top.
 */
function frame(title: string, subtitle: string | undefined, yTitle: string, yMax: number, body: string[]): string {
  const bottom = PLOT.y + PLOT.height;
  const grid = ticks(yMax).map((t) => {
    const y = yMax > 0 ? bottom - (t / yMax) * PLOT.height : bottom;
    return (
      `<line class="grid" x1="${num(PLOT.x)}" y1="${num(y)}" x2="${num(PLOT.x + PLOT.width)}" y2="${num(y)}" stroke="#e3e3e3"/>` +
      `<text class="y-tick" x="${num(PLOT.x - 8)}" y="${num(y + 4)}" text-anchor="end" font-size="12" fill="#444">${escapeXml(formatNumber(t))}</text>`
    );
  });
  const yTitleX = 22;
  const yTitleY = PLOT.y + PLOT.height / 2;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" ${FONT}>`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<text class="title" x="${WIDTH / 2}" y="28" text-anchor="middle" font-size="18" font-weight="600" fill="#222">${escapeXml(title)}</text>`,
    subtitle === undefined ? "" : `<text class="subtitle" x="${WIDTH / 2}" y="50" text-anchor="middle" font-size="12" fill="#666">${escapeXml(subtitle)}</text>`,
    `<rect class="plot" x="${num(PLOT.x)}" y="${num(PLOT.y)}" width="${num(PLOT.width)}" height="${num(PLOT.height)}" fill="none"/>`,
    ...grid,
    ...body,
    `<line class="axis" x1="${num(PLOT.x)}" y1="${num(PLOT.y - HEADROOM)}" x2="${num(PLOT.x)}" y2="${num(bottom)}" stroke="#333"/>`,
    `<line class="axis" x1="${num(PLOT.x)}" y1="${num(bottom)}" x2="${num(PLOT.x + PLOT.width)}" y2="${num(bottom)}" stroke="#333"/>`,
    `<text class="y-title" x="${yTitleX}" y="${num(yTitleY)}" text-anchor="middle" font-size="13" fill="#333" transform="rotate(-90 ${yTitleX} ${num(yTitleY)})">${escapeXml(yTitle)}</text>`,
    `</svg>`,
  ]
    .filter((l) => l !== "")
    .join("\n");
}

/** A label under the x axis; "\n" in it starts a second line. */
function xLabel(x: number, text: string, cls: string): string {
  const lines = text.split("\n");
  const spans = lines.map((l, i) => `<tspan x="${num(x)}" dy="${i === 0 ? 0 : 15}">${escapeXml(l)}</tspan>`).join("");
  return `<text class="${cls}" x="${num(x)}" y="${num(PLOT.y + PLOT.height + 20)}" text-anchor="middle" font-size="12" fill="#333">${spans}</text>`;
}

function xTitle(text: string): string {
  return `<text class="x-title" x="${num(PLOT.x + PLOT.width / 2)}" y="${HEIGHT - 14}" text-anchor="middle" font-size="13" fill="#333">${escapeXml(text)}</text>`;
}

/** Vertical bars, one per value, each with its value written above it. */
export function barChart(spec: BarChartSpec): string {
  const values = spec.bars.map((b) => b.value);
  assertValues(values, spec.title);
  const max = Math.max(0, ...values);
  const bottom = PLOT.y + PLOT.height;
  const slot = spec.bars.length > 0 ? PLOT.width / spec.bars.length : PLOT.width;
  const barWidth = Math.min(90, slot * 0.6);
  const body = spec.bars.flatMap((b, i) => {
    const height = max > 0 ? (b.value / max) * PLOT.height : 0;
    const cx = PLOT.x + slot * (i + 0.5);
    const tip = `${b.label.replace(/\n/g, " ")}: ${formatNumber(b.value)} ${spec.unit}`;
    return [
      `<rect class="bar" data-value="${b.value}" x="${num(cx - barWidth / 2)}" y="${num(bottom - height)}" width="${num(barWidth)}" height="${num(height)}" fill="${PALETTE[0]}"><title>${escapeXml(tip)}</title></rect>`,
      `<text class="bar-value" x="${num(cx)}" y="${num(bottom - height - 6)}" text-anchor="middle" font-size="12" font-weight="600" fill="#222">${escapeXml(formatNumber(b.value))}</text>`,
      xLabel(cx, b.label, "x-tick"),
    ];
  });
  if (spec.bars.length === 0) body.push(noData());
  return frame(spec.title, spec.subtitle, `${spec.valueLabel} (${spec.unit})`, max, body);
}

function noData(): string {
  return `<text class="no-data" x="${num(PLOT.x + PLOT.width / 2)}" y="${num(PLOT.y + PLOT.height / 2)}" text-anchor="middle" font-size="14" fill="#888">no data in this run</text>`;
}

/** One polyline with a point per (x, y) for each series, and a legend when there is more than one series. */
export function lineChart(spec: LineChartSpec): string {
  const all = spec.series.flatMap((s) => s.points);
  assertValues(
    all.map((p) => p.y),
    spec.title,
  );
  assertValues(
    all.map((p) => p.x),
    spec.title,
  );
  const yMax = Math.max(0, ...all.map((p) => p.y));
  const xs = [...new Set(all.map((p) => p.x))].sort((a, b) => a - b);
  const xMax = Math.max(0, ...xs);
  const tick = spec.xTick ?? formatNumber;
  const bottom = PLOT.y + PLOT.height;
  const xOf =
    spec.xScale === "category" ? (x: number) => PLOT.x + (PLOT.width * (xs.indexOf(x) + 0.5)) / xs.length : (x: number) => PLOT.x + (xMax > 0 ? (x / xMax) * PLOT.width : 0);
  const yOf = (y: number) => bottom - (yMax > 0 ? (y / yMax) * PLOT.height : 0);
  const xTicks = spec.xScale === "category" ? xs : ticks(xMax);
  const body: string[] = xTicks.map((x) => xLabel(xOf(x), tick(x), "x-tick"));
  spec.series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length]!;
    const points = [...s.points].sort((a, b) => a.x - b.x);
    if (points.length > 1) {
      body.push(`<polyline class="line" points="${points.map((p) => `${num(xOf(p.x))},${num(yOf(p.y))}`).join(" ")}" fill="none" stroke="${color}" stroke-width="2"/>`);
    }
    for (const p of points) {
      const tip = `${s.name}, ${spec.xLabel} ${tick(p.x)}: ${formatNumber(p.y)} ${spec.unit}`;
      // The value goes on the side away from the other series: below when another series is higher at this x.
      // An equal value an earlier series already wrote at this x is not written twice.
      const below = spec.series.some((o) => o !== s && o.points.some((q) => q.x === p.x && q.y > p.y));
      const written = spec.series.slice(0, i).some((o) => o.points.some((q) => q.x === p.x && q.y === p.y));
      body.push(
        `<circle class="point" data-series="${escapeXml(s.name)}" data-x="${p.x}" data-value="${p.y}" cx="${num(xOf(p.x))}" cy="${num(yOf(p.y))}" r="4" fill="${color}"><title>${escapeXml(tip)}</title></circle>`,
      );
      if (!written) {
        body.push(`<text class="point-value" x="${num(xOf(p.x) + 7)}" y="${num(yOf(p.y) + (below ? 17 : -8))}" font-size="11" fill="${color}">${escapeXml(formatNumber(p.y))}</text>`);
      }
    }
  });
  if (spec.series.length > 1) {
    // One row between the subtitle and the plot; entries spaced by an estimate of their text width.
    let x = PLOT.x;
    const y = 76;
    spec.series.forEach((s, i) => {
      body.push(
        `<rect class="legend-swatch" x="${num(x)}" y="${y - 10}" width="12" height="12" fill="${PALETTE[i % PALETTE.length]}"/>` +
          `<text class="legend" x="${num(x + 18)}" y="${y}" font-size="12" fill="#333">${escapeXml(s.name)}</text>`,
      );
      x += 18 + s.name.length * 7 + 24;
    });
  }
  if (all.length === 0) body.push(noData());
  body.push(xTitle(spec.xLabel));
  return frame(spec.title, spec.subtitle, `${spec.yLabel} (${spec.unit})`, yMax, body);
}
