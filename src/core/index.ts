/**
 * The pure core of mufold (`mufold/core`): the memory_utility_projection_v0
 * contract with no IO. The entry points a user needs:
 *   validateObservation(value)            normalize and check one observation (throws ObservationValidationError with a reason code)
 *   buildObservation(facts, proposal, t)  bind an evaluator's proposal to trusted facts (typed: `observation()` in `mufold`)
 *   reduceObservations({observations, scope, retrieval_snapshot_ref, policy_snapshot_ref})
 *                                         the packet of a batch (accepted, or a rejected packet saying why)
 *   validateProjection(packet)            the fail-closed readback validator (throws ContractError)
 *   canonicalJson(value)                  the contract's bytes (Python json.dumps, sort_keys, compact); parsePyJson reads them back
 *   reducerIdentity(normalizeContext(…))  the `mur_` identity a packet is stored under
 * Values are JSON as Python sees it (PyValue): floats are boxed in PyFloat so
 * `1.0` stays a float; observationToPy converts a typed Observation.
 *
 * @module mufold/core
 */
// Where a re-export carries its own TSDoc, that is the API reference's text for it (`npm run docs`).
export { PyFloat, pyEquals, pyStrCompare } from "./pyvalue.js";
/** A JSON value as Python's `json` module reads it: floats boxed in PyFloat, ints as `number` or `bigint`. */
export type { PyValue } from "./pyvalue.js";
/** A JSON object: string keys, PyValue values. */
export type { PyObject } from "./pyvalue.js";
/** Whether a value is a PyObject (an object, not an array, a PyFloat or null). */
export { isPyObject } from "./pyvalue.js";
/** A Python int: a safe-integer `number`, or a `bigint` beyond 2^53. */
export type { PyInt } from "./pyvalue.js";
export { parsePyJson, PyJsonDecodeError, PyValueError, PyRecursionError } from "./pyjson-parse.js";
export { canonicalJson } from "./canonical-json.js";
/** canonicalJson refused the value as Python's json.dumps would (a NaN or infinite float): a `ValueError`. */
export { CanonicalJsonError } from "./canonical-json.js";
export { pyFloatRepr, pyRound6 } from "./pyfloat.js";
export { pyStrip, pyStrOr, pyStrStrip } from "./pystr.js";
export { pyFromIsoFormat, type IsoDateTime, type Instant } from "./iso-timestamp.js";
/** The UTC instant of a parsed timestamp (one without an offset is taken as UTC). */
export { utcInstant } from "./iso-timestamp.js";
/** Negative, zero or positive as instant `a` is before, at or after `b`. */
export { compareInstants } from "./iso-timestamp.js";
/** The lowercase hex SHA-256 of a string's UTF-8 bytes. */
export { sha256Hex } from "./digest.js";
export { canonicalDigest } from "./digest.js";
export { ContractError, ObservationValidationError } from "./errors.js";
export { parseContractTimestamp, type Scope } from "./fields.js";
export {
  validateObservation,
  observationReasonCode,
  observationIdOf,
  observationFingerprint,
  normalizedFingerprint,
  observationToPy,
  type Observation,
  type UtilityFields,
} from "./observation.js";
/** The observation fields its `muo_` id is computed over. */
export { IDENTITY_FIELDS } from "./observation.js";
/** The `schema_version` of an observation: `memory_utility_observation_v0`. */
export { OBSERVATION_SCHEMA_VERSION } from "./observation.js";
/** Every utility label, as the contract lists them. */
export { UTILITY_LABELS } from "./observation.js";
/** Every attribution level: one memory (`item`), memories used together (`set`), not established (`none`). */
export { ATTRIBUTION_LEVELS } from "./observation.js";
/** Every evidence basis, as the contract lists them. */
export { EVIDENCE_BASES } from "./observation.js";
/** An evaluator's verdict on the memories applied: `helpful`, `harmful`, `neutral` or `unknown`. */
export type { UtilityLabel } from "./observation.js";
/** Which memories a judgment is about: `item` (exactly one), `set` (all applied, together) or `none` (not established). */
export type { AttributionLevel } from "./observation.js";
/** What a judgment rests on: an owner's correction, a controlled replay, a deterministic effect, an evaluator's inference, or `insufficient`. */
export type { EvidenceBasis } from "./observation.js";
export { reducerIdentity, IDENTITY_PATTERN, normalizeContext, contextOfObservation, subjectIdOf } from "./identity.js";
/** The reducer version when a request names none: `memory_utility_reducer_v0`. */
export { DEFAULT_REDUCER_VERSION } from "./identity.js";
/** The `schema_version` of a packet: `memory_utility_projection_v0`. */
export { PROJECTION_SCHEMA_VERSION } from "./identity.js";
/** What a `mur_` identity is computed from: the scope, the two snapshot refs and the reducer version, all canonical. */
export type { ReducerContext } from "./identity.js";
/** A new identity's state: nothing folded. */
export { emptyIdentityState } from "./identity-state.js";
/** Fold one delivery into an identity's state (in place, in any order); says whether it was new, a duplicate or a conflict. */
export { foldDelivery } from "./identity-state.js";
/** What a delivery was to its identity: a new observation id, a repeat of a known payload, or a changed payload. */
export type { DeliveryKind } from "./identity-state.js";
/** All an identity's packet is a pure function of: every observation id's distinct payloads with their delivery counts. */
export type { IdentityState } from "./identity-state.js";
/** One distinct payload (by fingerprint) of an observation id: its earliest delivery and how many times it came. */
export type { FingerprintState } from "./identity-state.js";
export { reduceObservations, projectIdentityState } from "./reducer.js";
/** The `rejected` packet for a context (null when the context itself is invalid) and reason codes, validated. */
export { rejectedProjection } from "./reducer.js";
/** The request reduceObservations takes, as the reference's `utility-project` reads it (values as Python sees JSON). */
export type { ReduceInput } from "./reducer.js";
export { validateProjection } from "./projection-validator.js";
/** What `loopx reward-memory utility-project --format json` answers for a request's text: its exit code and its one line of output. */
export { utilityProject, utilityProjectBytes } from "./utility-project.js";
/** The answer utilityProject gives an unusable request (exit 2), with this message. */
export { invalidRequest } from "./utility-project.js";
/** A command's answer: exit code and standard output. */
export type { CommandBytes, CommandResult } from "./utility-project.js";
export { buildObservation, validateObservationWithFacts, applicationReceipt, applicationReceiptId } from "./builder.js";
/** The `schema_version` of an application receipt: `reward_memory_application_receipt_v0`. */
export { RECEIPT_SCHEMA_VERSION } from "./builder.js";
/** The receipt fields an observation is bound to, normalized. */
export type { NormalizedReceipt } from "./builder.js";
/** The facts a producer has verified, that an evaluator's proposal is bound to (as JSON values). */
export type { TrustedFacts } from "./builder.js";
