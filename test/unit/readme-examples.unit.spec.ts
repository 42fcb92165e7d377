/**
 * The README's example observation and packet ("What goes in, what comes
 * out") were generated with the reference (loopx 2.1.1). They stay true: the
 * core reducer turns the observation into exactly that packet, and the typed
 * builder makes exactly that observation from the facts below.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { canonicalJson, observationToPy, parsePyJson, reduceObservations, validateObservation, validateProjection, type PyObject } from "../../src/core/index.js";
import { observation, type ObservationInput } from "../../src/client/index.js";

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

/** The fenced JSON block between `<!-- readme-example:NAME -->` and `<!-- /readme-example:NAME -->`. */
function example(name: string): PyObject {
  const open = `<!-- readme-example:${name} -->`;
  const close = `<!-- /readme-example:${name} -->`;
  const start = README.indexOf(open);
  const end = README.indexOf(close);
  if (start < 0 || end < start) throw new Error(`README.md has no ${open} … ${close} block`);
  const fenced = /^\s*```json\n([\s\S]*)\n```\s*$/.exec(README.slice(start + open.length, end));
  if (fenced === null) throw new Error(`the ${name} block of README.md is not one fenced json block`);
  return parsePyJson(fenced[1]!) as PyObject;
}

// The facts the README's observation was built from (with loopx's build_reward_memory_utility_observation).
const scope = { agent_id: "agent:reviewer-7", project_id: "project:payments", corpus_id: "corpus:runbooks", surface_id: "surface:issue_fix" };
const FACTS: ObservationInput = {
  receipt: {
    schema_version: "reward_memory_application_receipt_v0",
    application_id: "app:pr-4812",
    artifact_ref: "artifact:pr-4812",
    corpus_id: "corpus:runbooks",
    surface_id: "surface:issue_fix",
    mode: "function_boundary",
    query_kind: "business_recall",
    query_evidence: [],
    outcome: "applied",
    memory_ref_digests: ["3f9a1c0d5e7b2a46", "8c2e4b6a0d1f3e57"],
    reasoning_summary: "applied the retry runbook and the idempotency-key note",
    current_artifact_verified: true,
    result_readback_verified: true,
    provider_call_count: 1,
    model_reasoning_preserved: true,
    grants_new_action_authority: false,
    external_writes_performed: false,
    raw_content_captured: false,
  },
  outcome: { verified: true, outcome_ref: "outcome:pr-4812-merged", artifact_ref: "artifact:pr-4812", outcome_status: "merged" },
  context: { scope, retrieval_snapshot_ref: "retrieval:2026-11-01", policy_snapshot_ref: "policy:v3" },
  proposal: {
    scope,
    application_id: "app:pr-4812",
    artifact_ref: "artifact:pr-4812",
    outcome_ref: "outcome:pr-4812-merged",
    outcome_status: "merged",
    retrieval_snapshot_ref: "retrieval:2026-11-01",
    policy_snapshot_ref: "policy:v3",
    memory_ref_digests: ["3f9a1c0d5e7b2a46"],
    utility_label: "helpful",
    attribution_level: "item",
    evidence_basis: "deterministic_effect",
    confidence: 0.8,
    reason_codes: ["signal:tests_pass"],
    evidence_refs: ["evidence:ci-run-4812"],
    evaluator_ref: "evaluator:ci",
    evaluation_version: "eval:v1",
  },
  createdAt: "2026-11-01T09:30:00Z",
};

describe("README examples", () => {
  const observationBlock = example("observation");
  const packetBlock = example("packet");

  it("the example observation is a normalized observation (its canonical JSON is what validation returns)", () => {
    const normalized = validateObservation(observationBlock);
    expect(canonicalJson(observationToPy(normalized))).toBe(canonicalJson(observationBlock));
  });

  it("the core reducer turns the example observation into exactly the example packet", () => {
    const packet = reduceObservations({
      observations: [observationBlock],
      scope: observationBlock.scope,
      retrieval_snapshot_ref: observationBlock.retrieval_snapshot_ref,
      policy_snapshot_ref: observationBlock.policy_snapshot_ref,
    });
    expect(canonicalJson(packet)).toBe(canonicalJson(packetBlock));
    expect(canonicalJson(validateProjection(packetBlock))).toBe(canonicalJson(packetBlock));
    expect(packetBlock.status).toBe("ready");
  });

  it("the identity the README names is the packet's", () => {
    expect(README).toContain(`\`${packetBlock.reducer_identity as string}\``);
  });

  it("the typed builder makes the example observation from its facts", () => {
    expect(canonicalJson(observationToPy(observation(FACTS)))).toBe(canonicalJson(observationBlock));
  });
});
