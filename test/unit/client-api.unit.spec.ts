/**
 * The public API's pure parts: the Projection types hold exactly the fields
 * real packets have (checked by the compiler one way, at run time the other),
 * the typed builder fails closed, and change feed entries parse or fail loudly.
 */
import { describe, expect, it } from "vitest";
import { ContractError, canonicalJson, contextOfObservation, observationToPy, parsePyJson, reduceObservations } from "../../src/core/index.js";
import {
  PROJECTION_STATUSES,
  observation,
  observationRecord,
  type ConflictRejection,
  type HistoryEntry,
  type Projection,
  type ReviewProposal,
  type Subject,
} from "../../src/client/index.js";
import { parseChangeEntry } from "../../src/client/change-feed.js";
import { expectedPackets } from "../support/oracle.js";
import { simulate } from "../../producers/simulation.js";

/** Every key of T, listed: a missing one fails the typecheck (tsc runs over test/). */
function keysOf<T>() {
  return <const K extends readonly (keyof T)[]>(keys: K & ([Exclude<keyof T, K[number]>] extends [never] ? unknown : { missing: Exclude<keyof T, K[number]> })) => [...keys].sort() as string[];
}

const PROJECTION_KEYS = keysOf<Projection>()([
  "ok", "schema_version", "status", "projection_ready", "reducer_version", "reducer_identity", "scope",
  "retrieval_snapshot_ref", "policy_snapshot_ref", "accepted_observation_count", "duplicate_observation_count",
  "conflicting_observation_count", "rejected_observation_count", "lineage_observation_count", "subject_count",
  "item_subject_count", "set_subject_count", "unresolved_lineage_count", "last_observed_at", "last_observation_id",
  "subjects", "observation_history", "observation_history_truncated", "rejections", "review_proposals", "read_only",
  "grants_new_action_authority", "provider_write_performed", "external_writes_performed", "raw_content_captured",
]);
const SUBJECT_KEYS = keysOf<Subject>()([
  "subject_id", "attribution_level", "memory_ref_digests", "utility_estimate", "utility_bounds", "effective_utility_label",
  "effective_evidence_basis", "confidence", "uncertainty", "support", "evidence_strength", "evidence_label_summary",
  "observation_count", "last_observed_at", "last_observation_id", "review", "read_only", "automatic_deletion", "action_authority_granted",
]);
const HISTORY_KEYS = keysOf<HistoryEntry>()([
  "observation_id", "observation_fingerprint", "subject_id", "application_receipt_id", "outcome_ref", "memory_ref_digests",
  "attribution_level", "utility_label", "evidence_basis", "confidence", "reason_codes", "evidence_refs", "evaluator_ref",
  "evaluation_version", "created_at",
]);
const PROPOSAL_KEYS = keysOf<ReviewProposal>()([
  "subject_id", "attribution_level", "memory_ref_digests", "state", "proposed_action", "reason_codes", "quarantine_proposed",
  "automatic_deletion", "action_authority_granted",
]);
const CONFLICT_KEYS = keysOf<ConflictRejection>()([
  "observation_id", "reason_codes", "delivery_count", "delivery_fingerprints", "delivery_fingerprints_truncated",
  "quarantine_proposed", "automatic_deletion", "action_authority_granted",
]);

const deliveries = [...simulate({ agents: 8, observationsPerAgent: 40, snapshotEvery: 10, duplicateRate: 0.1, conflictRate: 0.03, memories: 4, seed: 11 })];

describe("Projection types", () => {
  it("name exactly the fields of real packets, and their statuses", () => {
    const packets = [...expectedPackets(deliveries.map((d) => d.observation)).values()].map((text) => JSON.parse(text) as Projection);
    const seen = { subjects: 0, history: 0, proposals: 0, conflicts: 0, statuses: new Set<string>() };
    for (const p of packets) {
      expect(Object.keys(p).sort()).toEqual(PROJECTION_KEYS);
      seen.statuses.add(p.status);
      for (const s of p.subjects) expect(Object.keys(s).sort()).toEqual(SUBJECT_KEYS);
      for (const h of p.observation_history) expect(Object.keys(h).sort()).toEqual(HISTORY_KEYS);
      for (const r of p.review_proposals) expect(Object.keys(r).sort()).toEqual(PROPOSAL_KEYS);
      for (const r of p.rejections) expect(Object.keys(r).sort()).toEqual(CONFLICT_KEYS);
      seen.subjects += p.subjects.length;
      seen.history += p.observation_history.length;
      seen.proposals += p.review_proposals.length;
      seen.conflicts += p.rejections.length;
    }
    // The workload reaches every kind of element (else the loop above proves little).
    expect(Math.min(seen.subjects, seen.history, seen.proposals, seen.conflicts)).toBeGreaterThan(0);
    expect([...seen.statuses].sort()).toEqual(["ready", "review_required"]);
    const rejected = reduceObservations({ observations: [{ schema_version: "v99" }], scope: deliveries[0]!.observation.scope, retrieval_snapshot_ref: "r", policy_snapshot_ref: "p" });
    expect(Object.keys(rejected).sort()).toEqual(PROJECTION_KEYS);
    expect(rejected.status).toBe("rejected");
    expect(rejected.rejections).toEqual([{ reason_codes: ["observation_schema_mismatch"] }]);
    expect([...PROJECTION_STATUSES].sort()).toEqual(["empty", "ready", "rejected", "review_required"]);
  });
});

describe("observation() and observationRecord()", () => {
  const original = deliveries.find((d) => d.kind === "original")!.observation;

  it("the record is keyed by scope, its value the canonical JSON of the observation", () => {
    const record = observationRecord(original);
    const s = original.scope;
    expect(record.key).toBe(`${s.agent_id}/${s.project_id}/${s.corpus_id}/${s.surface_id}`);
    expect(record.value).toBe(canonicalJson(observationToPy(original)));
    expect(parsePyJson(record.value)).toEqual(observationToPy(original));
    expect(record.headers).toEqual({ schema: "memory_utility_observation_v0", "content-type": "application/json" });
  });

  const scope = { agent_id: "agent:a", project_id: "project:p", corpus_id: "corpus:c", surface_id: "surface:s" };
  const input = {
    receipt: {
      application_id: "app:1", artifact_ref: "artifact:1", corpus_id: "corpus:c", surface_id: "surface:s", mode: "function_boundary" as const,
      query_kind: "business_recall" as const, query_evidence: [], outcome: "applied" as const, memory_ref_digests: ["00000000000000aa"],
      reasoning_summary: "used one memory", current_artifact_verified: true, result_readback_verified: true, provider_call_count: 0,
      model_reasoning_preserved: true as const, grants_new_action_authority: false as const, external_writes_performed: false as const, raw_content_captured: false as const,
    },
    outcome: { verified: true as const, outcome_ref: "outcome:1", artifact_ref: "artifact:1", outcome_status: "merged" },
    context: { scope, retrieval_snapshot_ref: "retrieval:1", policy_snapshot_ref: "policy:1" },
    proposal: {
      scope, application_id: "app:1", artifact_ref: "artifact:1", outcome_ref: "outcome:1", outcome_status: "merged", retrieval_snapshot_ref: "retrieval:1",
      policy_snapshot_ref: "policy:1", memory_ref_digests: ["00000000000000aa"], utility_label: "harmful" as const, attribution_level: "item" as const,
      evidence_basis: "owner_correction" as const, confidence: 1, reason_codes: [], evidence_refs: ["evidence:1"], evaluator_ref: "evaluator:e", evaluation_version: "v1",
    },
    createdAt: "2026-11-01T00:00:00+01:00",
  };

  it("fills in the receipt's schema version and writes confidence as a float", () => {
    const obs = observation(input);
    expect(canonicalJson(observationToPy(obs))).toContain('"confidence":1.0,');
    expect(obs.created_at).toBe("2026-11-01T00:00:00+01:00");
    expect(contextOfObservation(obs, "memory_utility_reducer_v0").scope).toEqual(scope);
    // The receipt id hashes the receipt as sent, schema_version included: giving it changes nothing.
    expect(observation({ ...input, receipt: { ...input.receipt, schema_version: "reward_memory_application_receipt_v0" } }).application_receipt_id).toBe(obs.application_receipt_id);
  });

  it("refuses facts that do not bind, with the reference's message", () => {
    expect(() => observation({ ...input, outcome: { ...input.outcome, artifact_ref: "artifact:2" } })).toThrow(
      new ContractError("verified_outcome.artifact_ref must match the application receipt"),
    );
    expect(() => observation({ ...input, proposal: { ...input.proposal, evidence_refs: [] } })).toThrow(/strong evidence basis requires evidence_refs/);
    expect(() => observation({ ...input, receipt: { ...input.receipt, provider_call_count: 1.5 } })).toThrow(/provider_call_count must be a non-negative integer/);
  });
});

describe("change feed entries", () => {
  it("parse into ChangeEvents", () => {
    const flat = ["identity", "mur_x", "version", "7", "status", "review_required", "digest", "ab12", "deliveries", "3", "repeated", "1"];
    expect(parseChangeEntry(4, "1-0", flat)).toEqual({
      type: "change", generation: 4, id: "1-0", identity: "mur_x", version: 7, status: "review_required", digest: "ab12", deliveries: 3, repeated: true,
    });
    expect(parseChangeEntry(4, "1-1", flat.slice(0, 10)).repeated).toBe(false);
  });

  it("a malformed entry is an error naming it, never skipped", () => {
    expect(() => parseChangeEntry(4, "1-2", ["identity", "mur_x", "version", "7", "status", "fine", "digest", "d", "deliveries", "1"])).toThrow(/malformed change feed entry 1-2 in generation 4/);
    expect(() => parseChangeEntry(4, "1-3", ["identity", "mur_x", "status", "ready", "digest", "d", "deliveries", "1"])).toThrow(/1-3/);
  });
});
