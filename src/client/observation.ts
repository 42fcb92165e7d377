/**
 * The typed observation builder: an evaluator's judgment bound to the facts a
 * producer has verified (the application receipt, the verified outcome and the
 * attribution context), with the ids derived. It is the contract's builder
 * (`build_reward_memory_utility_observation`, src/core/builder.ts) behind
 * TypeScript types, so a producer cannot send a field the contract lacks.
 */
import {
  ContractError,
  PyFloat,
  RECEIPT_SCHEMA_VERSION,
  buildObservation,
  type Observation,
  type PyObject,
  type PyValue,
  type Scope,
  type UtilityFields,
} from "../core/index.js";
import { statingRefForm } from "../core/fields.js";

/** What the recall query was, without the query: its digest and a one-line summary. */
export interface QueryEvidence {
  /** 16 lowercase hex digits. */
  query_digest: string;
  /** One line, at most 220 characters. */
  query_summary: string;
  exact_query_exposed: false;
}

/** What the agent did with the recalled memories (`reward_memory_application_receipt_v0`). Its `rma_` id hashes every field as given. */
export interface ApplicationReceipt {
  /** Filled in when absent. */
  schema_version?: typeof RECEIPT_SCHEMA_VERSION;
  application_id: string;
  artifact_ref: string;
  corpus_id: string;
  surface_id: string;
  mode: "function_boundary" | "bounded_agentic_search";
  query_kind: "business_recall" | "ingest_verification";
  /** At most 3. */
  query_evidence: QueryEvidence[];
  outcome: "applied" | "ignored" | "refuted" | "failed" | "not_available" | "available_not_applied";
  /** 1 to 16 memory digests (16 lowercase hex, or `sha256:` + 64), sorted. */
  memory_ref_digests: string[];
  /** One line, at most 500 characters. */
  reasoning_summary: string;
  current_artifact_verified: boolean;
  result_readback_verified: boolean;
  /** A non-negative integer. */
  provider_call_count: number;
  model_reasoning_preserved: true;
  grants_new_action_authority: false;
  external_writes_performed: false;
  raw_content_captured: false;
  retrieval_snapshot_ref?: string;
  policy_snapshot_ref?: string;
}

/** The outcome the producer verified for the application's artifact (`outcome_ref` names it). */
export interface VerifiedOutcome {
  verified: true;
  outcome_ref: string;
  /** Must be the receipt's artifact_ref. */
  artifact_ref: string;
  outcome_status: string;
}

/** Where the judgment applies: scope and snapshots. Its corpus and surface must be the receipt's. */
export interface AttributionContext {
  scope: Scope;
  retrieval_snapshot_ref: string;
  policy_snapshot_ref: string;
}

/**
 * The evaluator's judgment (`UtilityFields`: label, attribution level, evidence basis, `confidence` in [0, 1]
 * written as a float, reason codes, evidence refs — required unless the label is `unknown` with a weak basis —,
 * evaluator and version) about one application. The echoed fields (scope, ids, refs) must equal the trusted facts'.
 */
export interface EvaluatorProposal extends UtilityFields {
  scope: Scope;
  application_id: string;
  artifact_ref: string;
  outcome_ref: string;
  outcome_status: string;
  retrieval_snapshot_ref: string;
  policy_snapshot_ref: string;
  /** `item`: exactly one of the receipt's digests; `set` and `none`: all of them. */
  memory_ref_digests: string[];
}

/** What `observation()` binds into one observation: the three verified facts, the evaluator's proposal and the time. */
export interface ObservationInput {
  receipt: ApplicationReceipt;
  outcome: VerifiedOutcome;
  context: AttributionContext;
  proposal: EvaluatorProposal;
  /** ISO 8601 with a timezone, kept as written (a retry with a new time keeps the observation id). */
  createdAt: string;
}

/**
 * Build a normalized observation (`memory_utility_observation_v0`). Throws the
 * contract's ContractError, with the reference's message, when the facts do
 * not bind or a field is invalid; for a malformed reference the message goes
 * on to state the accepted form (1 to 200 characters, each a letter, digit,
 * `_`, `.`, `:` or `-`, the first a letter or digit).
 */
export function observation(input: ObservationInput): Observation {
  const receipt = plain({ ...input.receipt, schema_version: input.receipt.schema_version ?? RECEIPT_SCHEMA_VERSION });
  // A plain JS number is a Python int to the core: say so before it hashes the receipt.
  if (!Number.isSafeInteger(input.receipt.provider_call_count)) throw new ContractError("application_receipt.provider_call_count must be a non-negative integer");
  const facts = {
    application_receipt: receipt,
    verified_outcome: plain(input.outcome),
    attribution_context: plain({ ...input.context, scope: plain(input.context.scope) }),
  };
  const proposal = plain({ ...input.proposal, scope: plain(input.proposal.scope), confidence: new PyFloat(input.proposal.confidence) });
  try {
    return buildObservation(facts, proposal, input.createdAt);
  } catch (err) {
    throw statingRefForm(err);
  }
}

/** A typed record as the core's JSON value model; absent optional fields are left out (not null). */
function plain(record: object): PyObject {
  const out: PyObject = {};
  for (const [key, value] of Object.entries(record)) if (value !== undefined) out[key] = value as PyValue;
  return out;
}
