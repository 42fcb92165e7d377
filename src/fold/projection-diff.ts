/**
 * What changed in an identity's packet between two points of its past, and
 * which deliveries changed it: the two explanations (provenance.ts) compared.
 * Subjects are compared field by field on their canonical JSON, so every
 * field the reducer writes (labels, label summaries, estimates, review) is
 * covered without naming them here. Pure: no IO.
 */
import { canonicalJson } from "../core/canonical-json.js";
import { parsePyJson } from "../core/pyjson-parse.js";
import type { PyValue } from "../core/pyvalue.js";
import type { DecisionCounts, ExplainedDelivery, Explanation } from "./provenance.js";

/** A value at `from` and at `to` (null where it is absent). */
export interface Change<T> {
  from: T | null;
  to: T | null;
}

export interface SubjectChange {
  subject_id: string;
  /** The subject's fields that differ (absent ones as null). */
  fields: Record<string, Change<unknown>>;
}

export interface ProjectionDiff {
  status: Change<string> | null;
  /** The packet's counters that differ. */
  counters: Partial<Record<keyof Omit<DecisionCounts, "rejected_deliveries">, Change<number>>>;
  subjects: { added: string[]; removed: string[]; changed: SubjectChange[] };
  /** Observation ids quarantined as conflicting at one point and not at the other (all of them, not only the packet's first 64). */
  conflicts: { added: string[]; removed: string[] };
  /** The deliveries one point includes and the other does not: `added` explained as at `to`, `removed` as at `from`. */
  deliveries: { added: ExplainedDelivery[]; removed: ExplainedDelivery[] };
  /** Whether the two packets are byte for byte the same. */
  same_bytes: boolean;
}

interface PacketView {
  status?: string;
  subjects?: Record<string, PyValue>[];
}

const COUNTERS = ["accepted_observation_count", "duplicate_observation_count", "conflicting_observation_count", "rejected_observation_count"] as const;

export function diffExplanations(from: Explanation, to: Explanation): ProjectionDiff {
  // Python's reading: a float stays a float (1.0, not 1) in what the diff reports.
  const a = parsePyJson(from.packet) as unknown as PacketView & Record<string, unknown>;
  const b = parsePyJson(to.packet) as unknown as PacketView & Record<string, unknown>;
  const counters: ProjectionDiff["counters"] = {};
  for (const name of COUNTERS) {
    const x = typeof a[name] === "number" ? (a[name] as number) : null;
    const y = typeof b[name] === "number" ? (b[name] as number) : null;
    if (x !== y) counters[name] = { from: x, to: y };
  }
  const subjectsOf = (p: PacketView) => new Map((p.subjects ?? []).map((s) => [String(s.subject_id), s]));
  const before = subjectsOf(a);
  const after = subjectsOf(b);
  const changed: SubjectChange[] = [];
  for (const [id, s] of after) {
    const prior = before.get(id);
    if (prior === undefined) continue;
    const fields: Record<string, Change<unknown>> = {};
    for (const field of [...new Set([...Object.keys(prior), ...Object.keys(s)])].sort()) {
      const [x, y] = [prior[field], s[field]];
      if ((x === undefined ? "" : canonicalJson(x)) !== (y === undefined ? "" : canonicalJson(y))) fields[field] = { from: x ?? null, to: y ?? null };
    }
    if (Object.keys(fields).length > 0) changed.push({ subject_id: id, fields });
  }
  // From the decisions, not the packet's `rejections` (the first 64 ids only).
  const conflictIds = (e: Explanation) => new Set(e.deliveries.flatMap((d) => (d.decision === "conflicting" && d.observation_id !== null ? [d.observation_id] : [])));
  const ca = conflictIds(from);
  const cb = conflictIds(to);
  const key = (d: ExplainedDelivery) => `${d.partition}:${d.offset}`;
  const inFrom = new Set(from.deliveries.map(key));
  const inTo = new Set(to.deliveries.map(key));
  return {
    status: from.status === to.status ? null : { from: from.status, to: to.status },
    counters,
    subjects: {
      added: [...after.keys()].filter((id) => !before.has(id)).sort(),
      removed: [...before.keys()].filter((id) => !after.has(id)).sort(),
      changed: changed.sort((x, y) => (x.subject_id < y.subject_id ? -1 : 1)),
    },
    conflicts: { added: [...cb].filter((id) => !ca.has(id)).sort(), removed: [...ca].filter((id) => !cb.has(id)).sort() },
    deliveries: { added: to.deliveries.filter((d) => !inFrom.has(key(d))), removed: from.deliveries.filter((d) => !inTo.has(key(d))) },
    same_bytes: from.packet === to.packet,
  };
}
