/** The pure core of mufold: contract, canonical JSON, reducer, validators. Imports no IO. */
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
  type Observation,
} from "./observation.js";
export {
  reducerIdentity,
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
