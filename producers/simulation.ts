/**
 * Deterministic load from many agents: each agent applies recalled memories,
 * an evaluator judges the outcome, and the builder binds the judgment to the
 * trusted facts. Retries (same id, new timestamp) and changed judgments (same
 * id, new payload) are mixed in at the configured rates. Pure: no IO.
 */
import type { EvidenceBasis, Observation, UtilityLabel } from "../src/core/index.js";
import { observation, type ApplicationReceipt, type EvaluatorProposal, type ObservationInput } from "../src/client/observation.js";

export interface SimulationOptions {
  agents: number;
  observationsPerAgent: number;
  scopesPerAgent: number;
  /** Observations between snapshot rotations (new retrieval/policy refs, hence new identities). */
  snapshotEvery: number;
  duplicateRate: number;
  conflictRate: number;
  seed: number;
  /** Memories per corpus to draw digests from. */
  memories: number;
  startTime: string;
}

export const DEFAULT_SIMULATION: SimulationOptions = {
  agents: 50,
  observationsPerAgent: 200,
  scopesPerAgent: 1,
  snapshotEvery: 100,
  duplicateRate: 0.1,
  conflictRate: 0.01,
  seed: 1,
  memories: 40,
  startTime: "2026-11-01T00:00:00Z",
};

/** mulberry32: small, fast, seedable. */
export class Prng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 0x9e3779b9;
  }
  next(): number {
    let t = (this.s += 0x6d2b79f5);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

const hex16 = (n: number) => n.toString(16).padStart(16, "0");

const JUDGMENTS: [label: UtilityLabel, basis: EvidenceBasis, weight: number][] = [
  ["helpful", "evaluator_inference", 30],
  ["helpful", "deterministic_effect", 15],
  ["neutral", "evaluator_inference", 10],
  ["harmful", "evaluator_inference", 6],
  ["harmful", "controlled_replay", 3],
  ["helpful", "owner_correction", 2],
  ["unknown", "insufficient", 20],
  ["unknown", "deterministic_effect", 4],
];
const TOTAL_WEIGHT = JUDGMENTS.reduce((a, [, , w]) => a + w, 0);

/** The trusted facts of one application, reused by its retries and changed judgments. */
type Facts = Pick<ObservationInput, "receipt" | "outcome" | "context">;

export interface SimulatedDelivery {
  observation: Observation;
  kind: "original" | "retry" | "conflict";
}

function isoAt(startMs: number, seconds: number, rng: Prng): string {
  const d = new Date(startMs + seconds * 1000);
  const base = d.toISOString().slice(0, 19);
  // Agents spell time differently; the contract orders by instant, then text.
  return rng.chance(0.8) ? `${base}Z` : `${base}+00:00`;
}

/** Generate every delivery of a simulation, in production order. */
export function* simulate(options: Partial<SimulationOptions> = {}): Generator<SimulatedDelivery> {
  const o = { ...DEFAULT_SIMULATION, ...options };
  const rng = new Prng(o.seed);
  const startMs = Date.parse(o.startTime);
  const history: { facts: Facts; proposal: EvaluatorProposal; createdAt: string }[][] = Array.from({ length: o.agents }, () => []);
  let clock = 0;
  for (let step = 0; step < o.observationsPerAgent; step++) {
    for (let a = 0; a < o.agents; a++) {
      clock += 1;
      const past = history[a]!;
      if (past.length > 0 && rng.chance(o.duplicateRate)) {
        const prior = rng.pick(past);
        yield { observation: observation({ ...prior.facts, proposal: prior.proposal, createdAt: isoAt(startMs, clock, rng) }), kind: "retry" };
        continue;
      }
      if (past.length > 0 && rng.chance(o.conflictRate)) {
        const prior = rng.pick(past);
        const changed = { ...prior.proposal, confidence: Math.round(rng.next() * 100) / 100, reason_codes: ["judgment:revised"] };
        yield { observation: observation({ ...prior.facts, proposal: changed, createdAt: prior.createdAt }), kind: "conflict" };
        continue;
      }
      const scopeIndex = rng.int(0, o.scopesPerAgent - 1);
      const scope = { agent_id: `agent:${a}`, project_id: `project:${scopeIndex}`, corpus_id: `corpus:${scopeIndex % 3}`, surface_id: "surface:issue_fix" };
      const snapshot = Math.floor(step / o.snapshotEvery);
      const retrieval = `retrieval:${scopeIndex % 3}.${snapshot}`;
      const policy = `policy:${snapshot}`;
      const count = rng.int(1, 3);
      const digests = [...new Set(Array.from({ length: count }, () => hex16(rng.int(1, o.memories) * 7919 + (scopeIndex % 3))))].sort();
      const receipt: ApplicationReceipt = {
        schema_version: "reward_memory_application_receipt_v0",
        application_id: `app:${a}.${step}`,
        artifact_ref: `artifact:${a}/${step}`,
        corpus_id: scope.corpus_id,
        surface_id: scope.surface_id,
        mode: "function_boundary",
        query_kind: "business_recall",
        query_evidence: [],
        outcome: "applied",
        memory_ref_digests: digests,
        reasoning_summary: `agent ${a} applied ${digests.length} recalled memories`,
        current_artifact_verified: true,
        result_readback_verified: true,
        provider_call_count: 1,
        model_reasoning_preserved: true,
        grants_new_action_authority: false,
        external_writes_performed: false,
        raw_content_captured: false,
      };
      let roll = rng.next() * TOTAL_WEIGHT;
      let [label, basis] = JUDGMENTS[0]!;
      for (const [l, b, w] of JUDGMENTS) {
        if ((roll -= w) < 0) {
          [label, basis] = [l, b];
          break;
        }
      }
      const level = label === "unknown" && rng.chance(0.2) ? "none" : digests.length === 1 || rng.chance(0.5) ? "item" : "set";
      const subjectDigests = level === "item" ? [rng.pick(digests)] : digests;
      const outcomeRef = `outcome:${a}.${step}`;
      const facts: Facts = {
        receipt,
        outcome: { verified: true, outcome_ref: outcomeRef, artifact_ref: `artifact:${a}/${step}`, outcome_status: "merged" },
        context: { scope, retrieval_snapshot_ref: retrieval, policy_snapshot_ref: policy },
      };
      const strong = basis === "owner_correction" || basis === "controlled_replay" || basis === "deterministic_effect";
      const proposal: EvaluatorProposal = {
        scope,
        application_id: `app:${a}.${step}`,
        artifact_ref: `artifact:${a}/${step}`,
        outcome_ref: outcomeRef,
        outcome_status: "merged",
        retrieval_snapshot_ref: retrieval,
        policy_snapshot_ref: policy,
        memory_ref_digests: subjectDigests,
        utility_label: label,
        attribution_level: level,
        evidence_basis: basis,
        confidence: Math.round(rng.next() * 100) / 100,
        reason_codes: label === "unknown" ? [] : [`signal:${label}`],
        evidence_refs: label !== "unknown" || strong ? [`evidence:${a}.${step}`] : [],
        evaluator_ref: "evaluator:sim",
        evaluation_version: "eval:v1",
      };
      const createdAt = isoAt(startMs, clock, rng);
      past.push({ facts, proposal, createdAt });
      yield { observation: observation({ ...facts, proposal, createdAt }), kind: "original" };
    }
  }
}
