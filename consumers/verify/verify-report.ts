/**
 * The page `mufold replay --verify --report FILE.html` writes: one
 * self-contained HTML file (inline CSS, no scripts, no external assets) that a
 * person can open. A summary (verdict, reasons, generations, counts, topic,
 * times), each partition's live mark against what the rebuild read to
 * (behind_log), every identity that is not equal with its status, the equal ones
 * behind a <details> (a count and the first ones listed), and for each byte
 * mismatch the first differing offset with the bytes around it on both
 * sides, the differing byte highlighted; and for the differing identities the
 * caller explained, every delivery of the live generation's packet with what
 * the fold made of it (`mufold explain`). Pure: data in, a string out.
 *
 * The markup is also well-formed XML (every element closed, only XML
 * entities), so a test can parse it strictly.
 */
import type { VerifyCoverage } from "./coverage.js";
import type { ReplaySummary } from "../replay/replay-summary.js";
import type { ByteDifference, IdentityResult, VerifyDetails, VerifyFailure } from "./verify.js";
import type { ProjectionExplanation } from "../../src/client/readback.js";

export interface VerifyPageInput {
  summary: ReplaySummary;
  /** The per-identity results verify collected (empty when it failed before comparing). */
  details: Pick<VerifyDetails, "equal" | "equalListed" | "notEqual" | "differencesOmitted" | "maxEqualListed" | "maxDifferences">;
  topic: string;
  prefix: string;
  startedAt: Date;
  finishedAt: Date;
  /** Differing identities explained from the live generation (mufold explain), or why one could not be. */
  explanations?: ReadonlyMap<string, ProjectionExplanation | string>;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

const STYLE = `
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222; margin: 2em auto; max-width: 72em; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; } h3 { font-size: 1em; font-family: ui-monospace, Menlo, Consolas, monospace; }
.verdict { padding: .5em .8em; border-radius: 4px; display: inline-block; }
.verified { background: #e3f4e5; color: #1d6b2a; } .not-verified { background: #fbe5e7; color: #8e1b2c; }
table { border-collapse: collapse; margin: .5em 0; } th, td { text-align: left; padding: .25em .8em .25em 0; vertical-align: top; }
table.identities td, table.identities th { border-bottom: 1px solid #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, .bytes { font-family: ui-monospace, Menlo, Consolas, monospace; }
.status { font-family: ui-monospace, Menlo, Consolas, monospace; padding: 0 .3em; border-radius: 3px; }
.status-equal { background: #e3f4e5; } .status-bytes_differ { background: #fbe5e7; } .status-watermarks_differ, .status-behind_in_live, .status-only_in_live, .status-only_in_rebuilt { background: #fdf1d9; }
tr.behind td { background: #fbe5e7; }
.bytes { white-space: pre-wrap; word-break: break-all; background: #f6f6f6; padding: .4em .6em; border-radius: 3px; margin: .2em 0 .8em; }
.bytes .esc { color: #777; } mark.diff { background: #ffd54a; color: #000; outline: 1px solid #c79a00; }
.side { font-weight: 600; margin-top: .4em; } .note { color: #555; }
`;

/** Every byte of the window: printable ASCII as itself (escaped), anything else as \xNN; the byte at `offset` marked. */
export function renderBytes(bytes: Uint8Array, start: number, offset: number): string {
  let out = "";
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    const shown = b >= 0x20 && b < 0x7f ? escapeHtml(String.fromCharCode(b)) : `<span class="esc">\\x${b.toString(16).padStart(2, "0")}</span>`;
    out += start + i === offset ? `<mark class="diff">${shown}</mark>` : shown;
  }
  // The side that is a prefix of the other ends at the offset: mark its end.
  if (start + bytes.length <= offset) out += `<mark class="diff">(end of packet)</mark>`;
  return out;
}

const byteName = (bytes: Uint8Array, index: number): string => {
  const b = bytes[index];
  if (b === undefined) return "end of packet";
  return `0x${b.toString(16).padStart(2, "0")}${b >= 0x20 && b < 0x7f ? ` (${JSON.stringify(String.fromCharCode(b))})` : ""}`;
};

function differenceSection(result: IdentityResult, d: ByteDifference): string {
  const length = (n: number | null) => (n === null ? "no packet" : `${n.toLocaleString("en-US")} bytes`);
  const at = d.offset - d.start;
  const side = (name: string, bytes: Uint8Array, total: number | null) =>
    `<div class="side">${name}</div>` + (total === null ? `<div class="bytes note">(no packet)</div>` : `<div class="bytes" data-side="${name}">${renderBytes(bytes, d.start, d.offset)}</div>`);
  const end = d.start + Math.max(d.live.length, d.rebuilt.length);
  return [
    `<section class="mismatch" id="${escapeHtml(anchor(result.identity))}" data-identity="${escapeHtml(result.identity)}" data-offset="${d.offset}">`,
    `<h3>${escapeHtml(result.identity)}</h3>`,
    `<p>First differing byte at offset <strong class="offset">${d.offset}</strong>: live ${escapeHtml(byteName(d.live, at))}, rebuilt ${escapeHtml(byteName(d.rebuilt, at))}. ` +
      `Live ${length(d.liveLength)}, rebuilt ${length(d.rebuiltLength)}; bytes ${d.start} to ${Math.max(d.start, end - 1)} shown (printable ASCII as itself, other bytes as \\xNN).</p>`,
    side("live", d.live, d.liveLength),
    side("rebuilt", d.rebuilt, d.rebuiltLength),
    `</section>`,
  ].join("\n");
}

const anchor = (identity: string) => `mismatch-${identity}`;
const explainAnchor = (identity: string) => `explain-${identity}`;

function explanationSection(identity: string, e: ProjectionExplanation | string): string {
  const head = `<section class="explanation" id="${escapeHtml(explainAnchor(identity))}" data-identity="${escapeHtml(identity)}">\n<h3>${escapeHtml(identity)}</h3>`;
  if (typeof e === "string") return `${head}\n<p class="note">Not explained: ${escapeHtml(e)}</p>\n</section>`;
  const c = e.counts;
  const rows = e.deliveries.map((d) => {
    const feeds = [d.feeds.subject_id === null ? "" : `subject ${d.feeds.subject_id}`, d.feeds.history ? "history" : "", d.feeds.conflict ? "conflict" : ""].filter((x) => x !== "").join(", ");
    const decision = d.decision === "rejected" ? `rejected (${d.reason ?? ""})` : d.decision;
    const time = d.timestamp === null ? "" : new Date(d.timestamp).toISOString();
    return `<tr class="delivery" data-decision="${d.decision}"><td class="num">${d.partition}</td><td class="num">${d.offset}</td><td>${time}</td><td><code>${escapeHtml(d.observation_id ?? "")}</code></td><td>${escapeHtml(decision)}</td><td>${escapeHtml(feeds)}</td></tr>`;
  });
  return [
    head,
    `<p>Live generation ${e.generation}, version ${e.version}, status <code>${escapeHtml(e.status)}</code>: ${c.accepted_observation_count} accepted, ${c.duplicate_observation_count} copies, ` +
      `${c.conflicting_observation_count} conflicting ids (${c.rejected_observation_count} deliveries)` +
      (e.notIndexed > 0 ? `; ${e.notIndexed} later deliveries past the index's bound not listed` : "") +
      `. The same as <code>mufold explain --identity ${escapeHtml(identity)}</code>.</p>`,
    `<table class="identities">`,
    `<tr><th>partition</th><th>offset</th><th>timestamp</th><th>observation</th><th>decision</th><th>feeds</th></tr>`,
    ...rows,
    `</table>`,
    `</section>`,
  ].join("\n");
}

/** Generation-level failures (no identity) and the per-identity reasons with their counts, most frequent first. */
function reasons(summary: ReplaySummary): string[] {
  const verify = summary.verify;
  if (verify === null) return ["not verified: the replay ran without --verify"];
  if (verify.ok) {
    const held = summary.coverage?.reference === "end" ? "the log's end" : "every offset the fold group committed";
    return [`every identity of both generations was compared and found byte-equal, and the live generation holds ${held}`];
  }
  const general = verify.failures.filter((f: VerifyFailure) => f.identity === undefined).map((f) => `${f.reason}${f.detail === undefined ? "" : `: ${f.detail}`}`);
  const perIdentity: [string, number][] = [
    ["bytes_differ", verify.mismatches],
    ["only_in_live", verify.onlyInLive],
    ["only_in_rebuilt", verify.onlyInRebuilt],
    ["behind_in_live", verify.behindInLive],
    ["watermarks_differ", verify.notComparable - verify.onlyInLive - verify.onlyInRebuilt - verify.behindInLive],
  ];
  const listed = perIdentity
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, n]) => `${reason}: ${n.toLocaleString("en-US")} ${n === 1 ? "identity" : "identities"}`);
  const all = [...general, ...listed];
  return all.length > 0 ? all : ["verification failed without a listed reason"];
}

/** Each partition: the live mark, the group's commit, the log's end, what the rebuild read to and how far the mark is behind it. */
function coverageSection(coverage: VerifyCoverage | null): string {
  if (coverage === null) return `<p class="note">Not measured.</p>`;
  const cell = (v: number | null) => `<td class="num">${v === null ? "—" : v.toLocaleString("en-US")}</td>`;
  const against = coverage.reference === "end" ? "the log's end when the replay started (--to-end)" : "what the live generation folded and the fold group committed";
  return [
    `<p class="note">The rebuild read each partition to ${against}; behind_log counts the offsets between the live mark and that target.</p>`,
    `<table class="coverage">`,
    `<tr><th>partition</th><th>mark</th><th>committed</th><th>end</th><th>target</th><th>behind_log</th></tr>`,
    ...coverage.partitions.map(
      (p) =>
        `<tr class="partition${p.behind_log > 0 ? " behind" : ""}" data-partition="${p.partition}" data-behind="${p.behind_log}"><td>${escapeHtml(`${p.topic}:${p.partition}`)}</td>` +
        `${cell(p.mark)}${cell(p.committed)}${cell(p.end)}${cell(p.target)}${cell(p.behind_log)}</tr>`,
    ),
    `</table>`,
  ].join("\n");
}

function row(name: string, value: string, numeric = false): string {
  return `<tr><th scope="row">${escapeHtml(name)}</th><td${numeric ? ' class="num"' : ""}>${value}</td></tr>`;
}

export function verifyReportHtml(input: VerifyPageInput): string {
  const { summary, details } = input;
  const verify = summary.verify;
  const verified = summary.verified === true;
  const verdict = verified ? "verified" : "not verified";
  const fmt = (n: number) => n.toLocaleString("en-US");
  const count = (n: number | undefined) => (n === undefined ? "—" : fmt(n));
  const equal = verify === null ? undefined : verify.compared - verify.mismatches;
  const watermarks = verify === null ? undefined : verify.notComparable - verify.onlyInLive - verify.onlyInRebuilt - verify.behindInLive;
  const seconds = (input.finishedAt.getTime() - input.startedAt.getTime()) / 1000;

  const summaryTable = [
    `<table class="summary">`,
    row("verdict", `<span class="verdict ${verified ? "verified" : "not-verified"}">${verdict}</span>`),
    row("reason", reasons(summary).map(escapeHtml).join("<br/>")),
    row("topic", `<code>${escapeHtml(input.topic)}</code>`),
    row("Redis prefix", `<code>${escapeHtml(input.prefix)}</code>`),
    row("live generation", summary.liveGeneration === null ? "none" : String(summary.liveGeneration)),
    row("rebuilt generation", String(summary.rebuiltGeneration)),
    row("records replayed", fmt(summary.records), true),
    row("identities (either side)", count(verify?.identities), true),
    row("compared", count(verify?.compared), true),
    row("equal", count(equal), true),
    row("bytes differ", count(verify?.mismatches), true),
    row("watermarks differ", count(watermarks), true),
    row("only in live", count(verify?.onlyInLive), true),
    row("only in rebuilt", count(verify?.onlyInRebuilt), true),
    row("behind in live", count(verify?.behindInLive), true),
    row("records the live generation is behind", count(summary.coverage?.behind_log), true),
    row("started", escapeHtml(input.startedAt.toISOString())),
    row("finished", `${escapeHtml(input.finishedAt.toISOString())} (${seconds.toFixed(1)} s)`),
    row("promoted", summary.promoted ? "yes" : "no"),
    `</table>`,
  ];

  const notEqualRows = details.notEqual.map((r) => {
    const name = r.difference === undefined ? escapeHtml(r.identity) : `<a href="#${escapeHtml(anchor(r.identity))}">${escapeHtml(r.identity)}</a>`;
    const explain = input.explanations?.has(r.identity) === true ? ` <a class="explain" href="#${escapeHtml(explainAnchor(r.identity))}">explain</a>` : "";
    return `<tr class="identity" data-identity="${escapeHtml(r.identity)}" data-status="${r.status}"><td><code>${name}</code>${explain}</td><td><span class="status status-${r.status}">${r.status}</span></td><td>${escapeHtml(r.detail ?? "")}</td></tr>`;
  });
  const notEqualSection =
    details.notEqual.length === 0
      ? `<p class="note">None${verify !== null && verify.identities > 0 ? "" : " compared"}.</p>`
      : [`<table class="identities">`, `<tr><th>identity</th><th>status</th><th>detail</th></tr>`, ...notEqualRows, `</table>`].join("\n");

  const listedEqual = details.equalListed.map((id) => `<tr class="identity" data-identity="${escapeHtml(id)}" data-status="equal"><td><code>${escapeHtml(id)}</code></td><td><span class="status status-equal">equal</span></td></tr>`);
  const equalSection =
    details.equal === 0
      ? `<p class="note">None.</p>`
      : [
          `<details class="equal">`,
          `<summary>${fmt(details.equal)} ${details.equal === 1 ? "identity" : "identities"} equal` +
            (details.equal > details.equalListed.length ? ` (the first ${fmt(details.equalListed.length)} by identity listed; at most ${fmt(details.maxEqualListed)} are)` : "") +
            `</summary>`,
          `<table class="identities">`,
          ...listedEqual,
          `</table>`,
          `</details>`,
        ].join("\n");

  const withBytes = details.notEqual.filter((r): r is IdentityResult & { difference: ByteDifference } => r.difference !== undefined);
  const omitted =
    details.differencesOmitted > 0
      ? `<p class="note">${fmt(details.differencesOmitted)} more ${details.differencesOmitted === 1 ? "mismatch is" : "mismatches are"} listed above without their bytes (the bytes of the first ${fmt(details.maxDifferences)} are kept).</p>`
      : "";
  const mismatchSection = withBytes.length === 0 ? `<p class="note">No bytes differ.</p>` : withBytes.map((r) => differenceSection(r, r.difference)).join("\n") + omitted;

  return [
    `<!DOCTYPE html>`,
    `<html lang="en">`,
    `<head>`,
    `<meta charset="utf-8"/>`,
    `<meta name="viewport" content="width=device-width, initial-scale=1"/>`,
    `<title>mufold replay --verify: ${verdict} (${escapeHtml(input.topic)})</title>`,
    `<style>${STYLE}</style>`,
    `</head>`,
    `<body>`,
    `<h1>mufold replay --verify: <span class="verdict ${verified ? "verified" : "not-verified"}" id="verdict">${verdict}</span></h1>`,
    `<h2>Summary</h2>`,
    ...summaryTable,
    `<h2>Coverage</h2>`,
    coverageSection(summary.coverage),
    `<h2>Identities not equal</h2>`,
    notEqualSection,
    `<h2>Equal identities</h2>`,
    equalSection,
    `<h2>Byte mismatches</h2>`,
    mismatchSection,
    ...(input.explanations === undefined || input.explanations.size === 0
      ? []
      : [`<h2>Explanations</h2>`, ...[...input.explanations].map(([identity, e]) => explanationSection(identity, e))]),
    `<p class="note">Written by <code>mufold replay --verify --report</code> at ${escapeHtml(input.finishedAt.toISOString())}. Offsets count UTF-8 bytes of the packets from 0.</p>`,
    `</body>`,
    `</html>`,
    ``,
  ]
    .filter((l, i, all) => l !== "" || i === all.length - 1)
    .join("\n");
}
