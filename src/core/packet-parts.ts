/**
 * A packet as parts: canonical fragments per subject, history entry, conflict
 * and proposal, plus a small skeleton holding the counters. The fold stores
 * the parts (a delivery changes a bounded number of them, so Redis writes stay
 * small however large an identity grows) and a Redis Function concatenates
 * them on read; assembleParts is that function's twin, and the embedded CLI
 * uses it too, so every path emits the same bytes.
 */
import { AsciiText } from "./ascii-text.js";
import { sortedByBytes } from "./byte-order.js";
import { canonicalJson, quote } from "./canonical-json.js";
import { analyzeIdentityState, subjectOfGroup, type IdentityAnalysis, type SubjectGroup } from "./identity-analysis.js";
import { reducerIdentity, type ReducerContext } from "./identity.js";
import type { IdentityState } from "./identity-state.js";
import type { Observation } from "./observation.js";
import { historyEntryFragment, historyEntryStored, historyListJson, putHistoryList, type HistoryEntryOf } from "./observation-json.js";
import { CompactText, canonicalSubject, compactJson, compactString, expandTokens, putExpanded, storedProposal, storedSubjectFragment } from "./compact-json.js";
import { fragmentText, type Fragment } from "./fragment.js";
import { compareOrder, indexesInOrder, sortedInOrder } from "./ordering.js";
import { MAX_PROJECTION_HISTORY, MAX_PROJECTION_REJECTIONS, baseProjection } from "./projection.js";
import { pyEquals, type PyObject } from "./pyvalue.js";
import { boundsRejection, countsOf, summaryCountersOf, summaryOf, type SummaryCounts } from "./reducer.js";
import { historyMember, idOfMember, subjectMember } from "./sort-keys.js";
import { reduceSubject, sameRoundedProducts, type FactorList } from "./subject.js";

export interface SubjectPart {
  /** Its sorted-set member (sort-keys.ts), made when read: its level, key and id fix it, so it never changes. */
  readonly member: string;
  /** Its stored form ("" once the store holds it and the model let go: IdentityParts.release). */
  fragment: Fragment;
  proposal: string | null;
  /** Review state is conflict (the packet then needs review). */
  conflict: boolean;
  /** Its latest observation's history member, made when read (a packet past the history bound reads it). */
  readonly latest: string;
  /** The accepted observations the fragment was computed from (compared by reference). */
  items: readonly Observation[];
  /** The first field the reference's readback re-reduction (in time order) disagrees on, if any. */
  recheckFailure: string | null;
}

export interface HistoryPart {
  /** Its sorted-set member (sort-keys.ts): made when read, never kept (KeptHistoryPart). */
  readonly member: string;
  /** As SubjectPart.fragment. */
  fragment: Fragment;
}

export interface PartsView {
  /** Canonical JSON returned instead of the assembled packet: a rejected packet, or the reference's error. */
  rejected: string | null;
  /** The packet with its four lists cut out, pieces joined by \x01. */
  skeleton: string;
  accepted: number;
  deliveries: number;
  /** By subject id (read-only: the incremental parts' is a view of their subject groups). */
  subjects: ReadonlyMap<string, SubjectPart>;
  /** By observation id (read-only: the incremental parts' is a view of their accepted versions). */
  history: ReadonlyMap<string, HistoryPart>;
  conflicts: Map<string, string>;
  /** Delivery count behind each conflict fragment (to reuse unchanged fragments). */
  conflictCounts: Map<string, number>;
}

export const SKELETON_SEPARATOR = "\u0001";
const LIST_FIELDS = ["observation_history", "rejections", "review_proposals", "subjects"] as const;
const RECHECK_KEYS = [
  "utility_estimate", "effective_utility_label", "effective_evidence_basis", "confidence", "uncertainty", "support",
  "evidence_strength", "evidence_label_summary", "observation_count", "review",
] as const;

export function emptyParts(): PartsView {
  return { rejected: null, skeleton: "", accepted: 0, deliveries: 0, subjects: new Map(), history: new Map(), conflicts: new Map(), conflictCounts: new Map() };
}

/**
 * The history part of an accepted observation, its fragment written now. The
 * member is made from the observation's created_at and id when read (as the
 * incremental parts' kept versions make theirs, identity-parts.ts).
 */
function historyPart(obs: Observation, subjectId: string, fingerprint: string): HistoryPart {
  return new KeptHistoryPart(obs, historyEntryFragment(obs, fingerprint, subjectId));
}

class KeptHistoryPart implements HistoryPart {
  constructor(
    private readonly obs: Observation,
    public fragment: Fragment,
  ) {}

  get member(): string {
    return historyMember(this.obs.created_at, this.obs.observation_id);
  }
}

/**
 * A history part whose member and fragment are made when first read. A
 * one-shot reduction (the CLI) assembles at most MAX_PROJECTION_HISTORY
 * entries plus each subject's latest, in the order computeParts placed them,
 * so past that bound most are never read: at 1,000 deliveries, writing every
 * fragment was ~10% of the reduction, and every member ~4%.
 */
class DeferredHistoryPart implements HistoryPart, HistoryEntryOf {
  private written: string | null = null;
  private ordered: string | null = null;

  constructor(
    readonly obs: Observation,
    readonly subjectId: string,
    readonly fingerprint: string,
  ) {}

  get member(): string {
    return (this.ordered ??= historyMember(this.obs.created_at, this.obs.observation_id));
  }

  get fragment(): string {
    return (this.written ??= historyEntryStored(this.obs, this.fingerprint, this.subjectId));
  }
}

/** Same observations, same representatives, same order: the subject is unchanged. */
function sameItems(a: readonly Observation[], b: readonly Observation[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}


/**
 * The reference validates every packet it returns, re-reducing each subject
 * from its history in time order while the reducer multiplied confidences in
 * id order. Where rounding makes the two differ, the reference raises; so do we.
 */
function recheck(group: SubjectGroup, subject: PyObject, chronological?: readonly Observation[], factors?: SubjectFactors): string | null {
  if (group.items.length < 3) return null; // two factors commute: no order effect
  const inTime = chronological ?? sortedInOrder(group.items);
  if (sameRoundedProducts(factors?.byId ?? group.items, factors?.inTime ?? inTime)) return null;
  const again = reduceSubject(group.subjectId, group.level, group.digests, inTime);
  for (const key of RECHECK_KEYS) if (!pyEquals(subject[key], again[key])) return key;
  return null;
}

/** A subject's factor lists (subject.ts) in id order and in time order, kept by the caller with its lists. */
export interface SubjectFactors {
  byId: FactorList;
  inTime: FactorList;
}

/**
 * A subject group's stored part: its fragment, proposal, order member and
 * latest history member. `chronological` (the items in time order, if the
 * caller keeps them so) saves a sort; `factors` (if kept with both lists)
 * saves walking the observations for the estimate and the recheck.
 */
export function subjectPartOf(
  group: SubjectGroup,
  chronological?: readonly Observation[],
  factors?: SubjectFactors,
  /** "canonical": the fragment and the proposal as canonical JSON (a one-shot packet's, assembled once), not the stored form. */
  form: "stored" | "canonical" = "stored",
): SubjectPart {
  let latest = group.items[0]!;
  if (chronological !== undefined) latest = chronological[chronological.length - 1]!;
  else for (const o of group.items) if (compareOrder(o, latest) >= 0) latest = o;
  // Stored form: the subject and its proposal are written out below, so they may be the scratch ones.
  const { subject, proposal } = subjectOfGroup(group, latest, factors?.byId, form === "stored");
  return new MadeSubjectPart(
    group,
    latest,
    form === "canonical" ? canonicalSubject(subject) : storedSubjectFragment(subject),
    proposal === null ? null : form === "canonical" ? canonicalJson(proposal) : storedProposal(proposal),
    proposal !== null && proposal.state === "conflict",
    recheck(group, subject, chronological, factors),
  );
}

/**
 * A subject part whose two members are made when read, from its group and its
 * latest observation (both kept anyway): kept, they were ~200 bytes of string
 * a cached subject held, most subjects one observation's worth, for a write
 * when the subject first appears and a read past the history bound.
 */
class MadeSubjectPart implements SubjectPart {
  constructor(
    private readonly group: SubjectGroup,
    private readonly latestObs: Observation,
    public fragment: Fragment,
    readonly proposal: string | null,
    readonly conflict: boolean,
    readonly recheckFailure: string | null,
  ) {}

  /** The group's live list (a model's part; computeParts compares it by reference). */
  get items(): readonly Observation[] {
    return this.group.items;
  }

  get member(): string {
    return subjectMember(this.group.level, this.group.key, this.group.subjectId);
  }

  get latest(): string {
    return historyMember(this.latestObs.created_at, this.latestObs.observation_id);
  }
}

/** Subjects by attribution level, for the packet's counters. */
export interface LevelCounts {
  item: number;
  set: number;
  none: number;
}

/** The skeleton's fields that vary within one identity, in the order the template's holes hold them. */
const VARYING = [
  "status", "projection_ready", "accepted_observation_count", "duplicate_observation_count", "conflicting_observation_count",
  "rejected_observation_count", "lineage_observation_count", "subject_count", "item_subject_count", "set_subject_count",
  "unresolved_lineage_count", "last_observed_at", "last_observation_id", "observation_history_truncated",
] as const;
/** The context's fields (the scope's four inside `scope`), holes after VARYING's: one template serves every identity. */
const CONTEXT_FIELDS = ["reducer_version", "reducer_identity", "retrieval_snapshot_ref", "policy_snapshot_ref"] as const;
const SCOPE_FIELDS = ["agent_id", "project_id", "corpus_id", "surface_id"] as const;
const HOLE = "\u0002";
const holeOf = (i: number): string => `${HOLE}${String.fromCharCode(0x41 + i)}`;

interface SkeletonTemplate {
  /** Canonical text between the holes (one more than holes). */
  pieces: string[];
  /** For each hole, which field fills it: VARYING's index, then CONTEXT_FIELDS', then SCOPE_FIELDS' (key order decides where each lands). */
  fields: number[];
}

let template: SkeletonTemplate | undefined;

/**
 * The skeleton's stored text with a hole per field that is not the same for
 * every packet: computed once, not per context, so no cached model owns a copy
 * and a new identity costs no compactJson of the whole packet.
 */
function skeletonTemplate(): SkeletonTemplate {
  if (template !== undefined) return template;
  const blank: ReducerContext = {
    scope: { agent_id: "", project_id: "", corpus_id: "", surface_id: "" },
    retrieval_snapshot_ref: "",
    policy_snapshot_ref: "",
    reducer_version: "",
  };
  const packet = baseProjection(blank, summaryOf(blank, { accepted: 0, latest: [null, null], duplicates: 0, conflicts: 0, conflictingDeliveries: 0, conflictProposal: false }));
  let n = 0;
  for (const field of VARYING) packet[field] = holeOf(n++);
  for (const field of CONTEXT_FIELDS) packet[field] = holeOf(n++);
  packet.scope = Object.fromEntries(SCOPE_FIELDS.map((field) => [field, holeOf(n++)]));
  for (const field of LIST_FIELDS) packet[field] = `\u0001${field}`;
  let text = compactJson(packet);
  for (const field of LIST_FIELDS) text = text.replace(`"\\u0001${field}"`, SKELETON_SEPARATOR);
  const pieces: string[] = [];
  const fields: number[] = [];
  const hole = /"\\u0002([A-Z])"/g;
  let last = 0;
  for (let m = hole.exec(text); m !== null; m = hole.exec(text)) {
    pieces.push(text.slice(last, m.index));
    fields.push(m[1]!.charCodeAt(0) - 0x41);
    last = m.index + m[0].length;
  }
  pieces.push(text.slice(last));
  template = { pieces, fields };
  return template;
}

const jsonOf = (v: string | number | boolean | null): string => (v === null ? "null" : typeof v === "string" ? quote(v) : String(v));

/** The packet with its four lists cut out: counters from `counts` and `levels` (canonicalJson of baseProjection). */
export function skeletonFrom(context: ReducerContext, counts: SummaryCounts, levels: LevelCounts): string {
  const summary = summaryCountersOf(counts);
  // The counters as the per-context templates wrote them (jsonOf); the context's strings as compactJson writes
  // them (compactString: a value that is a token, say a surface named "ready", is stored as the token), once per context.
  const values: string[] = [
    jsonOf(summary.status), jsonOf(summary.projection_ready), jsonOf(summary.accepted_observation_count), jsonOf(summary.duplicate_observation_count),
    jsonOf(summary.conflicting_observation_count), jsonOf(summary.rejected_observation_count), jsonOf(summary.lineage_observation_count),
    jsonOf(levels.item + levels.set + levels.none), jsonOf(levels.item), jsonOf(levels.set), jsonOf(levels.none),
    jsonOf(summary.last_observed_at), jsonOf(summary.last_observation_id), jsonOf(counts.accepted > MAX_PROJECTION_HISTORY),
  ];
  const fromContext = contextValuesOf(context);
  const { pieces, fields } = skeletonTemplate();
  // One flat string from a buffer (ascii-text.ts); a context that is not ASCII is concatenated instead.
  skeletonText.start().put(pieces[0]!);
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    skeletonText.put(f < values.length ? values[f]! : fromContext[f - values.length]!).put(pieces[i + 1]!);
  }
  const ascii = skeletonText.text();
  if (ascii !== null) return ascii;
  let out = pieces[0]!;
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    out += (f < values.length ? values[f]! : fromContext[f - values.length]!) + pieces[i + 1]!;
  }
  return out;
}

/** A context's skeleton values (CONTEXT_FIELDS', then SCOPE_FIELDS'), and the strings they were made of. */
interface ContextValues {
  of: string[];
  values: string[];
}

/**
 * By context object: a cached model flushes with one context every time, and writing its eight strings
 * (the identity's memo lookup included) was a third of a skeleton's cost. The strings are compared
 * (by reference first) on every use, so a context changed in place is never served stale values.
 */
const contextValueCache = new WeakMap<ReducerContext, ContextValues>();

function contextStrings(context: ReducerContext): string[] {
  const scope = context.scope;
  return [context.reducer_version, context.retrieval_snapshot_ref, context.policy_snapshot_ref, scope.agent_id, scope.project_id, scope.corpus_id, scope.surface_id];
}

function contextValuesOf(context: ReducerContext): string[] {
  const cached = contextValueCache.get(context);
  const scope = context.scope;
  if (
    cached !== undefined &&
    cached.of[0] === context.reducer_version && cached.of[1] === context.retrieval_snapshot_ref && cached.of[2] === context.policy_snapshot_ref &&
    cached.of[3] === scope.agent_id && cached.of[4] === scope.project_id && cached.of[5] === scope.corpus_id && cached.of[6] === scope.surface_id
  ) {
    return cached.values;
  }
  const values = [
    compactString(context.reducer_version), compactString(reducerIdentity(context)), compactString(context.retrieval_snapshot_ref),
    compactString(context.policy_snapshot_ref),
    compactString(scope.agent_id), compactString(scope.project_id), compactString(scope.corpus_id), compactString(scope.surface_id),
  ];
  contextValueCache.set(context, { of: contextStrings(context), values });
  return values;
}

const skeletonText = new AsciiText();

function skeletonOf(context: ReducerContext, a: IdentityAnalysis, proposals: PyObject[], latest: Observation | undefined): string {
  const levels: LevelCounts = { item: 0, set: 0, none: 0 };
  for (const g of a.groups) levels[g.level]++;
  return skeletonFrom(context, countsOf(a, proposals, latest === undefined ? [null, null] : [latest.created_at, latest.observation_id]), levels);
}

/** The error payload the reference CLI prints when its own packet fails readback validation. */
export function invalidRequestJson(message: string): string {
  return canonicalJson({ ok: false, schema_version: "reward_memory_error_v0", status: "invalid_request", error: message });
}

/** The parts of an identity state; `previous` (parts made for the store) lets unchanged subjects keep their fragment. */
export function computeParts(
  context: ReducerContext,
  state: IdentityState,
  previous: PartsView = emptyParts(),
  /**
   * "on read": made for one assembly. History fragments are written when first read (see DeferredHistoryPart),
   * subjects, proposals and conflicts are canonical JSON (no tokens to expand), and `previous` is not reused.
   */
  historyFragments: "now" | "on read" = "now",
): PartsView {
  if (madeOnRead.has(previous)) throw new Error("computeParts: `previous` was made on read (canonical fragments), not for the store");
  const a = analyzeIdentityState(state);
  const rejectedPacket = boundsRejection(context, a);
  const history = new Map<string, HistoryPart>();
  const subjects = new Map<string, SubjectPart>();
  const parts: PartsView = {
    rejected: rejectedPacket === null ? null : canonicalJson(rejectedPacket),
    skeleton: "",
    accepted: a.unique.length,
    deliveries: state.deliveries,
    subjects,
    history,
    conflicts: new Map(),
    conflictCounts: new Map(),
  };
  if (a.overDeliveryLimit) return parts; // a constant rejected packet: nothing else is needed
  const onRead = historyFragments === "on read";
  if (onRead) madeOnRead.add(parts);
  // One sort of the accepted observations in the reference's order gives the history list in order, each
  // subject's observations in time order and the latest of each and of all: no sort or scan per subject.
  const inTimeOf = new Map<SubjectGroup, Observation[]>();
  for (const group of a.groups) inTimeOf.set(group, []);
  const order = indexesInOrder(a.unique);
  for (const i of order) {
    const obs = a.unique[i]!;
    const group = a.groupOf[i]!;
    const fingerprint = a.fingerprints[i]!;
    inTimeOf.get(group)!.push(obs);
    history.set(obs.observation_id, onRead ? new DeferredHistoryPart(obs, group.subjectId, fingerprint) : historyPart(obs, group.subjectId, fingerprint));
  }
  const proposals: PyObject[] = [];
  let failure: string | null = null;
  for (const group of a.groups) {
    const prior = onRead ? undefined : previous.subjects.get(group.subjectId);
    const inTime = inTimeOf.get(group)!;
    const part = prior !== undefined && sameItems(prior.items, group.items) ? prior : subjectPartOf(group, inTime, undefined, onRead ? "canonical" : "stored");
    if (failure === null && part.recheckFailure !== null) failure = `projection subject ${group.subjectId} ${part.recheckFailure} is inconsistent`;
    if (part.proposal !== null) proposals.push({ state: part.conflict ? "conflict" : "review" });
    subjects.set(group.subjectId, part);
  }
  for (const c of a.conflicts) {
    const id = c.observation_id as string;
    const count = c.delivery_count as number;
    // Every delivery of a quarantined id raises its count, so an unchanged count means unchanged bytes.
    const prior = !onRead && previous.conflictCounts.get(id) === count ? previous.conflicts.get(id) : undefined;
    parts.conflicts.set(id, prior ?? (onRead ? canonicalJson(c) : compactJson(c)));
    parts.conflictCounts.set(id, count);
  }
  parts.skeleton = skeletonOf(context, a, proposals, order.length > 0 ? a.unique[order[order.length - 1]!] : undefined);
  // The re-reduction runs only on untruncated history, and never on bound-rejected packets.
  if (parts.rejected === null && failure !== null && a.unique.length <= MAX_PROJECTION_HISTORY) parts.rejected = invalidRequestJson(failure);
  return parts;
}

/** A packet's lists in the order the Redis read function concatenates them, and the skeleton's pieces around them. */
interface PacketLists {
  skeleton: string[];
  history: HistoryPart[];
  conflicts: string[];
  proposals: string[];
  subjects: string[];
}

/**
 * `inOrder`: the history parts were placed in the packet's order (computeParts
 * does, for parts made on read), so they are not sorted by member again, and
 * past the bound only the kept ones make theirs.
 */
function packetLists(parts: PartsView, inOrder: boolean): PacketLists {
  // Byte order, as Redis returns the members (and as Python orders the strings they encode).
  // Each member read once: a history part makes its member when read (historyPart).
  const byMember = <T extends { readonly member: string }>(m: ReadonlyMap<string, T>) => sortedByBytes([...m.values()].map((x) => ({ x, member: x.member })), (e) => e.member).map((e) => e.x);
  let history: HistoryPart[];
  if (parts.accepted > MAX_PROJECTION_HISTORY) {
    // The latest MAX_PROJECTION_HISTORY entries, and each subject's latest. By id (a member holds its id), so a
    // part made on read is asked for its member only if it is among the latest.
    let entries = [...parts.history];
    if (!inOrder) entries = sortedByBytes(entries.map((e) => ({ e, member: e[1].member })), (k) => k.member).map((k) => k.e);
    const keep = new Set([...parts.subjects.values()].map((s) => idOfMember(s.latest)!));
    for (let i = entries.length - 1; i >= 0 && keep.size < MAX_PROJECTION_HISTORY; i--) keep.add(entries[i]![0]);
    history = entries.filter((e) => keep.has(e[0])).map((e) => e[1]);
  } else history = inOrder ? [...parts.history.values()] : byMember(parts.history);
  const subjects = byMember(parts.subjects);
  const conflicts = [...parts.conflicts.keys()].sort().slice(0, MAX_PROJECTION_REJECTIONS);
  return {
    skeleton: parts.skeleton.split(SKELETON_SEPARATOR),
    history,
    conflicts: conflicts.map((id) => parts.conflicts.get(id)!),
    proposals: subjects.filter((s) => s.proposal !== null).map((s) => s.proposal!),
    subjects: subjects.map((s) => fragmentText(s.fragment)),
  };
}

/**
 * The packet's bytes, in the stored form, after its history list: what the
 * Redis read function concatenates (one piece per list, joined natively: a
 * flat string, not a concatenation per fragment).
 */
function afterHistory(l: PacketLists): string {
  const sk = l.skeleton;
  return [sk[1], "[", l.conflicts.join(","), "]", sk[2], "[", l.proposals.join(","), "]", sk[3], "[", l.subjects.join(","), "]", sk[4]].join("");
}

/**
 * The TypeScript twin of the Redis read function: parts to packet bytes (tokens
 * expanded). Parts computed for one assembly ("on read") write their history
 * list in canonical form directly (historyListJson): no stored fragment per
 * entry, and no token pass over the largest list.
 */
export function assembleParts(parts: PartsView): string {
  if (parts.rejected !== null) return parts.rejected;
  const onRead = onReadLists(parts);
  if (onRead !== null) return expandTokens(onRead.skeleton[0]!) + historyListJson(onRead.history as DeferredHistoryPart[]) + expandTokens(afterHistory(onRead));
  const l = packetLists(parts, false);
  return expandTokens(l.skeleton[0]! + "[" + l.history.map((h) => fragmentText(h.fragment)).join(",") + "]" + afterHistory(l));
}

/**
 * assembleParts' text and a newline, as the UTF-8 bytes the CLI writes. Parts
 * made on read (an ASCII packet) are written into one buffer and handed over,
 * not made a string and encoded again (at 300 deliveries that was a sixth of
 * the reduction): the skeleton's tokens expanded on the way, the history list
 * written from its observations, the other lists canonical already.
 */
export function assemblePartsLine(parts: PartsView): Buffer {
  const l = parts.rejected === null ? onReadLists(parts) : null;
  if (l !== null) {
    const out = lineText.start();
    putExpanded(out, l.skeleton[0]!);
    putHistoryList(out, l.history as DeferredHistoryPart[]);
    const lists = [l.conflicts, l.proposals, l.subjects];
    for (let i = 0; i < lists.length; i++) {
      putExpanded(out, l.skeleton[i + 1]!);
      out.put("[");
      const list = lists[i]!;
      for (let j = 0; j < list.length; j++) {
        if (j > 0) out.put(",");
        out.put(list[j]!); // canonical already (computeParts, on read)
      }
      out.put("]");
    }
    putExpanded(out, l.skeleton[4]!);
    const bytes = out.put("\n").take();
    if (bytes !== null) return bytes;
  }
  return Buffer.from(assembleParts(parts) + "\n");
}

const lineText = new CompactText();

/**
 * Parts computeParts made on read: history parts deferred and placed in order, the other lists canonical JSON.
 * Marked, not recognised by their history parts' class: parts with no accepted observation have none.
 */
const madeOnRead = new WeakSet<PartsView>();

/** The packet's lists when its parts were made on read, else null. */
function onReadLists(parts: PartsView): PacketLists | null {
  return madeOnRead.has(parts) ? packetLists(parts, true) : null;
}
