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
  normalizedFingerprint,
  parsePyJson,
  reducerIdentity,
  validateObservation,
  type Observation,
  type ReducerContext,
} from "../core/index.js";
import { readObservationBytes } from "../core/observation-bytes.js";
import { readObservationDocument } from "../core/observation-reader.js";
import { scopeKey } from "./scope-key.js";

export const OBSERVATION_SCHEMA_HEADER = "memory_utility_observation_v0";

/** Every DLQ reason code; documented in docs/using.md "Dead letters". */
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
  /** The observation's strings are its own, not views into the record's text (read from its bytes): a model may keep it itself. */
  owned: boolean;
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
  const schema = headerText(record.headers?.schema);
  // A canonical observation in ASCII is read from the bytes, with no text decoded (observation-bytes.ts).
  const fromBytes = readObservationBytes(record.value);
  if (fromBytes !== null) {
    if (schema !== undefined && schema !== OBSERVATION_SCHEMA_HEADER) return schemaMismatch(schema);
    return decideKey(record, fromBytes.observation, fromBytes.fingerprint, true, options);
  }
  let text: string;
  try {
    text = utf8.decode(record.value);
  } catch {
    return reject("value_not_utf8", "value is not valid UTF-8");
  }
  // A plain observation is parsed, validated and fingerprinted in one pass; anything else takes the exact slow path.
  const read = readObservationDocument(text);
  if (read === null) return decideSlowly(record, text, schema, options);
  if (schema !== undefined && schema !== OBSERVATION_SCHEMA_HEADER) return schemaMismatch(schema);
  return decideKey(record, read.observation, read.fingerprint, false, options);
}

const schemaMismatch = (schema: string): Rejected => reject("schema_header_mismatch", `schema header is ${JSON.stringify(schema)}`);

/** Parse, check the header, validate: each step's failure is the record's reason. */
function decideSlowly(record: RecordInput, text: string, schema: string | undefined, options: DecisionOptions): Accepted | Rejected {
  let parsed;
  try {
    parsed = parsePyJson(text);
  } catch (err) {
    if (err instanceof PyJsonDecodeError || err instanceof PyValueError) return reject("value_not_json", err.message);
    if (err instanceof PyRecursionError || err instanceof RangeError) return reject("value_not_json", "value nests too deeply");
    throw err;
  }
  if (schema !== undefined && schema !== OBSERVATION_SCHEMA_HEADER) return schemaMismatch(schema);
  let observation: Observation;
  try {
    observation = validateObservation(parsed);
  } catch (err) {
    if (err instanceof ObservationValidationError) return reject(err.reasonCode as DlqReason, err.message);
    if (err instanceof ContractError || err instanceof RangeError) return reject("observation_malformed", (err as Error).message);
    throw err;
  }
  return decideKey(record, observation, normalizedFingerprint(observation), false, options);
}

/** The key must be the observation's scope key. */
function decideKey(record: RecordInput, observation: Observation, fingerprint: string, owned: boolean, options: DecisionOptions): Accepted | Rejected {
  if (record.key === null || record.key.length === 0) return reject("key_missing", "record has no key");
  if (isScopeKey(record.key, observation.scope)) {
    const context = contextOfObservation(observation, options.reducerVersion);
    return { kind: "accept", observation, fingerprint, identity: identityOf(context), context, owned };
  }
  let key: string;
  try {
    key = utf8.decode(record.key);
  } catch {
    return reject("key_not_utf8", "key is not valid UTF-8");
  }
  const expected = scopeKey(observation.scope);
  if (key !== expected) return reject("key_scope_mismatch", `key ${JSON.stringify(key)} is not the scope key ${JSON.stringify(expected)}`);
  const context = contextOfObservation(observation, options.reducerVersion);
  return { kind: "accept", observation, fingerprint, identity: identityOf(context), context, owned };
}

/**
 * Whether the key's bytes are the scope key `agent/project/corpus/surface`, compared without decoding the key
 * or building the scope key (refs are ASCII; a field with any other character takes the decoding path).
 */
function isScopeKey(key: Buffer, scope: Observation["scope"]): boolean {
  let at = keyField(key, 0, scope.agent_id, false);
  at = keyField(key, at, scope.project_id, true);
  at = keyField(key, at, scope.corpus_id, true);
  at = keyField(key, at, scope.surface_id, true);
  return at === key.length;
}

/** Where `field` (after a `/` when `slash`) ends in the key from `at`; -1 when the bytes differ. */
function keyField(key: Buffer, at: number, field: string, slash: boolean): number {
  if (at < 0) return -1;
  if (slash && key[at++] !== 0x2f) return -1;
  for (let j = 0; j < field.length; j++) {
    const c = field.charCodeAt(j);
    if (c >= 0x80 || key[at++] !== c) return -1;
  }
  return at;
}

/** The last context and its identity: a batch's records mostly share one identity. */
let last: { context: ReducerContext; identity: string } | null = null;

function identityOf(context: ReducerContext): string {
  if (last !== null && sameContext(last.context, context)) return last.identity;
  const identity = reducerIdentity(context);
  last = { context, identity };
  return identity;
}

function sameContext(a: ReducerContext, b: ReducerContext): boolean {
  return (
    a.reducer_version === b.reducer_version &&
    a.retrieval_snapshot_ref === b.retrieval_snapshot_ref &&
    a.policy_snapshot_ref === b.policy_snapshot_ref &&
    a.scope.agent_id === b.scope.agent_id &&
    a.scope.project_id === b.scope.project_id &&
    a.scope.corpus_id === b.scope.corpus_id &&
    a.scope.surface_id === b.scope.surface_id
  );
}
