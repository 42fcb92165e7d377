/**
 * The JSON forms of explain and diff, one for `mufold explain --json`,
 * `mufold diff --json` and the HTTP API: snake_case fields, offsets as JSON
 * integers (exact: canonical JSON writes a bigint's digits), positions as
 * "partition:offset" strings.
 */
import type { PyValue } from "../core/pyvalue.js";
import type { ExplainedDelivery } from "../fold/provenance.js";
import type { ProjectionChange, ProjectionExplanation } from "./readback.js";

const deliveryJson = (d: ExplainedDelivery) => ({
  partition: d.partition,
  offset: d.offset,
  timestamp: d.timestamp,
  observation_id: d.observation_id,
  decision: d.decision,
  reason: d.reason,
  repeat: d.repeat,
  feeds: { ...d.feeds },
});

const asOfJson = (e: ProjectionExplanation) =>
  e.asOf === undefined
    ? null
    : { points: e.asOf.points.map((p) => `${p.partition}:${p.offset}`), time: e.asOf.time ?? null, used: e.asOf.used.map((p) => `${p.partition}:${p.offset}`), deliveries: e.asOf.deliveries };

/** An explanation as JSON (pass it to canonicalJson). */
export function explanationJson(e: ProjectionExplanation): PyValue {
  return {
    identity: e.identity,
    generation: e.generation,
    version: e.version,
    status: e.status,
    etag: e.etag,
    counts: { ...e.counts },
    not_indexed: e.notIndexed,
    as_of: asOfJson(e),
    deliveries: e.deliveries.map(deliveryJson),
  } as unknown as PyValue;
}

/** A diff as JSON (pass it to canonicalJson). */
export function diffJson(d: ProjectionChange): PyValue {
  return {
    identity: d.identity,
    from: { status: d.from.status, etag: d.from.etag, as_of: asOfJson(d.from), deliveries: d.from.deliveries.length },
    to: { status: d.to.status, etag: d.to.etag, as_of: asOfJson(d.to), deliveries: d.to.deliveries.length },
    same_bytes: d.same_bytes,
    status: d.status,
    counters: d.counters,
    subjects: d.subjects,
    conflicts: d.conflicts,
    deliveries: { added: d.deliveries.added.map(deliveryJson), removed: d.deliveries.removed.map(deliveryJson) },
  } as unknown as PyValue;
}

