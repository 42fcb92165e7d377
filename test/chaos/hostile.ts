/**
 * Records that are not valid observations, of every class an operator meets:
 * broken JSON and UTF-8, wrong or missing fields, NaN and huge numbers, URIs
 * and paths in references or the scope, oversized values, deep nesting,
 * key/scope mismatches, empty and non-UTF-8 keys, tombstones and foreign
 * headers: one class or more for every DLQ reason.
 *
 * Each class states the DLQ reason it is meant to get, written down here by
 * hand, never computed with the fold's decision (the observation-level ones
 * were checked once against loopx 2.1.1's own validator; the Kafka-level ones
 * are mufold's documented reasons, docs/using.md "Dead letters"). Every generated
 * record carries its class and intended reason as headers, so the DLQ audit
 * compares the fold's `mufold-reason` with what the generator meant.
 */
import { canonicalJson, observationToPy, type Observation } from "../../src/core/index.js";
import type { OutMessage } from "../../src/adapters/kafka/producer.js";
import type { DlqReason } from "../../src/fold/record-decision.js";
import { scopeKey } from "../../src/fold/scope-key.js";
import type { Prng } from "../../producers/simulation.js";

type Mutation = (json: string, obs: Observation, rng: Prng) => OutMessage;

/** Headers every hostile record carries: which class made it, and the reason it must get in the DLQ. */
export const HOSTILE_HEADERS = { class: "x-chaos-class", expectedReason: "x-chaos-expected-reason" } as const;

export interface HostileClass {
  /** The DLQ reason this class is meant to get. */
  reason: DlqReason;
  make: Mutation;
}

const hostile = (reason: DlqReason, make: Mutation): HostileClass => ({ reason, make });

const keyOf = (obs: Observation) => scopeKey(obs.scope);
const withHeaders = (key: string | null, value: Buffer | string | null, headers: Record<string, string> = { schema: "memory_utility_observation_v0" }): OutMessage => ({ key, value, headers });

export const HOSTILE_CLASSES: Record<string, HostileClass> = {
  brokenJson: hostile("value_not_json", (json, obs, rng) => withHeaders(keyOf(obs), json.slice(0, rng.int(1, json.length - 2)))),
  trailingComma: hostile("value_not_json", (json, obs) => withHeaders(keyOf(obs), json.replace(/}$/, ",}"))),
  invalidUtf8: hostile("value_not_utf8", (json, obs) => withHeaders(keyOf(obs), Buffer.concat([Buffer.from(json.slice(0, 20)), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from(json.slice(20))]))),
  missingField: hostile("observation_malformed", (json, obs) => withHeaders(keyOf(obs), json.replace(/"outcome_ref":"[^"]*",/, ""))),
  unknownField: hostile("observation_malformed", (json, obs) => withHeaders(keyOf(obs), json.replace(/^{/, '{"transcript":"raw agent transcript",'))),
  wrongType: hostile("observation_malformed", (json, obs) => withHeaders(keyOf(obs), json.replace(/"confidence":[^,]*/, '"confidence":"high"'))),
  nanNumber: hostile("observation_malformed", (json, obs) => withHeaders(keyOf(obs), json.replace(/"confidence":[^,]*/, '"confidence":NaN'))),
  hugeNumber: hostile("observation_malformed", (json, obs) => withHeaders(keyOf(obs), json.replace(/"confidence":[^,]*/, `"confidence":1${"0".repeat(400)}`))),
  hugeFloat: hostile("observation_malformed", (json, obs) => withHeaders(keyOf(obs), json.replace(/"confidence":[^,]*/, '"confidence":1e400'))),
  uriRef: hostile("observation_identity_invalid", (json, obs) => withHeaders(keyOf(obs), json.replace(/"outcome_ref":"[^"]*"/, '"outcome_ref":"https://provider.example/outcome/1"'))),
  pathRef: hostile("observation_identity_invalid", (json, obs) => withHeaders(keyOf(obs), json.replace(/"evaluator_ref":"[^"]*"/, '"evaluator_ref":"/etc/passwd"'))),
  windowsPath: hostile("observation_malformed_snapshot", (json, obs) => withHeaders(keyOf(obs), json.replace(/"policy_snapshot_ref":"[^"]*"/, '"policy_snapshot_ref":"C:\\\\Users\\\\me"'))),
  oversized: hostile("value_too_large", (json, obs) => withHeaders(keyOf(obs), json.replace(/"reason_codes":\[[^\]]*\]/, `"reason_codes":["${"x".repeat(70_000)}"]`))),
  longRef: hostile("observation_identity_invalid", (json, obs) => withHeaders(keyOf(obs), json.replace(/"evaluator_ref":"[^"]*"/, `"evaluator_ref":"${"e".repeat(201)}"`))),
  deepNesting: hostile("value_not_json", (_json, obs) => withHeaders(keyOf(obs), "[".repeat(3000) + "]".repeat(3000))),
  keyMismatch: hostile("key_scope_mismatch", (json, obs) => withHeaders(`${obs.scope.agent_id}x/${obs.scope.project_id}/${obs.scope.corpus_id}/${obs.scope.surface_id}`, json)),
  emptyKey: hostile("key_missing", (json) => withHeaders(null, json)),
  tombstone: hostile("value_missing", (_json, obs) => withHeaders(keyOf(obs), null)),
  foreignSchemaHeader: hostile("schema_header_mismatch", (json, obs) => withHeaders(keyOf(obs), json, { schema: "memory_utility_observation_v1", "x-origin": "elsewhere" })),
  schemaVersion: hostile("observation_schema_mismatch", (json, obs) => withHeaders(keyOf(obs), json.replace("memory_utility_observation_v0", "memory_utility_observation_v2"))),
  writeBoundary: hostile("observation_write_boundary_violation", (json, obs) => withHeaders(keyOf(obs), json.replace('"provider_write_performed":false', '"provider_write_performed":true'))),
  naiveTimestamp: hostile("observation_malformed", (json, obs) => withHeaders(keyOf(obs), json.replace(/"created_at":"[^"]*"/, '"created_at":"2026-11-01T00:00:00"'))),
  tamperedId: hostile("observation_identity_invalid", (json, obs) => {
    const flipped = obs.observation_id[4] === "0" ? "1" : "0";
    return withHeaders(keyOf(obs), json.replace(`"observation_id":"${obs.observation_id}"`, `"observation_id":"muo_${flipped}${obs.observation_id.slice(5)}"`));
  }),
  notAnObject: hostile("observation_malformed", (_json, obs) => withHeaders(keyOf(obs), '["memory_utility_observation_v0"]')),
  uppercaseDigest: hostile("observation_identity_invalid", (json, obs) => withHeaders(keyOf(obs), json.replace(/"memory_ref_digests":\["[^"]*"/, '"memory_ref_digests":["ABCDEF0123456789"'))),
  uriScope: hostile("observation_malformed_scope", (json, obs) => withHeaders(keyOf(obs), json.replace(`"agent_id":"${obs.scope.agent_id}"`, '"agent_id":"viking://agent"'))),
  keyNotUtf8: hostile("key_not_utf8", (json) => ({ key: Buffer.from([0x61, 0xff, 0xfe, 0x2f]), value: json, headers: { schema: "memory_utility_observation_v0" } })),
};

const CLASS_NAMES = Object.keys(HOSTILE_CLASSES);

/** A hostile record derived from a valid observation (so it looks like real traffic gone wrong), labelled with its class and intended reason. */
export function hostileRecord(rng: Prng, base: Observation): { cls: string; reason: DlqReason; message: OutMessage } {
  const cls = CLASS_NAMES[rng.int(0, CLASS_NAMES.length - 1)]!;
  const { reason, make } = HOSTILE_CLASSES[cls]!;
  const made = make(canonicalJson(observationToPy(base)), base, rng);
  const message = { ...made, headers: { ...made.headers, [HOSTILE_HEADERS.class]: cls, [HOSTILE_HEADERS.expectedReason]: reason } };
  return { cls, reason, message };
}
