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
 */
export { PyFloat, isPyObject, pyEquals, pyStrCompare, type PyObject, type PyValue } from "./pyvalue.js";
export { parsePyJson, PyJsonDecodeError, PyValueError, PyRecursionError } from "./pyjson-parse.js";
export { canonicalJson, CanonicalJsonError } from "./canonical-json.js";
export { pyFloatRepr, pyRound6 } from "./pyfloat.js";
export { pyStrip, pyStrOr, pyStrStrip } from "./pystr.js";
export { pyFromIsoFormat, utcInstant, compareInstants, type IsoDateTime, type Instant } from "./iso-timestamp.js";
export { sha256Hex, canonicalDigest } from "./digest.js";
export { ContractError, ObservationValidationError } from "./errors.js";
export { parseContractTimestamp, type Scope } from "./fields.js";
export {
  validateObservation,
  observationReasonCode,
  observationIdOf,
  observationFingerprint,
  normalizedFingerprint,
  observationToPy,
  OBSERVATION_SCHEMA_VERSION,
  UTILITY_LABELS,
  ATTRIBUTION_LEVELS,
  EVIDENCE_BASES,
  type Observation,
  type UtilityFields,
  type UtilityLabel,
  type AttributionLevel,
  type EvidenceBasis,
} from "./observation.js";
export {
  reducerIdentity,
  IDENTITY_PATTERN,
  normalizeContext,
  contextOfObservation,
  subjectIdOf,
  DEFAULT_REDUCER_VERSION,
  PROJECTION_SCHEMA_VERSION,
  type ReducerContext,
} from "./identity.js";
export { emptyIdentityState, foldDelivery, type IdentityState, type FingerprintState } from "./identity-state.js";
export { reduceObservations, projectIdentityState, rejectedProjection, type ReduceInput } from "./reducer.js";
export { validateProjection } from "./projection-validator.js";
export { utilityProject, invalidRequest, type CommandResult } from "./utility-project.js";
export {
  buildObservation,
  validateObservationWithFacts,
  applicationReceipt,
  applicationReceiptId,
  RECEIPT_SCHEMA_VERSION,
  type TrustedFacts,
} from "./builder.js";
