/**
 * A worker's in-memory view of one identity: its state, the parts it last
 * stored, the version and the per-partition watermarks. `plan` folds new
 * deliveries and returns the writes; the caller applies them with a version
 * check and discards the model if the check fails.
 *
 * With the change feed on, a plan also describes its change (packet digest,
 * status, deliveries applied, review proposals added, changed or withdrawn)
 * and writes that note into the meta hash in the same atomic apply: `dig` is
 * the sha256 hex of the packet bytes, `chg` the rest of the note. A model
 * freshly loaded from Redis that finds its deliveries already applied (a
 * redelivery: the writer may have died between the apply and announcing it)
 * hands the stored note back as `reannounce`.
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../core/canonical-json.js";
import { sha256Hex } from "../core/digest.js";
import { emptyIdentityState, foldDelivery, type IdentityState } from "../core/identity-state.js";
import type { ReducerContext } from "../core/identity.js";
import type { Observation } from "../core/observation.js";
import { MAX_PROJECTION_OBSERVATIONS } from "../core/projection-limits.js";
import { decodeDeliveryRecord, encodeDeliveryRecord } from "./delivery-record.js";
import { diffParts, type PartOp } from "./delta.js";
import { assembleParts, computeParts, emptyParts, packetChunks, type PartsView } from "../core/packet-parts.js";
import { watermarkField } from "./keys.js";

export interface Delivery {
  observation: Observation;
  fingerprint: string;
  topic: string;
  partition: number;
  offset: bigint;
}

/** What one applied change did, as the change feed announces it. */
export interface ChangeNote {
  /** The packet's `status` (ready, review_required, empty, rejected, invalid_request). */
  status: string;
  /** sha256 hex of the packet bytes (what the readback returns; the HTTP ETag without quotes). */
  digest: string;
  /** Deliveries applied in this change. */
  deliveries: number;
  /** Subjects whose review proposal is new, changed or withdrawn in this change, sorted. */
  proposals: string[];
}

export interface PlanOptions {
  /** Describe the change and store `dig` and `chg` in the meta hash (the change feed is on). */
  feed?: boolean;
}

export interface Plan {
  ops: PartOp[];
  watermarks: Map<string, bigint>;
  applied: number;
  skipped: number;
  /** Applied deliveries that changed the payload of a known observation id. */
  conflicting: number;
  nextParts: PartsView;
  /** The change this plan makes (feed on and something applied), else null. */
  change: ChangeNote | null;
  /** The stored version's change, to announce again (feed on, freshly loaded, redelivered deliveries skipped), else null. */
  reannounce: ChangeNote | null;
}

/** Meta fields of the change feed (see ChangeNote). */
export const DIGEST_FIELD = "dig";
export const CHANGE_FIELD = "chg";

const STATUS = /[{,]"status":"([^"\\]*)"/;

/** The review proposals a packet carries, by subject id (none when the packet is rejected). */
export function packetProposals(parts: PartsView): Map<string, string> {
  const out = new Map<string, string>();
  if (parts.rejected !== null) return out;
  for (const [id, subject] of parts.subjects) if (subject.proposal !== null) out.set(id, subject.proposal);
  return out;
}

/** The packet's `status`, read from the skeleton (or the rejected packet) without assembling. */
export function packetStatus(parts: PartsView): string {
  return STATUS.exec(parts.rejected ?? parts.skeleton)?.[1] ?? "";
}

/**
 * sha256 hex of the packet bytes, `sha256Hex(assembleParts(parts))`, without
 * building the packet: the fragments go into the hash in assembleParts' order
 * (a 1,000-delivery packet is ~370 KB; joining it costs three times the
 * hashing). test/integration/change-feed.int.spec.ts holds the two equal.
 */
export function packetDigest(parts: PartsView): string {
  const hash = createHash("sha256");
  for (const chunk of packetChunks(parts)) hash.update(chunk);
  return hash.digest("hex");
}

/** The reference digest: assemble the packet, then hash it (what a reader computes from the bytes). */
export function assembledDigest(parts: PartsView): string {
  return sha256Hex(assembleParts(parts));
}

function changedProposals(prev: PartsView, next: PartsView): string[] {
  const before = packetProposals(prev);
  const after = packetProposals(next);
  const out: string[] = [];
  for (const [id, proposal] of after) if (before.get(id) !== proposal) out.push(id);
  for (const id of before.keys()) if (!after.has(id)) out.push(id);
  return out.sort();
}

function encodeNote(note: ChangeNote): string {
  return canonicalJson({ n: note.deliveries, p: note.proposals });
}

function decodeNote(text: string, parts: PartsView): ChangeNote | null {
  try {
    const raw = JSON.parse(text) as { n?: unknown; p?: unknown };
    if (typeof raw.n !== "number" || !Array.isArray(raw.p)) return null;
    return { status: packetStatus(parts), digest: packetDigest(parts), deliveries: raw.n, proposals: raw.p.map(String) };
  } catch {
    return null;
  }
}

export class IdentityModel {
  version = 0;
  watermarks = new Map<string, bigint>();
  state: IdentityState = emptyIdentityState();
  parts: PartsView = emptyParts();
  sealed = false;
  /** The meta `dig` and `chg` as stored at `version` (null when absent). */
  storedDigest: string | null = null;
  storedChange: string | null = null;
  /** Loaded from Redis with a change note: the stored version may not have been announced. */
  private unannounced = false;

  constructor(
    readonly identity: string,
    readonly context: ReducerContext,
  ) {}

  /** Rebuild from stored meta and delivery records (the cache-miss path). */
  static fromStored(identity: string, context: ReducerContext, meta: Record<string, string>, records: ReadonlyMap<string, string>): IdentityModel {
    const model = new IdentityModel(identity, context);
    model.version = Number(meta.v ?? "0");
    for (const [field, value] of Object.entries(meta)) if (field.startsWith("w:")) model.watermarks.set(field, BigInt(value));
    model.storedDigest = meta[DIGEST_FIELD] ?? null;
    model.storedChange = meta[CHANGE_FIELD] ?? null;
    model.unannounced = model.version > 0 && model.storedChange !== null;
    const deliveries = Number(meta.n ?? "0");
    if (deliveries > MAX_PROJECTION_OBSERVATIONS) {
      model.sealed = true;
      model.state.deliveries = deliveries;
      model.parts = computeParts(context, model.state);
      return model;
    }
    for (const [id, text] of records) model.state.byId.set(id, decodeDeliveryRecord(text));
    model.state.deliveries = deliveries;
    model.parts = computeParts(context, model.state);
    return model;
  }

  watermark(topic: string, partition: number): bigint {
    return this.watermarks.get(watermarkField(topic, partition)) ?? -1n;
  }

  /** Fold deliveries above the watermarks into this model and return the writes. Mutates the model. */
  plan(deliveries: readonly Delivery[], options: PlanOptions = {}): Plan {
    const feed = options.feed ?? false;
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
    let change: ChangeNote | null = null;
    if (applied > 0 && feed) {
      change = { status: packetStatus(nextParts), digest: packetDigest(nextParts), deliveries: applied, proposals: changedProposals(this.parts, nextParts) };
      const note = encodeNote(change);
      if (change.digest !== this.storedDigest) ops.push({ op: "HSET", part: "m", field: DIGEST_FIELD, value: change.digest });
      if (note !== this.storedChange) ops.push({ op: "HSET", part: "m", field: CHANGE_FIELD, value: note });
    } else if (applied > 0) {
      // Feed off: a digest left by an earlier run would go stale, so it goes.
      if (this.storedDigest !== null) ops.push({ op: "HDEL", part: "m", field: DIGEST_FIELD, value: "" });
      if (this.storedChange !== null) ops.push({ op: "HDEL", part: "m", field: CHANGE_FIELD, value: "" });
    }
    // Only the first plan of a freshly loaded model can find an unannounced stored change.
    const reannounce = feed && this.unannounced && skipped > 0 && this.storedChange !== null ? decodeNote(this.storedChange, this.parts) : null;
    this.unannounced = false;
    for (const [field, offset] of watermarks) this.watermarks.set(field, offset);
    return { ops, watermarks, applied, skipped, conflicting, nextParts, change, reannounce };
  }

  /** Record a successful apply. */
  committed(plan: Plan, version: number): void {
    this.parts = plan.nextParts;
    this.version = version;
    if (plan.applied > 0) {
      this.storedDigest = plan.change?.digest ?? null;
      this.storedChange = plan.change === null ? null : encodeNote(plan.change);
    }
  }
}
