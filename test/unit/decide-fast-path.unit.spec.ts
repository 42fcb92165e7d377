/**
 * decideRecord with its one-pass reader against the decision as the slow path
 * alone makes it (parse, header, validate, key, fingerprint, in that order):
 * the same verdict, reason, detail, observation and fingerprint on valid,
 * malformed and exotic values, with matching, wrong or missing headers and keys.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ContractError,
  ObservationValidationError,
  canonicalJson,
  observationToPy,
  PyJsonDecodeError,
  PyRecursionError,
  PyValueError,
  contextOfObservation,
  observationFingerprint,
  parsePyJson,
  reducerIdentity,
  validateObservation,
} from "../../src/core/index.js";
import { OBSERVATION_SCHEMA_HEADER, decideRecord, type RecordInput } from "../../src/fold/record-decision.js";
import { scopeKey } from "../../src/fold/scope-key.js";
import { observationCase } from "../support/arbitraries.js";

const OPTIONS = { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 1 << 20 };

/** The decision with no fast path, step by step as the reference orders them. */
function slowDecision(record: RecordInput): unknown {
  const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(record.value!);
  let parsed;
  try {
    parsed = parsePyJson(text);
  } catch (err) {
    if (err instanceof PyJsonDecodeError || err instanceof PyValueError) return { kind: "reject", reason: "value_not_json", detail: err.message };
    if (err instanceof PyRecursionError || err instanceof RangeError) return { kind: "reject", reason: "value_not_json", detail: "value nests too deeply" };
    throw err;
  }
  const schema = record.headers?.schema as string | undefined;
  if (schema !== undefined && schema !== OBSERVATION_SCHEMA_HEADER) {
    return { kind: "reject", reason: "schema_header_mismatch", detail: `schema header is ${JSON.stringify(schema)}` };
  }
  let observation;
  try {
    observation = validateObservation(parsed);
  } catch (err) {
    if (err instanceof ObservationValidationError) return { kind: "reject", reason: err.reasonCode, detail: err.message };
    if (err instanceof ContractError || err instanceof RangeError) return { kind: "reject", reason: "observation_malformed", detail: (err as Error).message };
    throw err;
  }
  if (record.key === null || record.key.length === 0) return { kind: "reject", reason: "key_missing", detail: "record has no key" };
  const key = record.key.toString("utf8");
  const expected = scopeKey(observation.scope);
  if (key !== expected) return { kind: "reject", reason: "key_scope_mismatch", detail: `key ${JSON.stringify(key)} is not the scope key ${JSON.stringify(expected)}` };
  const context = contextOfObservation(observation, OPTIONS.reducerVersion);
  return { kind: "accept", observation, fingerprint: observationFingerprint(observation), identity: reducerIdentity(context), context };
}

describe("decideRecord: the fast path decides as the slow path", () => {
  it("on random values, headers and keys", () => {
    let accepted = 0;
    let ownedCount = 0;
    fc.assert(
      fc.property(
        observationCase({ validRate: 0.7 }),
        fc.constantFrom("none", OBSERVATION_SCHEMA_HEADER, "other_schema_v1"),
        fc.constantFrom("scope", "wrong", "empty", "null"),
        fc.constantFrom("", " \n", "\t"),
        fc.boolean(),
        (c, schema, keyKind, pad, canonical) => {
          let text = pad + c.text + pad;
          let scope = "agent/project/corpus/surface";
          try {
            const valid = validateObservation(parsePyJson(text));
            scope = scopeKey(valid.scope);
            // Producers write canonical JSON: the form read from the bytes when it is ASCII.
            if (canonical) text = pad + canonicalJson(observationToPy(valid)) + pad;
          } catch {
            // an invalid value: any key will do
          }
          const key = keyKind === "scope" ? Buffer.from(scope) : keyKind === "wrong" ? Buffer.from(scope + "x") : keyKind === "empty" ? Buffer.alloc(0) : null;
          const record: RecordInput = { key, value: Buffer.from(text), headers: schema === "none" ? {} : { schema } };
          const decision = decideRecord(record, OPTIONS);
          if (decision.kind === "accept") {
            const { owned, ...made } = decision;
            expect(made).toStrictEqual(slowDecision(record));
            // Read from the bytes (its strings its own) exactly when the value is its observation's canonical JSON in ASCII.
            const bare = text.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
            expect(owned).toBe(/^[\x00-\x7f]*$/.test(bare) && bare === canonicalJson(observationToPy(decision.observation)));
            accepted++;
            if (owned) ownedCount++;
          } else expect(decision).toStrictEqual(slowDecision(record));
        },
      ),
      { numRuns: 1500 },
    );
    expect(accepted).toBeGreaterThan(0);
    expect(ownedCount).toBeGreaterThan(0);
    expect(ownedCount).toBeLessThan(accepted);
  });
});
