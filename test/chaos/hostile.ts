/**
 * Records that are not valid observations, of every class an operator meets:
 * broken JSON and UTF-8, wrong or missing fields, NaN and huge numbers, URIs
 * and paths in references, oversized values, deep nesting, key/scope
 * mismatches, empty keys, tombstones and foreign headers.
 */
import { canonicalJson, observationToPy, type Observation } from "../../src/core/index.js";
import type { OutMessage } from "../../src/adapters/kafka/producer.js";
import { scopeKey } from "../../src/fold/scope-key.js";
import type { Prng } from "../../producers/simulation.js";

type Mutation = (json: string, obs: Observation, rng: Prng) => OutMessage;

const keyOf = (obs: Observation) => scopeKey(obs.scope);
const withHeaders = (key: string | null, value: Buffer | string | null, headers: Record<string, string> = { schema: "memory_utility_observation_v0" }): OutMessage => ({ key, value, headers });

export const HOSTILE_CLASSES: Record<string, Mutation> = {
  brokenJson: (json, obs, rng) => withHeaders(keyOf(obs), json.slice(0, rng.int(1, json.length - 2))),
  trailingComma: (json, obs) => withHeaders(keyOf(obs), json.replace(/}$/, ",}")),
  invalidUtf8: (json, obs) => withHeaders(keyOf(obs), Buffer.concat([Buffer.from(json.slice(0, 20)), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from(json.slice(20))])),
  missingField: (json, obs) => withHeaders(keyOf(obs), json.replace(/"outcome_ref":"[^"]*",/, "")),
  unknownField: (json, obs) => withHeaders(keyOf(obs), json.replace(/^{/, '{"transcript":"raw agent transcript",')),
  wrongType: (json, obs) => withHeaders(keyOf(obs), json.replace(/"confidence":[^,]*/, '"confidence":"high"')),
  nanNumber: (json, obs) => withHeaders(keyOf(obs), json.replace(/"confidence":[^,]*/, '"confidence":NaN')),
  hugeNumber: (json, obs) => withHeaders(keyOf(obs), json.replace(/"confidence":[^,]*/, `"confidence":1${"0".repeat(400)}`)),
  hugeFloat: (json, obs) => withHeaders(keyOf(obs), json.replace(/"confidence":[^,]*/, '"confidence":1e400')),
  uriRef: (json, obs) => withHeaders(keyOf(obs), json.replace(/"outcome_ref":"[^"]*"/, '"outcome_ref":"https://provider.example/outcome/1"')),
  pathRef: (json, obs) => withHeaders(keyOf(obs), json.replace(/"evaluator_ref":"[^"]*"/, '"evaluator_ref":"/etc/passwd"')),
  windowsPath: (json, obs) => withHeaders(keyOf(obs), json.replace(/"policy_snapshot_ref":"[^"]*"/, '"policy_snapshot_ref":"C:\\\\Users\\\\me"')),
  oversized: (json, obs) => withHeaders(keyOf(obs), json.replace(/"reason_codes":\[[^\]]*\]/, `"reason_codes":["${"x".repeat(70_000)}"]`)),
  longRef: (json, obs) => withHeaders(keyOf(obs), json.replace(/"evaluator_ref":"[^"]*"/, `"evaluator_ref":"${"e".repeat(201)}"`)),
  deepNesting: (_json, obs) => withHeaders(keyOf(obs), "[".repeat(3000) + "]".repeat(3000)),
  keyMismatch: (json, obs) => withHeaders(`${obs.scope.agent_id}x/${obs.scope.project_id}/${obs.scope.corpus_id}/${obs.scope.surface_id}`, json),
  emptyKey: (json) => withHeaders(null, json),
  tombstone: (_json, obs) => withHeaders(keyOf(obs), null),
  foreignSchemaHeader: (json, obs) => withHeaders(keyOf(obs), json, { schema: "memory_utility_observation_v1", "x-origin": "elsewhere" }),
  schemaVersion: (json, obs) => withHeaders(keyOf(obs), json.replace("memory_utility_observation_v0", "memory_utility_observation_v2")),
  writeBoundary: (json, obs) => withHeaders(keyOf(obs), json.replace('"provider_write_performed":false', '"provider_write_performed":true')),
  naiveTimestamp: (json, obs) => withHeaders(keyOf(obs), json.replace(/"created_at":"[^"]*"/, '"created_at":"2026-11-01T00:00:00"')),
  tamperedId: (json, obs) => {
    const flipped = obs.observation_id[4] === "0" ? "1" : "0";
    return withHeaders(keyOf(obs), json.replace(`"observation_id":"${obs.observation_id}"`, `"observation_id":"muo_${flipped}${obs.observation_id.slice(5)}"`));
  },
  notAnObject: (_json, obs) => withHeaders(keyOf(obs), '["memory_utility_observation_v0"]'),
  uppercaseDigest: (json, obs) => withHeaders(keyOf(obs), json.replace(/"memory_ref_digests":\["[^"]*"/, '"memory_ref_digests":["ABCDEF0123456789"')),
};

const CLASS_NAMES = Object.keys(HOSTILE_CLASSES);

/** A hostile record derived from a valid observation (so it looks like real traffic gone wrong). */
export function hostileRecord(rng: Prng, base: Observation): { cls: string; message: OutMessage } {
  const cls = CLASS_NAMES[rng.int(0, CLASS_NAMES.length - 1)]!;
  const message = HOSTILE_CLASSES[cls]!(canonicalJson(observationToPy(base)), base, rng);
  return { cls, message };
}
