/** An observation as a consumed Kafka record (as mufold's producer writes it), for tests of the pure fold. */
import type { SourceRecord } from "../../src/fold/source-record.js";
import { canonicalJson, observationToPy, type Observation } from "../../src/core/index.js";
import { OBSERVATION_SCHEMA_HEADER } from "../../src/fold/record-decision.js";
import { scopeKey } from "../../src/fold/scope-key.js";

export function sourceRecord(observation: Observation, partition: number, offset: number): SourceRecord {
  return {
    topic: "t",
    partition,
    offset: String(offset),
    key: Buffer.from(scopeKey(observation.scope)),
    value: Buffer.from(canonicalJson(observationToPy(observation))),
    headers: { schema: OBSERVATION_SCHEMA_HEADER },
  };
}
