/**
 * What a projection is made of, computed from identity state: the accepted
 * observations, the quarantined ids, the counters and the subject groups in
 * the reference's order. The batch reducer turns this into a packet; the fold
 * turns it into stored fragments. One analysis keeps the two identical.
 */
import { AsciiText } from "./ascii-text.js";
import { sortedIds } from "./id-order.js";
import type { ProposalFields } from "./compact-json.js";
import { subjectIdOf } from "./identity.js";
import type { IdentityState } from "./identity-state.js";
import type { AttributionLevel, Observation } from "./observation.js";
import { MAX_CONFLICT_FINGERPRINTS, MAX_PROJECTION_OBSERVATIONS, MAX_PROJECTION_SUBJECTS } from "./projection-limits.js";
import type { PyObject } from "./pyvalue.js";
import { reduceSubject, scratchSubject, type FactorList, type ReducedSubject, type SubjectReview } from "./subject.js";

export interface SubjectGroup {
  level: AttributionLevel;
  /** Sort key: the digests, or [subject id] for lineage (none) subjects. */
  key: string[];
  subjectId: string;
  digests: string[];
  /** Accepted observations of the subject, in observation_id order. */
  items: Observation[];
}

export interface IdentityAnalysis {
  overDeliveryLimit: boolean;
  overSubjectLimit: boolean;
  /** Accepted (non-quarantined) representatives, in observation_id order. */
  unique: Observation[];
  /** Each accepted representative's fingerprint, by its index in `unique`. */
  fingerprints: string[];
  /** Each accepted representative's subject group, by its index in `unique`. */
  groupOf: SubjectGroup[];
  /** Rejection entries of quarantined ids, in observation_id order (unbounded). */
  conflicts: PyObject[];
  duplicateCount: number;
  conflictingDeliveries: number;
  /** Subject groups in the packet's subject order. */
  groups: SubjectGroup[];
}

export function conflictEntry(id: string, fingerprints: readonly string[], deliveries: number): PyObject {
  const prints = [...fingerprints].sort();
  return {
    observation_id: id,
    reason_codes: ["conflicting_observation_delivery"],
    delivery_count: deliveries,
    delivery_fingerprints: prints.slice(0, MAX_CONFLICT_FINGERPRINTS),
    delivery_fingerprints_truncated: prints.length > MAX_CONFLICT_FINGERPRINTS,
    quarantine_proposed: true,
    automatic_deletion: false,
    action_authority_granted: false,
  };
}

/** Python tuple order of (level, digests-or-(subject_id,)). */
export function compareGroupKeys(a: Pick<SubjectGroup, "level" | "key">, b: Pick<SubjectGroup, "level" | "key">): number {
  if (a.level !== b.level) return a.level < b.level ? -1 : 1;
  const n = Math.min(a.key.length, b.key.length);
  for (let i = 0; i < n; i++) if (a.key[i] !== b.key[i]) return a.key[i]! < b.key[i]! ? -1 : 1;
  return a.key.length - b.key.length;
}

/**
 * The subject an accepted observation belongs to, as a map key: its level and
 * digests, and for a lineage (none) subject its receipt too — what the subject
 * id hashes, so equal keys mean equal ids and the id is hashed once per group.
 */
export function subjectGroupKey(obs: Observation): string {
  // Written into one buffer: the joined digests and the template around them were two strings and, once the
  // map hashed the key, a flattened third (~0.2 KB an accepted observation).
  const t = keyText.start();
  if (obs.attribution_level === "none") t.put("none\u0001").put(obs.application_receipt_id).put("\u0001");
  else t.put(obs.attribution_level).put("\u0000");
  const digests = obs.memory_ref_digests;
  for (let i = 0; i < digests.length; i++) {
    if (i > 0) t.put("\u0000");
    t.put(digests[i]!);
  }
  return t.text() ?? joinedGroupKey(obs);
}

const keyText = new AsciiText();

/** subjectGroupKey by joining: any text (a fold's receipts and digests are ASCII). */
function joinedGroupKey(obs: Observation): string {
  const digests = obs.memory_ref_digests.join("\u0000");
  return obs.attribution_level === "none" ? `none\u0001${obs.application_receipt_id}\u0001${digests}` : `${obs.attribution_level}\u0000${digests}`;
}

/** A new, empty subject group for `obs`'s subject. */
export function subjectGroupOf(obs: Observation): SubjectGroup {
  const subjectId = subjectIdOf(obs);
  const key = obs.attribution_level === "none" ? [subjectId] : obs.memory_ref_digests;
  return { level: obs.attribution_level, key, subjectId, digests: obs.memory_ref_digests, items: [] };
}

export function analyzeIdentityState(state: IdentityState): IdentityAnalysis {
  const ids = sortedIds([...state.byId.keys()]);
  const unique: Observation[] = [];
  const fingerprints: string[] = [];
  const conflicts: PyObject[] = [];
  let duplicateCount = 0;
  let conflictingDeliveries = 0;
  for (const id of ids) {
    const versions = state.byId.get(id)!;
    let deliveries = 0;
    for (const v of versions) {
      duplicateCount += v.count - 1;
      deliveries += v.count;
    }
    if (versions.length > 1) {
      conflictingDeliveries += deliveries;
      conflicts.push(conflictEntry(id, versions.map((v) => v.fingerprint), deliveries));
      continue;
    }
    const only = versions[0]!;
    unique.push(only.representative);
    fingerprints.push(only.fingerprint);
  }
  const byKey = new Map<string, SubjectGroup>();
  const groupOf: SubjectGroup[] = new Array<SubjectGroup>(unique.length);
  for (let i = 0; i < unique.length; i++) {
    const obs = unique[i]!;
    const mapKey = subjectGroupKey(obs);
    let group = byKey.get(mapKey);
    if (group === undefined) byKey.set(mapKey, (group = subjectGroupOf(obs)));
    group.items.push(obs);
    groupOf[i] = group;
  }
  const groups = [...byKey.values()].sort(compareGroupKeys);
  return {
    overDeliveryLimit: state.deliveries > MAX_PROJECTION_OBSERVATIONS,
    overSubjectLimit: groups.length > MAX_PROJECTION_SUBJECTS,
    unique,
    fingerprints,
    groupOf,
    conflicts,
    duplicateCount,
    conflictingDeliveries,
    groups,
  };
}

/** Where subjectOfGroup writes when asked for a scratch result (one at a time: see reduceSubject's `into`). */
const scratch = { subject: scratchSubject(), proposal: null as (ProposalFields & PyObject) | null };
const scratchProposal = subjectProposal({ subjectId: "", level: "item", digests: [] }, scratch.subject.review);

/** The review proposal of a subject; written into `into` when given, sharing the group's and the review's lists. */
function subjectProposal(group: Pick<SubjectGroup, "subjectId" | "level" | "digests">, rv: SubjectReview, into?: ProposalFields & PyObject): ProposalFields & PyObject {
  if (into === undefined) {
    return {
      subject_id: group.subjectId,
      attribution_level: group.level,
      memory_ref_digests: [...group.digests],
      state: rv.state,
      proposed_action: rv.proposed_action,
      reason_codes: [...rv.reason_codes],
      quarantine_proposed: rv.quarantine_proposed,
      automatic_deletion: false,
      action_authority_granted: false,
    };
  }
  into.subject_id = group.subjectId;
  into.attribution_level = group.level;
  into.memory_ref_digests = group.digests as string[];
  into.state = rv.state;
  into.proposed_action = rv.proposed_action;
  into.reason_codes = rv.reason_codes;
  into.quarantine_proposed = rv.quarantine_proposed;
  return into;
}

/**
 * A subject's packet entry and, when its review state is not none, its review proposal. `reuse`: the result, its
 * subject and its proposal are scratch objects, overwritten by the next such call, for a caller that writes them
 * out at once (a flush's stored fragments); they share the group's digests and the subject's reason codes.
 */
export function subjectOfGroup(group: SubjectGroup, latest?: Observation, factors?: FactorList, reuse = false): { subject: ReducedSubject; proposal: (ProposalFields & PyObject) | null } {
  if (!reuse) {
    const subject = reduceSubject(group.subjectId, group.level, group.digests, group.items, latest, factors);
    return { subject, proposal: subject.review.state === "none" ? null : subjectProposal(group, subject.review) };
  }
  const rv = reduceSubject(group.subjectId, group.level, group.digests, group.items, latest, factors, scratch.subject).review;
  scratch.proposal = rv.state === "none" ? null : subjectProposal(group, rv, scratchProposal);
  return scratch;
}
