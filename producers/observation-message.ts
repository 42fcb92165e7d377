/** The Kafka message of an observation: scope key, canonical JSON value, schema headers. */
import { canonicalJson, observationToPy, type Observation } from "../src/core/index.js";
import type { OutMessage } from "../src/adapters/kafka/producer.js";
import { OBSERVATION_SCHEMA_HEADER } from "../src/fold/record-decision.js";
import { scopeKey } from "../src/fold/scope-key.js";

export function observationMessage(obs: Observation): OutMessage {
  return {
    key: scopeKey(obs.scope),
    value: canonicalJson(observationToPy(obs)),
    headers: { schema: OBSERVATION_SCHEMA_HEADER, "content-type": "application/json" },
  };
}
