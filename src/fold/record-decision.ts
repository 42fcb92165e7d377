/**
 * What the fold does with one Kafka record, decided from the record alone
 * (so a replay reaches the same decisions): accept it as an observation of a
 * reducer identity, or send it to the DLQ with a reason code.
 */
import {
  ContractError,
  ObservationValidationError,
  PyJsonDecodeError,
  PyRecursionError,
  PyValueError,
  contextOfObservation,
  observationFingerprint,
  parsePyJson,
  reducerIdentity,
  validateObservation,
  type Observation,
  type ReducerContext,
} from "../core/index.js";
import { scopeKey } from "./scope-key.js";

export const OBSERVATION_SCHEMA_HEADER = "memory_utility_observation_v0";

/** Every DLQ reason code; documented in README.md. */
export const DLQ_REASONS = [
  "value_missing",
  "value_too_large",
  "value_not_utf8",
  "value_not_json",
  "schema_header_mismatch",
  "observation_malformed",
  "observation_schema_mismatch",
  "observation_write_boundary_violation",
  "observation_malformed_scope",
  "observation_malformed_snapshot",
  "observation_identity_invalid",
  "key_missing",
  "key_not_utf8",
  "key_scope_mismatch",
] as const;
export type DlqReason = (typeof DLQ_REASONS)[number];

export interface RecordInput {
  key: Buffer | null;
  value: Buffer | null;
  /** Header values as Kafka delivers them. */
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
}

export interface Accepted {
  kind: "accept";
  observation: Observation;
  fingerprint: string;
  identity: string;
  context: ReducerContext;
}

export interface Rejected {
  kind: "reject";
  reason: DlqReason;
  detail: string;
}

export interface DecisionOptions {
  reducerVersion: string;
  maxValueBytes: number;
}

// ignoreBOM: a value that starts with a BOM keeps it, and the JSON parser refuses it
// as the reference refuses such a file ("Unexpected UTF-8 BOM"): value_not_json.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function headerText(value: Buffer | string | (Buffer | string)[] | undefined): string | undefined {
  const one = Array.isArray(value) ? value[value.length - 1] : value;
  if (one === undefined) return undefined;
  return typeof one === "string" ? one : one.toString("utf8");
}

const reject = (reason: DlqReason, detail: string): Rejected => ({ kind: "reject", reason, detail });

export function decideRecord(record: RecordInput, options: DecisionOptions): Accepted | Rejected {
  if (record.value === null || record.value.length === 0) return reject("value_missing", "record has no value");
  if (record.value.length > options.maxValueBytes) {
    return reject("value_too_large", `value is ${record.value.length} bytes; the limit is ${options.maxValueBytes}`);
  }
  let text: string;
  try {
    text = utf8.decode(record.value);
  } catch {
    return reject("value_not_utf8", "value is not valid UTF-8");
  }
  let parsed;
  try {
    parsed = parsePyJson(text);
  } catch (err) {
    if (err instanceof PyJsonDecodeError || err instanceof PyValueError) return reject("value_not_json", err.message);
    if (err instanceof PyRecursionError || err instanceof RangeError) return reject("value_not_json", "value nests too deeply");
    throw err;
  }
  const schema = headerText(record.headers?.schema);
  if (schema !== undefined && schema !== OBSERVATION_SCHEMA_HEADER) {
    return reject("schema_header_mismatch", `schema header is ${JSON.stringify(schema)}`);
  }
  let observation: Observation;
  try {
    observation = validateObservation(parsed);
  } catch (err) {
    if (err instanceof ObservationValidationError) return reject(err.reasonCode as DlqReason, err.message);
    if (err instanceof ContractError || err instanceof RangeError) return reject("observation_malformed", (err as Error).message);
    throw err;
  }
  if (record.key === null || record.key.length === 0) return reject("key_missing", "record has no key");
  let key: string;
  try {
    key = utf8.decode(record.key);
  } catch {
    return reject("key_not_utf8", "key is not valid UTF-8");
  }
  const expected = scopeKey(observation.scope);
  if (key !== expected) return reject("key_scope_mismatch", `key ${JSON.stringify(key)} is not the scope key ${JSON.stringify(expected)}`);
  const context = contextOfObservation(observation, options.reducerVersion);
  return { kind: "accept", observation, fingerprint: observationFingerprint(observation), identity: reducerIdentity(context), context };
}
