/**
 * `mufold`: the package's public API.
 *
 * Read projections from Redis (`ProjectionReader`: a packet by identity or by
 * scope, typed, with its ETag and version; the change feed), build observations
 * from typed facts (`observation`) and publish them to the fold's topic
 * (`ObservationProducer`). The pure contract (reducer, validators, canonical
 * JSON) is `mufold/core`.
 *
 * ```ts
 * import { ProjectionReader, ObservationProducer, observation } from "mufold";
 *
 * const producer = await ObservationProducer.connect({ brokers: ["127.0.0.1:9092"] });
 * await producer.publish([observation({ receipt, outcome, context, proposal, createdAt: "2026-11-01T00:00:00Z" })]);
 * await producer.close();
 *
 * const reader = await ProjectionReader.connect({ redisUrl: "redis://127.0.0.1:6379" });
 * const read = await reader.get({ scope, retrieval_snapshot_ref: "retrieval:1", policy_snapshot_ref: "policy:1" });
 * if (read !== null) console.log(read.projection.status, read.version, read.etag);
 * await reader.close();
 * ```
 *
 * @module mufold
 */
// Where a re-export carries its own TSDoc, that is the API reference's text for it (`npm run docs`).
export { ProjectionReader, identityOf, type ScopeRef, type ProjectionRead } from "./readback.js";
/** Options of `ProjectionReader.get`. */
export type { GetOptions } from "./readback.js";
/** Explain and diff: every delivery of an identity with what the fold made of it, and what changed between two points. */
export type { ExplainOptions, ProjectionExplanation, ProjectionChange } from "./readback.js";
/** One explained delivery, its decision and the parts of the packet it feeds; the decisions counted. */
export type { ExplainedDelivery, Decision, Feeds, DecisionCounts } from "../fold/provenance.js";
/** The difference between two points: status, counters, subjects, conflicts and the deliveries between them. */
export type { ProjectionDiff, Change, SubjectChange } from "../fold/projection-diff.js";
/** An as-of read: what it used, and the error for a point that is not available. */
export { AsOfNotAvailableError, type AsOfUsed, type AsOfTime, type AsOf } from "./past.js";
/** A point of the log: an offset on a partition. */
export type { LogPosition } from "../fold/offset-index.js";
export type { FeedEvent, ChangeEvent, GenerationEvent, SubscribeOptions } from "./change-feed.js";
export { ObservationProducer, observationRecord, type ObservationRecord } from "./producer.js";
export {
  observation,
  type ObservationInput,
  type ApplicationReceipt,
  type VerifiedOutcome,
  type AttributionContext,
  type EvaluatorProposal,
  type QueryEvidence,
} from "./observation.js";
export type { ClientOptions } from "./options.js";
export {
  PROJECTION_STATUSES,
  type Projection,
  type AcceptedProjection,
  type RejectedProjection,
  type ProjectionFields,
  type ProjectionStatus,
  type Subject,
  type HistoryEntry,
  type Review,
  type ReviewState,
  type ReviewAction,
  type ReviewProposal,
  type ConflictRejection,
  type PacketRejection,
  type EvidenceLabelSummary,
  type Scope,
} from "./projection.js";
/** An evaluator's verdict on the memories applied: `helpful`, `harmful`, `neutral` or `unknown`. */
export type { UtilityLabel } from "./projection.js";
/** Which memories a judgment is about: `item` (exactly one), `set` (all applied, together) or `none` (not established). */
export type { AttributionLevel } from "./projection.js";
/** What a judgment rests on: an owner's correction, a controlled replay, a deterministic effect, an evaluator's inference, or `insufficient`. */
export type { EvidenceBasis } from "./projection.js";
export type { Observation } from "../core/index.js";
export { ContractError, ObservationValidationError } from "../core/index.js";
export { MufoldError } from "../errors.js";
