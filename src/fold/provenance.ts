/**
 * Provenance: for every delivery of an identity up to a point of the past,
 * what the fold made of it and which parts of the packet it feeds. The
 * packet is the reducer's over those deliveries (offset-index.ts); the
 * decisions are read off the same identity state, so their counts are the
 * packet's counters:
 *
 *  - accepted: the first delivery of an observation's payload, when its id
 *    has no other payload; accepted_observation_count counts them. (Its
 *    history entry carries the earliest created_at of the copies.)
 *  - duplicate: a later copy of an accepted observation's payload;
 *    duplicate_observation_count counts them.
 *  - conflicting: a delivery of an observation id delivered with more than
 *    one payload (quarantined); rejected_observation_count counts them and
 *    conflicting_observation_count their ids. A conflicting delivery that
 *    repeats a payload is also counted in duplicate_observation_count.
 *  - rejected: the packet is rejected as a whole (past a bound, or the
 *    reference's error), so no delivery feeds anything but that; the counts
 *    are then the rejected packet's own (the reference's: 1 rejected past the
 *    delivery bound, the accepted count past the subject bound).
 *
 * Pure: no IO.
 */
import { subjectIdOf, type ReducerContext } from "../core/identity.js";
import { emptyIdentityState, foldDelivery } from "../core/identity-state.js";
import { MAX_PROJECTION_OBSERVATIONS } from "../core/projection-limits.js";
import { includes, packetOf, type AsOfPoint, type IndexedDelivery } from "./offset-index.js";

export type Decision = "accepted" | "duplicate" | "conflicting" | "rejected";

/** The parts of the packet one delivery feeds. */
export interface Feeds {
  /** The subject its observation is counted in (and in whose evidence_label_summary), or null. */
  subject_id: string | null;
  /** Its observation's entry of observation_history (absent past the history bound). */
  history: boolean;
  /** Its observation id's entry of `rejections` (absent past the rejections bound). */
  conflict: boolean;
}

export interface ExplainedDelivery {
  partition: number;
  offset: bigint;
  /** The record's Kafka timestamp (ms since the epoch), or null when it had none. */
  timestamp: number | null;
  /** null: past the delivery bound, where payloads are dropped. */
  observation_id: string | null;
  decision: Decision;
  /** For `rejected`: the packet's reason codes (or its error). */
  reason: string | null;
  /** A copy of a payload delivered before it (counted in duplicate_observation_count). */
  repeat: boolean;
  feeds: Feeds;
}

/** The deliveries' decisions counted, named as the packet's counters they equal. */
export interface DecisionCounts {
  accepted_observation_count: number;
  duplicate_observation_count: number;
  conflicting_observation_count: number;
  rejected_observation_count: number;
  /** Deliveries of a rejected packet (whose counters are the packet's own, not counts of decisions). */
  rejected_deliveries: number;
}

export interface Explanation {
  /** The packet over the explained deliveries: the as-of read's bytes. */
  packet: string;
  status: string;
  deliveries: ExplainedDelivery[];
  counts: DecisionCounts;
}

interface PacketView {
  status?: string;
  accepted_observation_count?: number;
  duplicate_observation_count?: number;
  conflicting_observation_count?: number;
  rejected_observation_count?: number;
  subjects?: { subject_id: string }[];
  observation_history?: { observation_id: string }[];
  rejections?: { observation_id?: string; reason_codes?: string[] }[];
  error?: string;
}

const NOTHING: Feeds = { subject_id: null, history: false, conflict: false };

/**
 * Explain the deliveries a point includes (all of them when `point` is null), in the order they were applied.
 * Returns null when the point includes a delivery whose payload is gone without reaching the bound (as packetAsOf).
 */
export function explainDeliveries(context: ReducerContext, all: readonly IndexedDelivery[], point: AsOfPoint | null): Explanation | null {
  const chosen = point === null ? [...all] : all.filter((d) => includes(point, d));
  const state = emptyIdentityState();
  const repeat: boolean[] = [];
  let payloadless = false;
  for (const d of chosen) {
    if (d.observation === null) {
      payloadless = true;
      state.deliveries++;
      repeat.push(false);
    } else repeat.push(foldDelivery(state, d.observation, d.fingerprint) === "duplicate");
  }
  const over = chosen.length > MAX_PROJECTION_OBSERVATIONS;
  if (payloadless && !over) return null;
  if (over) state.byId.clear();
  const packet = packetOf(context, state);
  const view = JSON.parse(packet) as PacketView;
  const status = view.status ?? "";
  if (status === "rejected" || status === "invalid_request") {
    const reason = view.error ?? (view.rejections ?? []).flatMap((r) => r.reason_codes ?? []).join(",");
    const deliveries = chosen.map((d) => explained(d, "rejected", reason, false, NOTHING));
    const counts: DecisionCounts = {
      accepted_observation_count: view.accepted_observation_count ?? 0,
      duplicate_observation_count: view.duplicate_observation_count ?? 0,
      conflicting_observation_count: view.conflicting_observation_count ?? 0,
      rejected_observation_count: view.rejected_observation_count ?? 0,
      rejected_deliveries: deliveries.length,
    };
    return { packet, status, deliveries, counts };
  }
  const subjects = new Set((view.subjects ?? []).map((s) => s.subject_id));
  const history = new Set((view.observation_history ?? []).map((h) => h.observation_id));
  const conflicts = new Set((view.rejections ?? []).map((r) => r.observation_id));
  const counts = { ...ZERO };
  const conflicted = new Set<string>();
  const deliveries = chosen.map((d, i) => {
    const obs = d.observation!;
    const versions = state.byId.get(obs.observation_id)!;
    if (repeat[i]) counts.duplicate_observation_count++;
    if (versions.length > 1) {
      conflicted.add(obs.observation_id);
      counts.rejected_observation_count++;
      return explained(d, "conflicting", null, repeat[i]!, { ...NOTHING, conflict: conflicts.has(obs.observation_id) });
    }
    if (repeat[i]) return explained(d, "duplicate", null, true, NOTHING);
    counts.accepted_observation_count++;
    const subject = subjectIdOf(obs);
    return explained(d, "accepted", null, false, { subject_id: subjects.has(subject) ? subject : null, history: history.has(obs.observation_id), conflict: false });
  });
  counts.conflicting_observation_count = conflicted.size;
  return { packet, status, deliveries, counts };
}

const ZERO: DecisionCounts = {
  accepted_observation_count: 0,
  duplicate_observation_count: 0,
  conflicting_observation_count: 0,
  rejected_observation_count: 0,
  rejected_deliveries: 0,
};

function explained(d: IndexedDelivery, decision: Decision, reason: string | null, repeat: boolean, feeds: Feeds): ExplainedDelivery {
  return { partition: d.partition, offset: d.offset, timestamp: d.timestamp, observation_id: d.observation?.observation_id ?? null, decision, reason, repeat, feeds };
}
