/**
 * The public API as a strict TypeScript user meets it: a Projection narrows on
 * `status` to the kind of rejections it holds (tsc checks the narrowing, real
 * packets check that the types tell the truth), and a malformed reference is
 * refused by mufold's API with the accepted form stated, while the contract's
 * validators keep the reference's words byte for byte.
 */
import { describe, expect, it } from "vitest";
import { ContractError, ObservationValidationError, canonicalJson, reduceObservations, validateObservation, observationToPy, type PyObject } from "../../src/core/index.js";
import { statingRefForm } from "../../src/core/fields.js";
import { observation, type ConflictRejection, type ObservationInput, type PacketRejection, type Projection } from "../../src/client/index.js";
import { validatedRecords } from "../../src/client/producer.js";
import { expectedPackets } from "../support/oracle.js";
import { simulate } from "../../producers/simulation.js";

const FORM = "1 to 200 characters, each a letter, digit, '_', '.', ':' or '-', the first a letter or digit";

/** What a reader does with a packet's rejections: only compiles if `status` narrows `rejections`. */
function rejectionSummary(p: Projection): { rejected: string[] } | { quarantined: { id: string; deliveries: number }[] } {
  if (p.status === "rejected") {
    const why: PacketRejection[] = p.rejections;
    // @ts-expect-error: a rejected packet's rejections name no observation
    void why[0]?.observation_id;
    return { rejected: why.flatMap((r) => r.reason_codes) };
  }
  const conflicts: ConflictRejection[] = p.rejections;
  return { quarantined: conflicts.map((r) => ({ id: r.observation_id, deliveries: r.delivery_count })) };
}

/** One element on its own narrows with `in`: the conflict has fields a packet rejection lacks. */
function observationIdOf(r: ConflictRejection | PacketRejection): string | null {
  return "observation_id" in r ? r.observation_id : null;
}

describe("Projection narrows on status", () => {
  const deliveries = [...simulate({ agents: 6, observationsPerAgent: 40, snapshotEvery: 10, duplicateRate: 0.1, conflictRate: 0.05, memories: 4, seed: 7 })];
  const packets = [...expectedPackets(deliveries.map((d) => d.observation)).values()].map((text) => JSON.parse(text) as Projection);

  it("conflict rejections in every packet that is not rejected", () => {
    const withConflicts = packets.filter((p) => p.rejections.length > 0);
    // The workload has conflicts (else the loop below checks nothing).
    expect(withConflicts.length).toBeGreaterThan(0);
    for (const p of packets) {
      expect(p.status).not.toBe("rejected");
      const summary = rejectionSummary(p);
      expect("quarantined" in summary).toBe(true);
      if ("quarantined" in summary) {
        expect(summary.quarantined).toHaveLength(p.conflicting_observation_count);
        for (const q of summary.quarantined) {
          expect(q.id).toMatch(/^muo_[0-9a-f]{64}$/);
          expect(q.deliveries).toBeGreaterThanOrEqual(2);
        }
      }
      for (const r of p.rejections) expect(observationIdOf(r)).toMatch(/^muo_/);
    }
  });

  it("only the reasons in a rejected packet", () => {
    const scope = deliveries[0]!.observation.scope;
    const packet = reduceObservations({ observations: [{ schema_version: "v99" }], scope, retrieval_snapshot_ref: "r", policy_snapshot_ref: "p" });
    const p = JSON.parse(canonicalJson(packet)) as Projection;
    expect(p.status).toBe("rejected");
    expect(rejectionSummary(p)).toEqual({ rejected: ["observation_schema_mismatch"] });
    expect(p.rejections.map(observationIdOf)).toEqual([null]);
  });
});

describe("a malformed reference", () => {
  const scope = { agent_id: "agent:a", project_id: "project:p", corpus_id: "corpus:c", surface_id: "surface:s" };
  const input: ObservationInput = {
    receipt: {
      application_id: "app:1", artifact_ref: "artifact:1", corpus_id: "corpus:c", surface_id: "surface:s", mode: "function_boundary",
      query_kind: "business_recall", query_evidence: [], outcome: "applied", memory_ref_digests: ["00000000000000aa"],
      reasoning_summary: "used one memory", current_artifact_verified: true, result_readback_verified: true, provider_call_count: 0,
      model_reasoning_preserved: true, grants_new_action_authority: false, external_writes_performed: false, raw_content_captured: false,
    },
    outcome: { verified: true, outcome_ref: "outcome:1", artifact_ref: "artifact:1", outcome_status: "merged" },
    context: { scope, retrieval_snapshot_ref: "retrieval:1", policy_snapshot_ref: "policy:1" },
    proposal: {
      scope, application_id: "app:1", artifact_ref: "artifact:1", outcome_ref: "outcome:1", outcome_status: "merged", retrieval_snapshot_ref: "retrieval:1",
      policy_snapshot_ref: "policy:1", memory_ref_digests: ["00000000000000aa"], utility_label: "harmful", attribution_level: "item",
      evidence_basis: "owner_correction", confidence: 1, reason_codes: [], evidence_refs: ["evidence:1"], evaluator_ref: "evaluator:e", evaluation_version: "v1",
    },
    createdAt: "2026-11-01T00:00:00+01:00",
  };

  it("observation() states the accepted form", () => {
    expect(() => observation({ ...input, outcome: { ...input.outcome, outcome_ref: "outcome 1" } })).toThrow(
      new ContractError(`verified_outcome.outcome_ref must be an opaque public-safe reference: ${FORM}`),
    );
    expect(() => observation({ ...input, context: { ...input.context, scope: { ...scope, agent_id: "-agent" } } })).toThrow(
      new ContractError(`attribution_context.scope.agent_id must be an opaque public-safe reference: ${FORM}`),
    );
    // Other refusals keep the reference's message as it is.
    expect(() => observation({ ...input, outcome: { ...input.outcome, artifact_ref: "artifact:2" } })).toThrow(
      new ContractError("verified_outcome.artifact_ref must match the application receipt"),
    );
  });

  it("publishing states it too, keeping the class and the reason code", () => {
    const bad = { ...observation(input), retrieval_snapshot_ref: "x".repeat(201) };
    let caught: unknown;
    try {
      validatedRecords([bad]);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ObservationValidationError);
    expect((caught as ObservationValidationError).reasonCode).toBe("observation_malformed_snapshot");
    expect((caught as Error).message).toBe(`observation.retrieval_snapshot_ref must be an opaque public-safe reference: ${FORM}`);
  });

  it("the contract's own validator keeps the reference's bytes (loopx says the same)", () => {
    const bad: PyObject = { ...observationToPy(observation(input)), retrieval_snapshot_ref: "x".repeat(201) };
    expect(() => validateObservation(bad)).toThrow(new ObservationValidationError("observation_malformed_snapshot", "observation.retrieval_snapshot_ref must be an opaque public-safe reference"));
  });

  it("anything else passes through untouched", () => {
    const other = new ContractError("verified_outcome.artifact_ref must match the application receipt");
    expect(statingRefForm(other)).toBe(other);
    const plain = new Error("must be an opaque public-safe reference");
    expect(statingRefForm(plain)).toBe(plain);
  });
});
