/**
 * An identity's packet as stored parts: canonical fragments per subject,
 * history entry, conflict and proposal, plus a small skeleton holding the
 * counters. A delivery changes a bounded number of parts, so Redis writes stay
 * small however large the identity grows; the read function concatenates the
 * parts back into exactly the reducer's bytes (assembleParts is its twin here).
 */
import { canonicalJson } from "../core/canonical-json.js";
import { analyzeIdentityState, subjectOfGroup, type IdentityAnalysis, type SubjectGroup } from "../core/identity-analysis.js";
import type { ReducerContext } from "../core/identity.js";
import type { IdentityState } from "../core/identity-state.js";
import type { Observation } from "../core/observation.js";
import { compareOrder } from "../core/ordering.js";
import { MAX_PROJECTION_HISTORY, MAX_PROJECTION_REJECTIONS, baseProjection, historyEntry, historyEntryToPy } from "../core/projection.js";
import type { PyObject } from "../core/pyvalue.js";
import { boundsRejection, packetSummary } from "../core/reducer.js";
import { historyMember, subjectMember } from "./sort-keys.js";

export interface SubjectPart {
  member: string;
  fragment: string;
  proposal: string | null;
  /** Review state is conflict (the packet then needs review). */
  conflict: boolean;
  latest: string;
  signature: string;
}

export interface HistoryPart {
  member: string;
  fragment: string;
}

export interface PartsView {
  /** Canonical rejected packet when the identity is past a bound, else null. */
  rejected: string | null;
  /** The packet with its four lists cut out, pieces joined by \x01. */
  skeleton: string;
  accepted: number;
  deliveries: number;
  subjects: Map<string, SubjectPart>;
  history: Map<string, HistoryPart>;
  conflicts: Map<string, string>;
}

export const SKELETON_SEPARATOR = "\u0001";
const LIST_FIELDS = ["observation_history", "rejections", "review_proposals", "subjects"] as const;

export function emptyParts(): PartsView {
  return { rejected: null, skeleton: "", accepted: 0, deliveries: 0, subjects: new Map(), history: new Map(), conflicts: new Map() };
}

const historyMemo = new WeakMap<Observation, { subjectId: string; part: HistoryPart }>();

function historyPart(obs: Observation, subjectId: string, fingerprint: string): HistoryPart {
  const memo = historyMemo.get(obs);
  if (memo !== undefined && memo.subjectId === subjectId) return memo.part;
  const part = {
    member: historyMember(obs.created_at, obs.observation_id),
    fragment: canonicalJson(historyEntryToPy(historyEntry(obs, subjectId, fingerprint))),
  };
  historyMemo.set(obs, { subjectId, part });
  return part;
}

function subjectSignature(group: SubjectGroup, a: IdentityAnalysis): string {
  let sig = "";
  for (const o of group.items) sig += a.fingerprintOf.get(o)! + o.created_at + "\u0000";
  return sig;
}

function skeletonOf(context: ReducerContext, a: IdentityAnalysis, proposals: PyObject[]): string {
  const levels = a.groups.map((g) => ({ attribution_level: g.level }));
  const packet = baseProjection(context, { ...packetSummary(context, a, proposals), subjects: levels });
  packet.observation_history_truncated = a.unique.length > MAX_PROJECTION_HISTORY;
  for (const field of LIST_FIELDS) packet[field] = `\u0001${field}`;
  let text = canonicalJson(packet);
  for (const field of LIST_FIELDS) text = text.replace(`"\\u0001${field}"`, SKELETON_SEPARATOR);
  return text;
}

/** The parts of an identity state; `previous` lets unchanged subjects keep their fragment. */
export function computeParts(context: ReducerContext, state: IdentityState, previous: PartsView = emptyParts()): PartsView {
  const a = analyzeIdentityState(state);
  const rejectedPacket = boundsRejection(context, a);
  const parts: PartsView = {
    rejected: rejectedPacket === null ? null : canonicalJson(rejectedPacket),
    skeleton: "",
    accepted: a.unique.length,
    deliveries: state.deliveries,
    subjects: new Map(),
    history: new Map(),
    conflicts: new Map(),
  };
  if (a.overDeliveryLimit) return parts; // constant rejected packet: nothing else is needed
  const proposals: PyObject[] = [];
  for (const group of a.groups) {
    const signature = subjectSignature(group, a);
    const prior = previous.subjects.get(group.subjectId);
    let part: SubjectPart;
    let latest = group.items[0]!;
    for (const o of group.items) if (compareOrder(o, latest) >= 0) latest = o;
    if (prior !== undefined && prior.signature === signature) {
      part = prior;
    } else {
      const { subject, proposal } = subjectOfGroup(group);
      part = {
        member: subjectMember(group.level, group.key, group.subjectId),
        fragment: canonicalJson(subject),
        proposal: proposal === null ? null : canonicalJson(proposal),
        conflict: proposal !== null && proposal.state === "conflict",
        latest: historyMember(latest.created_at, latest.observation_id),
        signature,
      };
    }
    if (part.proposal !== null) proposals.push({ state: part.conflict ? "conflict" : "review" });
    parts.subjects.set(group.subjectId, part);
    for (const obs of group.items) parts.history.set(obs.observation_id, historyPart(obs, group.subjectId, a.fingerprintOf.get(obs)!));
  }
  for (const c of a.conflicts) parts.conflicts.set(c.observation_id as string, canonicalJson(c));
  parts.skeleton = skeletonOf(context, a, proposals);
  return parts;
}

/** The TypeScript twin of the Redis read function: parts to packet bytes. */
export function assembleParts(parts: PartsView): string {
  if (parts.rejected !== null) return parts.rejected;
  const pieces = parts.skeleton.split(SKELETON_SEPARATOR);
  const byMember = <T extends { member: string }>(m: Map<string, T>) => [...m.values()].sort((x, y) => (x.member < y.member ? -1 : 1));
  let history = byMember(parts.history);
  if (parts.accepted > MAX_PROJECTION_HISTORY) {
    const keep = new Set([...parts.subjects.values()].map((s) => s.latest));
    for (let i = history.length - 1; i >= 0 && keep.size < MAX_PROJECTION_HISTORY; i--) keep.add(history[i]!.member);
    history = history.filter((h) => keep.has(h.member));
  }
  const subjects = byMember(parts.subjects);
  const conflicts = [...parts.conflicts.keys()].sort().slice(0, MAX_PROJECTION_REJECTIONS);
  const lists = [
    history.map((h) => h.fragment),
    conflicts.map((id) => parts.conflicts.get(id)!),
    subjects.filter((s) => s.proposal !== null).map((s) => s.proposal!),
    subjects.map((s) => s.fragment),
  ];
  let out = pieces[0]!;
  lists.forEach((items, i) => {
    out += "[" + items.join(",") + "]" + pieces[i + 1]!;
  });
  return out;
}
