/**
 * A worker's in-memory view of one identity: its state, the parts it last
 * stored, the version and the per-partition watermarks. `plan` folds new
 * deliveries and returns the writes; the caller applies them with a version
 * check and discards the model if the check fails.
 *
 * With the change feed on, a plan also describes its change (packet digest,
 * status, deliveries applied, review proposals added, changed or withdrawn)
 * and writes that note into the meta hash in the same atomic apply: `dig` is
 * the identity's content digest (IdentityParts.digest: it changes whenever
 * the packet changes and is equal for equal content in any generation; it is
 * not the HTTP ETag, which a reader computes from the bytes), `chg` the rest. A model
 * freshly loaded from Redis that finds its deliveries already applied (a
 * redelivery: the writer may have died between the apply and announcing it)
 * hands the stored note back as `reannounce`.
 */
import { canonicalJson } from "../core/canonical-json.js";
import { compactKey } from "../core/compact-json.js";
import { contextJson, type ReducerContext } from "../core/identity.js";
import type { IdentityState } from "../core/identity-state.js";
import { compareOrder } from "../core/ordering.js";
import { IdentityParts, type PartsChanges } from "../core/identity-parts.js";
import type { Observation } from "../core/observation.js";
import { MAX_PROJECTION_OBSERVATIONS } from "../core/projection-limits.js";
import { decodeStoredState, storedRecord } from "./delivery-record.js";
import { PartOps, opsForChanges, type Scalars } from "./delta.js";
import type { PartsView } from "../core/packet-parts.js";
import { META_FIELDS, OFFSET_INDEX_PART, WATERMARK_PREFIX, watermarkField } from "./stored-names.js";
import { IndexRefs, MAX_INDEX_ENTRIES, indexEntry, sealedEntry } from "./offset-index.js";

export interface Delivery {
  observation: Observation;
  fingerprint: string;
  topic: string;
  partition: number;
  offset: bigint;
  /** The record's Kafka timestamp (ms since the epoch, decimal), as the offset index keeps it. */
  timestamp?: string | undefined;
  /** The observation's strings are its own (Accepted.owned): the model keeps the observation itself, not a copy. */
  owned?: boolean;
}

/** What one applied change did, as the change feed announces it. */
export interface ChangeNote {
  /** The packet's `status` (ready, review_required, empty, rejected, invalid_request). */
  status: string;
  /** The content digest after the change (see IdentityParts.digest). */
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
  ops: PartOps;
  watermarks: Map<string, bigint>;
  applied: number;
  skipped: number;
  /** Applied deliveries that changed the payload of a known observation id. */
  conflicting: number;
  nextParts: PartsView;
  /** The parts this plan rewrites (their fragments are released once committed), else null. */
  changes: PartsChanges | null;
  /** The change this plan makes (feed on and something applied), else null. */
  change: ChangeNote | null;
  /** `change` as the meta hash stores it (encoded once: the model keeps it after the commit), else null. */
  changeText: string | null;
  /** The stored version's change, to announce again (feed on, freshly loaded, redelivered deliveries skipped), else null. */
  reannounce: ChangeNote | null;
}

/** Meta fields of the change feed: the content digest, and the last change's note (see ChangeNote). */
export const DIGEST_FIELD = META_FIELDS.digest;
export const CHANGE_FIELD = META_FIELDS.change;

/** `"status":"…"` in a canonical (rejected) packet or a skeleton in the stored form (compact-json.ts). */
const STATUS = new RegExp(`[{,](?:"status":|${compactKey("status").replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")})"([^"\\\\]*)"`);

/** The packet's `status`, read from the skeleton (or the rejected packet) without assembling. */
export function packetStatus(parts: PartsView): string {
  return STATUS.exec(parts.rejected ?? parts.skeleton)?.[1] ?? "";
}

type SubjectChanges = readonly { id: string; before?: { proposal: string | null } | undefined; after?: { proposal: string | null } | undefined }[];

/** Subjects whose proposal is new, changed or withdrawn by one flush; a rejected packet carries none. */
function changedProposals(wasRejected: boolean, parts: PartsView, changed: SubjectChanges): string[] {
  const out: string[] = [];
  if (wasRejected && parts.rejected !== null) return out;
  if (wasRejected) {
    for (const [id, s] of parts.subjects) if (s.proposal !== null) out.push(id); // all appear again
  } else if (parts.rejected !== null) {
    // All withdrawn: the unchanged subjects' proposals and the changed ones' former proposals.
    const changedIds = new Set(changed.map((c) => c.id));
    for (const [id, s] of parts.subjects) if (!changedIds.has(id) && s.proposal !== null) out.push(id);
    for (const c of changed) if ((c.before?.proposal ?? null) !== null) out.push(c.id);
  } else {
    for (const c of changed) if ((c.before?.proposal ?? null) !== (c.after?.proposal ?? null)) out.push(c.id);
  }
  return out.sort();
}

/** canonicalJson({ n, p }), its two keys written in order: sorting them cost ~0.3 KB a record of garbage. */
function encodeNote(note: ChangeNote): string {
  return `{"n":${canonicalJson(note.deliveries)},"p":${canonicalJson(note.proposals)}}`;
}

function decodeNote(text: string, parts: PartsView, digest: string): ChangeNote | null {
  try {
    const raw = JSON.parse(text) as { n?: unknown; p?: unknown };
    if (typeof raw.n !== "number" || !Array.isArray(raw.p)) return null;
    return { status: packetStatus(parts), digest, deliveries: raw.n, proposals: raw.p.map(String) };
  } catch {
    return null;
  }
}

/**
 * What a cached model holds, on the V8 heap and in its shelf of observation
 * bytes (shelved-observation.ts), as the cache's byte bound counts it
 * (IdentityApplier): above what bench/model-memory.bench.ts measures, which
 * prints this estimate beside its measurements (a model of one delivery:
 * 6.3 KB, of ~44 observations 1.04 KB an observation, 2026-12-07), and a unit
 * test holds it above, within twice.
 */
export const MODEL_HEAP_BYTES = { base: 7 * 1024, perObservation: 1536 } as const;

export class IdentityModel {
  version = 0;
  watermarks = new Map<string, bigint>();
  /** The meta `dig` and `chg` as stored at `version` (null when absent). */
  storedDigest: string | null = null;
  storedChange: string | null = null;
  /** Loaded from Redis with a change note: the stored version may not have been announced. */
  private unannounced = false;
  private readonly inc: IdentityParts;
  /** The offset index's refs of the payloads known (offset-index.ts), made at the first plan that needs them. */
  private refs: IndexRefs | null = null;

  constructor(
    readonly identity: string,
    context: ReducerContext,
  ) {
    this.inc = new IdentityParts(context);
  }

  /** The identity's context (the parts' owned copy). */
  get context(): ReducerContext {
    return this.inc.context;
  }

  get state(): IdentityState {
    return this.inc.state;
  }

  /**
   * The stored parts (kept up to date in place by plan). The fragments a plan
   * wrote are there until it is committed; after that, and after a load, a
   * subject's or history entry's fragment is empty: the store holds it.
   */
  get parts(): PartsView {
    return this.inc.parts;
  }

  get sealed(): boolean {
    return this.inc.sealed;
  }

  /** Rebuild from stored meta, delivery records and history entries (the cache-miss path; see delivery-record.ts). */
  static fromStored(identity: string, context: ReducerContext, meta: Record<string, string>, records: ReadonlyMap<string, string>, history: ReadonlyMap<string, string> = new Map()): IdentityModel {
    const model = new IdentityModel(identity, context);
    model.version = Number(meta[META_FIELDS.version] ?? "0");
    for (const [field, value] of Object.entries(meta)) if (field.startsWith(WATERMARK_PREFIX)) model.watermarks.set(field, BigInt(value));
    model.storedDigest = meta[DIGEST_FIELD] ?? null;
    model.storedChange = meta[CHANGE_FIELD] ?? null;
    model.unannounced = model.version > 0 && model.storedChange !== null;
    const deliveries = Number(meta[META_FIELDS.deliveries] ?? "0");
    if (deliveries > MAX_PROJECTION_OBSERVATIONS) {
      model.inc.loadSealed(deliveries);
      return model;
    }
    model.inc.load(decodeStoredState(records, history, context), deliveries);
    model.inc.release(model.inc.flush()); // what it rebuilt is what the store holds
    return model;
  }

  watermark(topic: string, partition: number): bigint {
    return this.watermarks.get(watermarkField(topic, partition)) ?? -1n;
  }

  /** Heap bytes this model holds, estimated (MODEL_HEAP_BYTES): a sealed identity keeps no observations. */
  heapEstimate(): number {
    return MODEL_HEAP_BYTES.base + MODEL_HEAP_BYTES.perObservation * this.inc.kept;
  }

  /** The content digest of the current parts (IdentityParts.digest). */
  digest(): string {
    return this.inc.digest();
  }

  /** Fold deliveries above the watermarks into this model and return the writes. Mutates the model. */
  plan(deliveries: readonly Delivery[], options: PlanOptions = {}): Plan {
    const feed = options.feed ?? false;
    const parts = this.inc.parts;
    const watermarks = new Map<string, bigint>();
    // Ids whose `d` record (delivery-record.ts) may be more than nothing: a new id folded once stores none.
    let recorded: Set<string> | null = null;
    const wasSealed = this.inc.sealed;
    const before: Scalars = { rejected: parts.rejected, deliveries: parts.deliveries, skeleton: parts.skeleton, accepted: parts.accepted };
    let applied = 0;
    let skipped = 0;
    let conflicting = 0;
    const entries: string[] = [];
    for (const d of deliveries) {
      const field = watermarkField(d.topic, d.partition);
      const seen = watermarks.get(field) ?? this.watermarks.get(field) ?? -1n;
      if (d.offset <= seen) {
        skipped++; // applied before: a redelivery
        continue;
      }
      watermarks.set(field, d.offset);
      applied++;
      const entry = this.indexEntry(d);
      if (entry !== null) entries.push(entry);
      const kind = this.inc.fold(d.observation, d.fingerprint, d.owned === true);
      if (kind === "conflict") conflicting++;
      if (kind === "duplicate" || kind === "conflict") (recorded ??= new Set()).add(d.observation.observation_id);
    }
    // Only the first plan of a freshly loaded model can find an unannounced stored change.
    const reannounce = feed && this.unannounced && skipped > 0 && this.storedChange !== null ? decodeNote(this.storedChange, parts, this.storedDigest ?? "") : null;
    this.unannounced = false;
    if (applied === 0) return { ops: new PartOps(), watermarks, applied, skipped, conflicting, nextParts: parts, changes: null, change: null, changeText: null, reannounce };
    const changes = this.inc.flush();
    const sealing = !wasSealed && this.inc.sealed;
    if (sealing) this.refs = null; // no entry past the bound needs a ref
    const ops = opsForChanges(before, parts, changes, sealing, entries.length + (recorded?.size ?? 0) + 3);
    if (!this.inc.sealed) {
      for (const id of recorded ?? []) {
        const record = storedRecord(this.inc.versionsOf(id)!);
        if (record !== null) ops.push("HSET", "d", id, record);
      }
    }
    for (const entry of entries) ops.push("RPUSH", OFFSET_INDEX_PART, entry);
    if (this.version === 0) ops.push("HSET", "m", "ctx", contextJson(this.context));
    let change: ChangeNote | null = null;
    let note: string | null = null;
    if (feed) {
      const proposals = changedProposals(before.rejected !== null, parts, changes.subjects);
      change = { status: packetStatus(parts), digest: this.inc.digest(), deliveries: applied, proposals };
      note = encodeNote(change);
      if (change.digest !== this.storedDigest) ops.push("HSET", "m", DIGEST_FIELD, change.digest);
      if (note !== this.storedChange) ops.push("HSET", "m", CHANGE_FIELD, note);
    } else {
      // Feed off: a digest left by an earlier run would go stale, so it goes.
      if (this.storedDigest !== null) ops.push("HDEL", "m", DIGEST_FIELD);
      if (this.storedChange !== null) ops.push("HDEL", "m", CHANGE_FIELD);
    }
    for (const [field, offset] of watermarks) this.watermarks.set(field, offset);
    return { ops, watermarks, applied, skipped, conflicting, nextParts: parts, changes, change, changeText: note, reannounce };
  }

  /** The offset index entry of a delivery about to be folded; null past the index's bound (offset-index.ts). */
  private indexEntry(d: Delivery): string | null {
    const ordinal = this.inc.deliveries + 1;
    if (ordinal > MAX_INDEX_ENTRIES) return null;
    if (ordinal === MAX_INDEX_ENTRIES) return sealedEntry(d);
    const refs = (this.refs ??= IndexRefs.of(() => this.inc.fingerprints()));
    const prior = this.inc.representativeOf(d.observation.observation_id, d.fingerprint);
    if (prior === undefined) refs.add(d.fingerprint);
    const earlier = prior !== undefined && d.observation.created_at !== prior.created_at && compareOrder(d.observation, prior) < 0;
    return indexEntry(d, refs.ref(d.fingerprint), d.observation, prior, earlier);
  }

  /** Record a successful apply (the parts were updated by plan); the fragments it wrote are the store's now. */
  committed(plan: Plan, version: number): void {
    this.version = version;
    if (plan.changes !== null) this.inc.release(plan.changes);
    if (plan.applied > 0) {
      this.storedDigest = plan.change?.digest ?? null;
      this.storedChange = plan.changeText;
    }
  }
}
