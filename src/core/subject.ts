/**
 * One subject's utility estimate (`_reduce_subject`): support counts, evidence
 * precedence, combined confidence over the strongest directional tier, and the
 * review state it proposes. Pure arithmetic in the reference's order.
 */
// From the types' own module, not the validator (observation.ts): its JSON writers import compact-json, which imports this.
import type { AttributionLevel, EvidenceBasis, Observation, UtilityLabel } from "./observation-model.js";
import { latestOf } from "./ordering.js";
import { pyRound6 } from "./pyfloat.js";
import { PyFloat } from "./pyvalue.js";
import { insertAt, removeAt } from "./list-edit.js";

export const EVIDENCE_ORDER: readonly EvidenceBasis[] = [
  "insufficient",
  "evaluator_inference",
  "deterministic_effect",
  "controlled_replay",
  "owner_correction",
];
export const EVIDENCE_RANK: Readonly<Record<EvidenceBasis, number>> = {
  insufficient: 0,
  evaluator_inference: 1,
  deterministic_effect: 2,
  controlled_replay: 3,
  owner_correction: 4,
};
export const UTILITY_LABEL_ORDER: readonly UtilityLabel[] = ["helpful", "harmful", "neutral", "unknown"];
export const LABEL_DIRECTIONS: Readonly<Partial<Record<UtilityLabel, number>>> = { helpful: 1, harmful: -1, neutral: 0 };

export const UTILITY_MIN = -1.0;
export const UTILITY_MAX = 1.0;

export function isDirectional(label: string): boolean {
  return label === "helpful" || label === "harmful" || label === "neutral";
}

/** `round(min(upper, max(lower, value)), 6)` with Python's min/max tie rules (first wins). */
export function bounded(value: number, lower: number, upper: number): number {
  let v = value > lower ? value : lower;
  v = v < upper ? v : upper;
  return pyRound6(v);
}

const LABEL_RANK: Readonly<Record<UtilityLabel, number>> = { helpful: 0, harmful: 1, neutral: 2, unknown: 3 };
const LABELS = UTILITY_LABEL_ORDER.length;
const BUCKETS = EVIDENCE_ORDER.length * LABELS;
const UNKNOWN_BIT = 1 << LABEL_RANK.unknown;

/**
 * What a subject's estimate is made of, in one pass over its observations in list order: counts per
 * (basis, label) bucket, and each bucket's running `remaining` of the reference's combined
 * confidence, `1 - Π(1 - clamp01(c))` — the same multiplications in the same order, so the same
 * bits — plus, per evidence tier, the remaining of its directional observations and which labels
 * it holds.
 */
interface SubjectStats {
  /** Observations per bucket (basis rank × 4 + label rank). */
  count: number[];
  /** The combined confidence's `remaining` per bucket, in list order. */
  remaining: number[];
  /** Per tier: `remaining` of its directional observations, in list order. */
  directionalRemaining: number[];
  /** Per tier: a bit per label present (label rank). */
  labels: number[];
  /** The strongest tier present (-1: none). */
  strongest: number;
  /** The weakest tier with a directional observation (5: none). */
  weakestDirectional: number;
}

// Plain arrays copied from these, not typed arrays: a typed array costs ~10x as much to make (~1 µs for the
// four), and this runs for every subject a fold touches. The values are doubles and small integers either way.
// The constants are packed arrays, and the products' hold doubles from the start (made from 0.5, then set to 1):
// no copy has to convert its storage on the first multiplication. Set by a loop, never by fill: on Node 24,
// fill(1.0) turns a double array into one of small integers, which the next product converts back (a new
// backing store each time: ~350 bytes a reset of the two lists).
const ZERO_BUCKETS: readonly number[] = Array.from({ length: BUCKETS }, () => 0);
const ONE_BUCKETS: readonly number[] = ones(Array.from({ length: BUCKETS }, () => 0.5));
const ZERO_TIERS: readonly number[] = Array.from({ length: EVIDENCE_ORDER.length }, () => 0);
const ONE_TIERS: readonly number[] = ones(Array.from({ length: EVIDENCE_ORDER.length }, () => 0.5));

/** Every element of `a` set to 1.0, keeping its storage of doubles (see above). */
function ones(a: number[]): number[] {
  for (let i = 0; i < a.length; i++) a[i] = 1.0;
  return a;
}

/** An observation's bucket in a subject's estimate: basis rank × 4 + label rank. */
function bucketOf(o: Observation): number {
  return EVIDENCE_RANK[o.evidence_basis] * LABELS + LABEL_RANK[o.utility_label];
}

/** An observation's factor in its bucket's `remaining`: `1 - clamp01(confidence)`, as the reference clamps. */
function factorOf(o: Observation): number {
  const c = o.confidence;
  const clamped = (c > 0.0 ? c : 0.0) < 1.0 ? (c > 0.0 ? c : 0.0) : 1.0;
  return 1.0 - clamped;
}

/**
 * A subject's observations as the estimate reads them, in one order: each one's
 * bucket and factor in two parallel arrays of numbers. A fold keeps one per
 * order and splices it with its observation lists, so re-reducing a subject of
 * n observations walks 2n numbers instead of n objects spread over the heap
 * (at 1,000 deliveries that walk was a fifth of a plan). The products come out
 * the same: the same factors, multiplied in the same order.
 *
 * The list also keeps the stats of its last walk. An observation appended at
 * the end (in time order, the usual case: a new observation is the latest)
 * multiplies into them, which is exactly the walk's last step, so they stay
 * what a walk would give; one inserted elsewhere or removed drops them, and
 * the next read walks again. A flush reads each order's stats twice (the
 * estimate, then the recheck), so the second read never walks.
 */
export class FactorList {
  /** The stats of the whole list, or null until the next read walks it. Read-only to every reader. */
  private stats: SubjectStats | null = null;
  /** The last stats dropped, reset and walked into by the next read: a read does not hold them across a change. */
  private spare: SubjectStats | null = null;

  private constructor(
    readonly buckets: number[],
    readonly factors: number[],
  ) {}

  /** The lists of `observations`, in their order. */
  static of(observations: readonly Observation[]): FactorList {
    return new FactorList(observations.map(bucketOf), observations.map(factorOf));
  }

  insert(at: number, o: Observation): void {
    const bucket = bucketOf(o);
    const factor = factorOf(o);
    if (this.stats !== null && at === this.buckets.length) addToStats(this.stats, bucket, factor);
    else this.drop();
    insertAt(this.buckets, at, bucket);
    insertAt(this.factors, at, factor);
  }

  remove(at: number): void {
    this.drop();
    removeAt(this.buckets, at);
    removeAt(this.factors, at);
  }

  private drop(): void {
    if (this.stats !== null) this.spare = this.stats;
    this.stats = null;
  }

  /** The stats of the list in its order (walked only when they were dropped since the last read). */
  read(): Readonly<SubjectStats> {
    if (this.stats === null) {
      const stats = this.spare === null ? emptyStats() : resetStats(this.spare);
      this.spare = null;
      const { buckets, factors } = this;
      for (let i = 0; i < buckets.length; i++) addToStats(stats, buckets[i]!, factors[i]!);
      this.stats = stats;
    }
    return this.stats;
  }
}

function emptyStats(): SubjectStats {
  return {
    count: ZERO_BUCKETS.slice(),
    remaining: ONE_BUCKETS.slice(),
    directionalRemaining: ONE_TIERS.slice(),
    labels: ZERO_TIERS.slice(),
    strongest: -1,
    weakestDirectional: EVIDENCE_ORDER.length,
  };
}

/** `s` as emptyStats makes it, in place (the products' lists stay doubles: see `ones`). */
function resetStats(s: SubjectStats): SubjectStats {
  s.count.fill(0);
  ones(s.remaining);
  ones(s.directionalRemaining);
  s.labels.fill(0);
  s.strongest = -1;
  s.weakestDirectional = EVIDENCE_ORDER.length;
  return s;
}

/** One observation into the stats: `at` its bucket, `f` its factor. */
function addToStats(s: SubjectStats, at: number, f: number): void {
  const label = at % LABELS;
  const rank = (at - label) / LABELS;
  s.count[at]!++;
  s.remaining[at]! *= f;
  s.labels[rank]! |= 1 << label;
  if (rank > s.strongest) s.strongest = rank;
  if (label !== LABEL_RANK.unknown) {
    s.directionalRemaining[rank]! *= f;
    if (rank < s.weakestDirectional) s.weakestDirectional = rank;
  }
}

/**
 * Where a list without factor lists (a small subject, most of them) is walked: reset and reused, not made for
 * each reduction. Every reader reads its stats before the next walk into the same scratch (sameRoundedProducts
 * walks its two lists into two).
 */
const SCRATCH: readonly [SubjectStats, SubjectStats] = [emptyStats(), emptyStats()];

function subjectStats(observations: readonly Observation[] | FactorList, scratch: 0 | 1 = 0): Readonly<SubjectStats> {
  if (observations instanceof FactorList) return observations.read();
  const stats = resetStats(SCRATCH[scratch]);
  for (const o of observations) addToStats(stats, bucketOf(o), factorOf(o));
  return stats;
}

/**
 * Whether every product the subject's estimate multiplies comes out the same in
 * both orders (packet-parts.ts's recheck: id order and time order). Only those
 * products depend on the order (the counts, labels, bases and review state do
 * not), so when they agree the re-reduction agrees too and is skipped; when one
 * differs, the full re-reduction decides (and names the field). Checked: the
 * 20 buckets' `remaining` (the evidence summary) and the 5 tiers' directional
 * `remaining`, a superset of what reduceSubject combines; two products that
 * differ in their last bits agree if what the estimate shows of them,
 * `bounded(1 - x, 0, 1)`, does. With factor lists neither side walks again:
 * the id order's stats are those the estimate just read, the time order's were
 * kept across appends (FactorList).
 */
export function sameRoundedProducts(a: readonly Observation[] | FactorList, b: readonly Observation[] | FactorList): boolean {
  const x = subjectStats(a);
  const y = subjectStats(b, 1);
  return sameRounded(x.remaining, y.remaining) && sameRounded(x.directionalRemaining, y.directionalRemaining);
}

function sameRounded(x: readonly number[], y: readonly number[]): boolean {
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i] && bounded(1.0 - x[i]!, 0.0, 1.0) !== bounded(1.0 - y[i]!, 0.0, 1.0)) return false;
  return true;
}

/** The evidence summary of `stats`; into `into`'s entries when given (a scratch subject's: see reduceSubject). */
function summaryOfStats(stats: Readonly<SubjectStats>, into?: LabelSummaryEntry[]): LabelSummaryEntry[] {
  const result: LabelSummaryEntry[] = into ?? [];
  let n = 0;
  for (let at = 0; at < BUCKETS; at++) {
    const count = stats.count[at]!;
    if (count === 0) continue;
    const combined = bounded(1.0 - stats.remaining[at]!, 0.0, 1.0);
    const basis = EVIDENCE_ORDER[Math.floor(at / LABELS)]!;
    const label = UTILITY_LABEL_ORDER[at % LABELS]!;
    const entry = n < result.length ? result[n] : undefined;
    if (entry !== undefined) {
      reuseFloat(entry.combined_confidence, combined);
      entry.evidence_basis = basis;
      entry.observation_count = count;
      entry.utility_label = label;
    } else {
      // Keys in canonical (sorted) order, so the writers need not sort them for every subject they render.
      result.push({ combined_confidence: new PyFloat(combined), evidence_basis: basis, observation_count: count, utility_label: label });
    }
    n++;
  }
  result.length = n;
  return result;
}

/** The number of labels in a bit set. */
function labelCount(bits: number): number {
  let n = 0;
  for (let b = bits; b !== 0; b &= b - 1) n++;
  return n;
}

/** A subject's review, as reduceSubject writes it (the packet's `review` and the proposal's fields). */
export type SubjectReview = {
  state: string;
  proposed_action: string;
  reason_codes: string[];
  quarantine_proposed: boolean;
  automatic_deletion: false;
  action_authority_granted: false;
};

/**
 * A packet subject, as reduceSubject makes it: every key and the type of every
 * value fixed, so its stored form can be written without inspecting it
 * (compact-json.ts, storedSubject). A PyObject like any other value.
 */
export type ReducedSubject = {
  subject_id: string;
  attribution_level: AttributionLevel;
  memory_ref_digests: string[];
  utility_estimate: PyFloat;
  utility_bounds: { min: PyFloat; max: PyFloat };
  effective_utility_label: UtilityLabel;
  effective_evidence_basis: EvidenceBasis;
  confidence: PyFloat;
  uncertainty: PyFloat;
  support: Record<UtilityLabel, number>;
  evidence_strength: Record<EvidenceBasis, number>;
  evidence_label_summary: LabelSummaryEntry[];
  observation_count: number;
  last_observed_at: string | null;
  last_observation_id: string | null;
  review: SubjectReview;
  read_only: true;
  automatic_deletion: false;
  action_authority_granted: false;
};

/** One (basis, label) bucket of a subject's evidence summary, its keys in canonical order. */
export type LabelSummaryEntry = { combined_confidence: PyFloat; evidence_basis: EvidenceBasis; observation_count: number; utility_label: UtilityLabel };

export function review(state: string, action: string, reasonCodes: readonly string[]): SubjectReview {
  return {
    state,
    proposed_action: action,
    // sorted(set(...)): none or one code (nearly every subject) needs no set and no sort
    reason_codes: reasonCodes.length <= 1 ? reasonCodes.slice() : [...new Set(reasonCodes)].sort(),
    quarantine_proposed: state === "conflict",
    automatic_deletion: false,
    action_authority_granted: false,
  };
}

/** Every subject's bounds (shared: a subject is written, never changed). */
const UTILITY_BOUNDS: ReducedSubject["utility_bounds"] = Object.freeze({ min: new PyFloat(UTILITY_MIN), max: new PyFloat(UTILITY_MAX) });

export function reduceSubject(
  subjectId: string,
  level: AttributionLevel,
  digests: readonly string[],
  observations: readonly Observation[],
  /** The latest observation in the reference's order, when the caller keeps them in time order (saves a scan). */
  latest?: Observation,
  /** The observations' buckets and factors in the same order, when the caller keeps them (saves a walk). */
  factors?: FactorList,
  /**
   * Write into this subject (scratchSubject) instead of making one: for a caller that writes the subject out
   * before the next reduction into it, and keeps nothing of it (a flush: ~0.8 KB a subject of young garbage).
   */
  into?: ReducedSubject,
): ReducedSubject {
  const stats = subjectStats(factors ?? observations);
  const support: Record<UtilityLabel, number> = into?.support ?? { helpful: 0, harmful: 0, neutral: 0, unknown: 0 };
  const strength: Record<EvidenceBasis, number> = into?.evidence_strength ?? {
    insufficient: 0,
    evaluator_inference: 0,
    deterministic_effect: 0,
    controlled_replay: 0,
    owner_correction: 0,
  };
  if (into !== undefined) {
    support.helpful = support.harmful = support.neutral = support.unknown = 0;
    strength.insufficient = strength.evaluator_inference = strength.deterministic_effect = strength.controlled_replay = strength.owner_correction = 0;
  }
  for (let at = 0; at < BUCKETS; at++) {
    const n = stats.count[at]!;
    if (n === 0) continue;
    support[UTILITY_LABEL_ORDER[at % LABELS]!] += n;
    strength[EVIDENCE_ORDER[Math.floor(at / LABELS)]!] += n;
  }
  const strongestRank = stats.strongest;
  const anyKnown = stats.weakestDirectional < EVIDENCE_ORDER.length;
  let effectiveBasis = EVIDENCE_ORDER[strongestRank]!;
  let effectiveLabel: UtilityLabel = "unknown";
  let confidence = 0.0;
  let utility = 0.0;
  let uncertainty = 1.0;
  let reviewState = "none";
  let reviewAction = "none";
  const reasons: string[] = into === undefined ? [] : into.review.reason_codes;
  reasons.length = 0;
  if (level === "none") {
    reviewState = "unresolved_attribution";
    reviewAction = "collect_attribution";
    reasons.push("attribution_not_established");
  } else if (anyKnown) {
    const strongestLabels = stats.labels[strongestRank]!;
    const directionalLabels = strongestLabels & ~UNKNOWN_BIT;
    const directionalKinds = labelCount(directionalLabels);
    const hasLowerDirection = stats.weakestDirectional < strongestRank;
    if ((strongestLabels & UNKNOWN_BIT) !== 0) {
      // An explicit unknown at the strongest tier blocks weaker directional inference.
      if (directionalKinds > 0 || hasLowerDirection) {
        reviewState = "conflict";
        reviewAction = "manual_review";
        reasons.push("strongest_evidence_unknown");
      }
      if (directionalKinds > 1) {
        reviewState = "conflict";
        reviewAction = "manual_review";
        reasons.push("same_evidence_tier_conflict");
      }
    } else if (directionalKinds !== 1) {
      reviewState = "conflict";
      reviewAction = "manual_review";
      reasons.push("same_evidence_tier_conflict");
    } else {
      // One directional label at the strongest tier: its observations' confidences combine, in list order.
      effectiveLabel = UTILITY_LABEL_ORDER[31 - Math.clz32(directionalLabels)]!;
      effectiveBasis = EVIDENCE_ORDER[strongestRank]!;
      confidence = bounded(1.0 - stats.directionalRemaining[strongestRank]!, 0.0, 1.0);
      utility = bounded(LABEL_DIRECTIONS[effectiveLabel]! * confidence, UTILITY_MIN, UTILITY_MAX);
      uncertainty = bounded(1.0 - confidence, 0.0, 1.0);
      if (effectiveLabel === "harmful") {
        reviewState = "attenuation_proposed";
        reviewAction = "attenuate_or_review";
        reasons.push("negative_utility_requires_review");
      }
    }
  }
  let lastAt: string | null;
  let lastId: string | null;
  if (latest !== undefined) {
    lastAt = latest.created_at;
    lastId = latest.observation_id;
  } else [lastAt, lastId] = latestOf(observations);
  if (into !== undefined) {
    into.subject_id = subjectId;
    into.attribution_level = level;
    into.memory_ref_digests = digests as string[];
    reuseFloat(into.utility_estimate, utility);
    into.effective_utility_label = effectiveLabel;
    into.effective_evidence_basis = effectiveBasis;
    reuseFloat(into.confidence, confidence);
    reuseFloat(into.uncertainty, uncertainty);
    summaryOfStats(stats, into.evidence_label_summary);
    into.observation_count = observations.length;
    into.last_observed_at = lastAt;
    into.last_observation_id = lastId;
    reviewInto(into.review, reviewState, reviewAction);
    return into;
  }
  return {
    subject_id: subjectId,
    attribution_level: level,
    memory_ref_digests: digests as string[], // the group's own list: a subject is written, never changed
    utility_estimate: new PyFloat(utility),
    utility_bounds: UTILITY_BOUNDS,
    effective_utility_label: effectiveLabel,
    effective_evidence_basis: effectiveBasis,
    confidence: new PyFloat(confidence),
    uncertainty: new PyFloat(uncertainty),
    support,
    evidence_strength: strength,
    evidence_label_summary: summaryOfStats(stats),
    observation_count: observations.length,
    last_observed_at: lastAt,
    last_observation_id: lastId,
    review: review(reviewState, reviewAction, reasons),
    read_only: true,
    automatic_deletion: false,
    action_authority_granted: false,
  };
}

/**
 * A scratch subject's float set to `value`. The scratch owns its floats (scratchSubject made them, and a
 * summary entry's when the entry was first pushed), and its reader writes it out before the next reduction,
 * so one object each serves every reduction: ~190 bytes a subject less garbage.
 */
function reuseFloat(f: PyFloat, value: number): void {
  (f as { value: number }).value = value;
}

/** A subject for reduceSubject to write into, again and again (its `into`; its review's reason list is its own). */
export function scratchSubject(): ReducedSubject {
  return reduceSubject("", "item", [], []);
}

/** `review(state, action, r.reason_codes)` written into `r`: the codes, collected there, set and sorted in place. */
function reviewInto(r: SubjectReview, state: string, action: string): void {
  r.state = state;
  r.proposed_action = action;
  if (r.reason_codes.length > 1) {
    const codes = [...new Set(r.reason_codes)].sort();
    r.reason_codes.length = 0;
    for (const c of codes) r.reason_codes.push(c);
  }
  r.quarantine_proposed = state === "conflict";
}
