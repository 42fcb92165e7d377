/**
 * A worker's in-memory view of one identity: its state, the parts it last
 * stored, the version and the per-partition watermarks. `plan` folds new
 * deliveries and returns the writes; the caller applies them with a version
 * check and discards the model if the check fails.
 */
import { canonicalJson } from "../core/canonical-json.js";
import { emptyIdentityState, foldDelivery, type IdentityState } from "../core/identity-state.js";
import type { ReducerContext } from "../core/identity.js";
import type { Observation } from "../core/observation.js";
import { MAX_PROJECTION_OBSERVATIONS } from "../core/projection-limits.js";
import { decodeDeliveryRecord, encodeDeliveryRecord } from "./delivery-record.js";
import { diffParts, type PartOp } from "./delta.js";
import { computeParts, emptyParts, type PartsView } from "../core/packet-parts.js";
import { watermarkField } from "./keys.js";

export interface Delivery {
  observation: Observation;
  fingerprint: string;
  topic: string;
  partition: number;
  offset: bigint;
}

export interface Plan {
  ops: PartOp[];
  watermarks: Map<string, bigint>;
  applied: number;
  skipped: number;
  /** Applied deliveries that changed the payload of a known observation id. */
  conflicting: number;
  nextParts: PartsView;
}

export class IdentityModel {
  version = 0;
  watermarks = new Map<string, bigint>();
  state: IdentityState = emptyIdentityState();
  parts: PartsView = emptyParts();
  sealed = false;

  constructor(
    readonly identity: string,
    readonly context: ReducerContext,
  ) {}

  /** Rebuild from stored meta and delivery records (the cache-miss path). */
  static fromStored(identity: string, context: ReducerContext, meta: Record<string, string>, records: Record<string, string>): IdentityModel {
    const model = new IdentityModel(identity, context);
    model.version = Number(meta.v ?? "0");
    for (const [field, value] of Object.entries(meta)) if (field.startsWith("w:")) model.watermarks.set(field, BigInt(value));
    const deliveries = Number(meta.n ?? "0");
    if (deliveries > MAX_PROJECTION_OBSERVATIONS) {
      model.sealed = true;
      model.state.deliveries = deliveries;
      model.parts = computeParts(context, model.state);
      return model;
    }
    for (const [id, text] of Object.entries(records)) model.state.byId.set(id, decodeDeliveryRecord(text));
    model.state.deliveries = deliveries;
    model.parts = computeParts(context, model.state);
    return model;
  }

  watermark(topic: string, partition: number): bigint {
    return this.watermarks.get(watermarkField(topic, partition)) ?? -1n;
  }

  /** Fold deliveries above the watermarks into this model and return the writes. Mutates the model. */
  plan(deliveries: readonly Delivery[]): Plan {
    const watermarks = new Map<string, bigint>();
    const touched = new Set<string>();
    let applied = 0;
    let skipped = 0;
    let conflicting = 0;
    for (const d of deliveries) {
      const field = watermarkField(d.topic, d.partition);
      const seen = watermarks.get(field) ?? this.watermarks.get(field) ?? -1n;
      if (d.offset <= seen) {
        skipped++; // applied before: a redelivery
        continue;
      }
      watermarks.set(field, d.offset);
      applied++;
      if (this.sealed) this.state.deliveries++;
      else {
        if (foldDelivery(this.state, d.observation, d.fingerprint) === "conflict") conflicting++;
        touched.add(d.observation.observation_id);
      }
    }
    const sealing = !this.sealed && this.state.deliveries > MAX_PROJECTION_OBSERVATIONS;
    if (sealing) {
      this.sealed = true;
      this.state.byId.clear(); // the rejected packet needs nothing else
    }
    const nextParts = computeParts(this.context, this.state, this.parts);
    const ops = applied === 0 ? [] : diffParts(this.parts, nextParts, sealing);
    if (!this.sealed) {
      for (const id of touched) ops.push({ op: "HSET", part: "d", field: id, value: encodeDeliveryRecord(this.state.byId.get(id)!) });
    }
    if (this.version === 0 && applied > 0) ops.push({ op: "HSET", part: "m", field: "ctx", value: canonicalJson({ ...this.context, scope: { ...this.context.scope } }) });
    for (const [field, offset] of watermarks) this.watermarks.set(field, offset);
    return { ops, watermarks, applied, skipped, conflicting, nextParts };
  }

  /** Record a successful apply. */
  committed(plan: Plan, version: number): void {
    this.parts = plan.nextParts;
    this.version = version;
  }
}
