/** `mufold explain` and `mufold diff`: an identity's past, as a table for people or JSON (--json). */
import { canonicalJson } from "../core/canonical-json.js";
import type { PyValue } from "../core/pyvalue.js";
import { resolveSettings } from "../config/settings.js";
import { openRedis, readerClientSettings } from "../adapters/redis/connect.js";
import { ProjectionReader, type ProjectionChange, type ProjectionExplanation } from "../client/readback.js";
import type { AsOf } from "../client/past.js";
import type { ExplainedDelivery } from "../fold/provenance.js";
import { UsageError, type FlagValues } from "./args.js";
import { commandFlags, stringFlag } from "./command.js";
import { writeOut } from "./io.js";
import { askThePast } from "./log-check.js";
import { asOfFlags, checkedIdentityFlag, parsePoint } from "./read.js";
import { DIFF, EXPLAIN } from "./specs.js";
import { diffJson, explanationJson } from "../client/past-json.js";

function identityFlag(values: FlagValues): string {
  const identity = stringFlag(values, "identity");
  if (identity === undefined) throw new UsageError("needs --identity mur_…");
  return checkedIdentityFlag(identity);
}

/**
 * Open a reader and ask about the past (askThePast: as_of_not_available is exit 4); "unknown" is exit 3.
 */
async function withReader<T>(command: string, values: FlagValues, ask: (reader: ProjectionReader) => Promise<T | null>, print: (answer: T) => string): Promise<number> {
  const settings = resolveSettings(values);
  const redis = await openRedis(readerClientSettings(settings), settings.connectTimeoutMs);
  try {
    const reader = new ProjectionReader(redis, settings.prefix, settings.reducerVersion, settings.topic);
    const asked = await askThePast(command, settings, redis, reader, () => ask(reader));
    if (asked === undefined) return 4;
    const answer = asked.answer;
    if (answer === null) {
      process.stderr.write(`mufold ${command}: no projection for identity ${stringFlag(values, "identity")}\n`);
      return 3;
    }
    await writeOut(print(answer));
    return 0;
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

export async function explainCommand(args: string[]): Promise<number> {
  const values = await commandFlags(EXPLAIN, args);
  if (values === undefined) return 0;
  const identity = identityFlag(values);
  const asOf = asOfFlags(values);
  return withReader(
    "explain",
    values,
    (reader) => reader.explain(identity, asOf === undefined ? {} : { asOf }),
    (e) => (values.json === true ? canonicalJson(explanationJson(e)) + "\n" : explanationTable(e)),
  );
}

export async function diffCommand(args: string[]): Promise<number> {
  const values = await commandFlags(DIFF, args);
  if (values === undefined) return 0;
  const identity = identityFlag(values);
  const point = (flag: "from" | "to"): AsOf | undefined => {
    const text = stringFlag(values, flag);
    return text === undefined ? undefined : parsePoint(text, `--${flag}`);
  };
  const from = point("from");
  const to = point("to");
  return withReader(
    "diff",
    values,
    (reader) => reader.diff(identity, from, to),
    (d) => (values.json === true ? canonicalJson(diffJson(d)) + "\n" : diffText(d)),
  );
}

const short = (id: string | null) => (id === null ? "-" : id.length > 16 ? `${id.slice(0, 12)}…${id.slice(-4)}` : id);
const time = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString());

function feedsText(d: ExplainedDelivery): string {
  const parts: string[] = [];
  if (d.feeds.subject_id !== null) parts.push(`subject ${short(d.feeds.subject_id)} and its label summary`);
  if (d.feeds.history) parts.push("history entry");
  if (d.feeds.conflict) parts.push("conflict entry");
  if (d.decision === "duplicate" || (d.decision === "conflicting" && d.repeat)) parts.push("duplicate count");
  if (d.decision === "conflicting") parts.push("rejected count");
  return parts.length === 0 ? "-" : parts.join(", ");
}

/** Columns padded to their widest cell. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ")).join("\n") + "\n";
}

function deliveryRows(deliveries: readonly ExplainedDelivery[]): string[][] {
  const rows = [["PARTITION", "OFFSET", "TIMESTAMP", "OBSERVATION", "DECISION", "FEEDS"]];
  for (const d of deliveries) {
    const decision = d.decision === "rejected" ? `rejected (${d.reason ?? "?"})` : d.decision;
    rows.push([String(d.partition), String(d.offset), time(d.timestamp), short(d.observation_id), decision, feedsText(d)]);
  }
  return rows;
}

function pointText(e: ProjectionExplanation): string {
  if (e.asOf === undefined) return "all deliveries";
  if (e.asOf.time === undefined && e.asOf.points.length === 0) return "before the first delivery";
  const at = e.asOf.time ?? e.asOf.points.map((p) => `${p.partition}:${p.offset}`).join(",");
  return `as of ${at}`;
}

export function explanationTable(e: ProjectionExplanation): string {
  const c = e.counts;
  const head = `${e.identity}  generation ${e.generation}  version ${e.version}  status ${e.status}  (${pointText(e)})\n\n`;
  const counts =
    `\naccepted ${c.accepted_observation_count}, duplicates ${c.duplicate_observation_count}, ` +
    `conflicting ids ${c.conflicting_observation_count} (${c.rejected_observation_count} deliveries), rejected ${c.rejected_deliveries}` +
    (e.notIndexed > 0 ? `; ${e.notIndexed} later deliveries past the index's bound are not listed` : "") +
    "\n";
  return head + (e.deliveries.length === 0 ? "no deliveries\n" : table(deliveryRows(e.deliveries))) + counts;
}

const valueText = (v: unknown) => (v === null || v === undefined ? "-" : typeof v === "string" ? v : canonicalJson(v as PyValue));

export function diffText(d: ProjectionChange): string {
  const lines = [`${d.identity}  from ${pointText(d.from)} (${d.from.status})  to ${pointText(d.to)} (${d.to.status})`, ""];
  if (d.same_bytes) lines.push("the packets are the same, byte for byte");
  if (d.status !== null) lines.push(`status: ${d.status.from} -> ${d.status.to}`);
  for (const [name, c] of Object.entries(d.counters)) lines.push(`${name}: ${valueText(c.from)} -> ${valueText(c.to)}`);
  for (const id of d.subjects.added) lines.push(`subject added: ${id}`);
  for (const id of d.subjects.removed) lines.push(`subject removed: ${id}`);
  for (const s of d.subjects.changed) {
    lines.push(`subject changed: ${s.subject_id}`);
    for (const [field, c] of Object.entries(s.fields)) lines.push(`  ${field}: ${valueText(c.from)} -> ${valueText(c.to)}`);
  }
  for (const id of d.conflicts.added) lines.push(`conflict added: ${id}`);
  for (const id of d.conflicts.removed) lines.push(`conflict removed: ${id}`);
  let out = lines.join("\n") + "\n";
  if (d.deliveries.added.length > 0) out += `\ndeliveries that changed it (${d.deliveries.added.length}):\n` + table(deliveryRows(d.deliveries.added));
  if (d.deliveries.removed.length > 0) out += `\ndeliveries at --from and not at --to (${d.deliveries.removed.length}):\n` + table(deliveryRows(d.deliveries.removed));
  return out;
}
