/**
 * An identity's offset index: where its deliveries are in the log, one entry
 * per delivery in the order they were applied, written by the same atomic
 * apply as the state (part `x`, a Redis list). With the payloads the state
 * already stores (`h` and `d`, delivery-record.ts) it rebuilds the identity
 * state of any prefix of its deliveries, so an as-of read costs one
 * identity's records and never scans the topic.
 *
 * An entry is ASCII text:
 *
 *   <partition>:<offset>[/<timestamp>]<kind><ref>[<mark><created_at>]
 *
 *  - timestamp: the record's Kafka timestamp (ms since the epoch, the
 *    topic's timestamp type), when the record has one; as-of-time reads use it.
 *  - kind `+`: the first delivery of a distinct payload (an id's fingerprint);
 *    `.`: a repeat of a payload delivered before.
 *  - ref: the shortest prefix (at least REF_MIN hex digits) of the
 *    fingerprint's hex digits that no other payload known to the identity at
 *    that delivery shares. Later payloads may share it; the reader resolves
 *    first deliveries from the last one back (each ref was unique among the
 *    payloads first delivered up to it) and repeats forward among the
 *    payloads first delivered before them.
 *  - The stored payload of a fingerprint has its earliest `created_at` (the
 *    reference's order key): repeats may carry other ones. `=<created_at>`:
 *    this delivery's, later than the payload held then; `<<created_at>`: this
 *    delivery became the earliest and the payload held before it had this one.
 *    Without a mark the delivery's `created_at` is the payload's as held right
 *    after it. Walking a payload's entries back from the stored (final) one
 *    gives every delivery its own.
 *  - Without kind and ref: the delivery that took the identity past the
 *    delivery bound (the packet is the constant rejected one from there on).
 *
 * The index keeps MAX_INDEX_ENTRIES entries (up to and one past the bound);
 * later deliveries are not indexed, which the meta's delivery count shows.
 * Pure: no IO.
 */
import { AsciiText } from "../core/ascii-text.js";
import type { ReducerContext } from "../core/identity.js";
import { foldDelivery, emptyIdentityState, type FingerprintState, type IdentityState } from "../core/identity-state.js";
import type { Observation } from "../core/observation.js";
import { FINGERPRINT_PREFIX } from "../core/observation-model.js";
import { firstAbove, insertAt } from "../core/list-edit.js";
import { assembleParts, computeParts } from "../core/packet-parts.js";
import { MAX_PROJECTION_OBSERVATIONS } from "../core/projection-limits.js";
import { MufoldError } from "../errors.js";
import { decodeStoredState } from "./delivery-record.js";

/** Entries kept: every delivery up to the bound and the one past it. */
export const MAX_INDEX_ENTRIES = MAX_PROJECTION_OBSERVATIONS + 1;
/** Hex digits of a fingerprint a ref has at least. */
export const REF_MIN = 4;
const FP_HEAD = FINGERPRINT_PREFIX.length;

/** A point of the log: an offset on a partition. */
export interface LogPosition {
  partition: number;
  offset: bigint;
}

/** Where a delivery is: its position and, when the record has one, its Kafka timestamp (ms, decimal). */
export interface IndexedPosition extends LogPosition {
  timestamp?: string | undefined;
}

/** The latest time a JavaScript Date holds (ms since the epoch): a later Kafka timestamp is kept as none. */
const MAX_TIMESTAMP = 8_640_000_000_000_000;

/** `/<timestamp>` for a record with a timestamp (a non-negative integer a Date holds); "" for one without (a pre-0.10 message says -1). */
function timestampPart(timestamp: string | undefined): string {
  return keptTimestamp(timestamp) ? `/${timestamp}` : "";
}

function keptTimestamp(timestamp: string | undefined): timestamp is string {
  return timestamp !== undefined && /^\d{1,16}$/.test(timestamp) && Number(timestamp) <= MAX_TIMESTAMP;
}

/** The hex digits of a fingerprint (a ref is a prefix of them; its bucket key the first REF_MIN). */
const hexOf = (fingerprint: string): string => fingerprint.slice(FP_HEAD);

/** Characters of the fingerprint two fingerprints share after their `muof_` (both are `muof_` and sha256 hex). */
function commonHex(a: string, b: string): number {
  let i = FP_HEAD;
  while (i < a.length && i < b.length && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i - FP_HEAD;
}

/** A number for the first REF_MIN hex digits (7 bits a character: distinct for ASCII), so no key string is made. */
function bucketOf(fingerprint: string): number {
  let n = 0;
  for (let i = FP_HEAD; i < FP_HEAD + REF_MIN; i++) n = n * 128 + (fingerprint.charCodeAt(i) & 0x7f);
  return n;
}

/**
 * The payloads an identity knows, for the shortest refs: each one's bucket
 * key (its first REF_MIN hex digits as a number), sorted, a key a payload.
 * Two payloads share a bucket rarely (a pair in ~70 identities of 44
 * payloads, ~8 pairs among 1,024), and only then are fingerprints compared:
 * `known` lists them, the state's own strings. A Map of the fingerprints by
 * bucket cost a kept payload ~40 bytes; a key costs ~10.
 */
export class IndexRefs {
  private keys: number[] = [];

  private constructor(private readonly known: () => Iterable<string>) {}

  /** The refs of a state's payloads (a model freshly loaded, or rebuilt); `known` lists their fingerprints when asked. */
  static of(known: () => Iterable<string>): IndexRefs {
    const refs = new IndexRefs(known);
    for (const fingerprint of known()) refs.keys.push(bucketOf(fingerprint));
    refs.keys.sort((a, b) => a - b);
    return refs;
  }

  /** A payload delivered for the first time: `known` lists it once the delivery is folded. */
  add(fingerprint: string): void {
    const key = bucketOf(fingerprint);
    // A literal of one, not a push: an array pushed into from empty gets room for 17 (most models keep one payload).
    if (this.keys.length === 0) this.keys = [key];
    else insertAt(this.keys, firstAbove(this.keys, key), key);
  }

  /** The shortest prefix of a known fingerprint's hex that no other known payload shares (at least REF_MIN digits). */
  ref(fingerprint: string): string {
    let length = REF_MIN;
    const key = bucketOf(fingerprint);
    // Its own key is there: a second one is another payload's.
    if (this.keys[firstAbove(this.keys, key - 1) + 1] === key) {
      for (const other of this.known()) {
        if (other !== fingerprint && bucketOf(other) === key) length = Math.max(length, commonHex(fingerprint, other) + 1);
      }
    }
    return fingerprint.slice(FP_HEAD, FP_HEAD + length);
  }
}

/** The entry of a delivery (see the header). `prior`: the payload's earliest observation before this delivery, if it was delivered before. */
export function indexEntry(position: IndexedPosition, ref: string, observation: Observation, prior: Observation | undefined, earlier: boolean): string {
  return flatEntry(position, ref, observation, prior, earlier) ?? entryByParts(position, ref, observation, prior, earlier);
}

/** One entry's text is written once per delivery: one flat string, not a tree of the pieces (then flattened). */
const entryText = new AsciiText();

/** The entry written into one buffer; null when a piece is not what AsciiText writes (the caller concatenates then). */
function flatEntry(position: IndexedPosition, ref: string, observation: Observation, prior: Observation | undefined, earlier: boolean): string | null {
  const offset = Number(position.offset);
  if (!Number.isSafeInteger(offset)) return null;
  const t = entryText.start().digits(position.partition, 1).put(":").digits(offset, 1);
  if (keptTimestamp(position.timestamp)) t.put("/").put(position.timestamp);
  if (prior === undefined) return t.put("+").put(ref).text();
  t.put(".").put(ref);
  if (observation.created_at === prior.created_at) return t.text();
  return (earlier ? t.put("<").put(prior.created_at) : t.put("=").put(observation.created_at)).text();
}

function entryByParts(position: IndexedPosition, ref: string, observation: Observation, prior: Observation | undefined, earlier: boolean): string {
  const head = `${position.partition}:${position.offset}${timestampPart(position.timestamp)}`;
  if (prior === undefined) return `${head}+${ref}`;
  if (observation.created_at === prior.created_at) return `${head}.${ref}`;
  return earlier ? `${head}.${ref}<${prior.created_at}` : `${head}.${ref}=${observation.created_at}`;
}

/** The entry of a delivery past the bound: its position only. */
export function sealedEntry(position: IndexedPosition): string {
  return `${position.partition}:${position.offset}${timestampPart(position.timestamp)}`;
}

interface ParsedEntry {
  partition: number;
  offset: bigint;
  /** ms since the epoch; null: the record had none. */
  timestamp: number | null;
  /** null: past the bound. */
  kind: "+" | "." | null;
  ref: string;
  mark: "=" | "<" | null;
  createdAt: string;
}

const ENTRY = /^(\d+):(\d+)(?:\/(\d+))?(?:([+.])([0-9a-f]+)(?:([=<])([\s\S]*))?)?$/;

export function parseEntry(text: string): ParsedEntry {
  const m = ENTRY.exec(text);
  if (m === null) throw new IndexError(`an offset index entry is malformed: ${JSON.stringify(text.slice(0, 80))}`);
  return {
    partition: Number(m[1]),
    offset: BigInt(m[2]!),
    timestamp: m[3] === undefined ? null : Number(m[3]),
    kind: (m[4] as "+" | "." | undefined) ?? null,
    ref: m[5] ?? "",
    mark: (m[6] as "=" | "<" | undefined) ?? null,
    createdAt: m[7] ?? "",
  };
}

/** The stored index does not describe the stored state (incomplete, or not mufold's). */
export class IndexError extends MufoldError {
  constructor(message: string) {
    super(message, { retriable: false });
  }
}

/** What an identity stores that an as-of read needs. */
export interface StoredHistory {
  context: ReducerContext;
  /** The meta's delivery count. */
  deliveries: number;
  /** `d` and `h`, as load returns them (empty past the bound: the parts are dropped there). */
  records: ReadonlyMap<string, string>;
  history: ReadonlyMap<string, string>;
  /** The offset index, in order. */
  index: readonly string[];
}

/** One delivery as the index and the stored payloads give it back. */
export interface IndexedDelivery {
  partition: number;
  offset: bigint;
  /** The record's Kafka timestamp (ms since the epoch); null when it had none. */
  timestamp: number | null;
  /** null: past the bound (its payload is not needed: the packet is rejected from there on). */
  observation: Observation | null;
  fingerprint: string;
}

/** Every indexed delivery with its payload, in the order applied. Throws IndexError when the index does not cover the stored state. */
export function indexedDeliveries(stored: StoredHistory): IndexedDelivery[] {
  const entries = stored.index.map(parseEntry);
  if (entries.length !== Math.min(stored.deliveries, MAX_INDEX_ENTRIES)) {
    throw new IndexError(`the offset index holds ${entries.length} of the identity's ${stored.deliveries} deliveries (it was folded before mufold kept one): a replay rebuilds it`);
  }
  const sealed = stored.deliveries > MAX_PROJECTION_OBSERVATIONS;
  const out: IndexedDelivery[] = entries.map((e) => ({ partition: e.partition, offset: e.offset, timestamp: e.timestamp, observation: null, fingerprint: "" }));
  if (sealed) return out; // the payloads are dropped past the bound: positions only
  const payloads: FingerprintState[] = [];
  for (const versions of decodeStoredState(stored.records, stored.history, stored.context).values()) payloads.push(...versions);
  const buckets = new Map<string, FingerprintState[]>();
  for (const p of payloads) {
    const key = hexOf(p.fingerprint).slice(0, REF_MIN);
    const bucket = buckets.get(key);
    if (bucket === undefined) buckets.set(key, [p]);
    else bucket.push(p);
  }
  const match = (ref: string, among: (p: FingerprintState) => boolean, at: number): FingerprintState => {
    const found = (buckets.get(ref.slice(0, REF_MIN)) ?? []).filter((p) => hexOf(p.fingerprint).startsWith(ref) && among(p));
    if (found.length !== 1) throw new IndexError(`offset index entry ${at + 1} names ${found.length === 0 ? "no" : "more than one"} stored payload`);
    return found[0]!;
  };
  // First deliveries, from the last back: each ref is unique among the payloads first delivered up to it.
  const payloadOf: (FingerprintState | undefined)[] = new Array(entries.length);
  const firstAt = new Map<FingerprintState, number>();
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.kind === null) throw new IndexError(`offset index entry ${i + 1} is past the bound, but the identity is not`);
    if (e.kind !== "+") continue;
    const p = match(e.ref, (q) => !firstAt.has(q), i);
    firstAt.set(p, i);
    payloadOf[i] = p;
  }
  if (firstAt.size !== payloads.length) throw new IndexError(`the offset index names ${firstAt.size} of the ${payloads.length} stored payloads`);
  // Repeats, forward: each ref is unique among the payloads first delivered before it.
  for (let i = 0; i < entries.length; i++) {
    if (entries[i]!.kind === ".") payloadOf[i] = match(entries[i]!.ref, (q) => firstAt.get(q)! < i, i);
  }
  // Each delivery's created_at: walk each payload's entries back from its stored (earliest) one.
  const current = new Map<FingerprintState, string>();
  for (const p of payloads) current.set(p, p.representative.created_at);
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    const p = payloadOf[i]!;
    if (e.kind === "+" && e.mark !== null) throw new IndexError(`offset index entry ${i + 1}, a first delivery, carries a created_at mark`);
    const held = current.get(p)!;
    let createdAt = held;
    if (e.mark === "=") createdAt = e.createdAt;
    else if (e.mark === "<") current.set(p, e.createdAt);
    const obs = createdAt === p.representative.created_at ? p.representative : { ...p.representative, created_at: createdAt };
    out[i] = { partition: e.partition, offset: e.offset, timestamp: e.timestamp, observation: obs, fingerprint: p.fingerprint };
  }
  return out;
}

/** Whether a delivery is at or before a point: on one of its partitions, at or before its offset. */
export function atOrBefore(d: { partition: number; offset: bigint }, points: readonly LogPosition[]): boolean {
  for (const p of points) if (p.partition === d.partition && d.offset <= p.offset) return true;
  return false;
}

/** Which deliveries a point of the past includes: positions on partitions, or a time. */
export type AsOfPoint = { points: readonly LogPosition[] } | { time: number };

/** Whether a delivery is included by an as-of point; throws IndexError for a time and a delivery indexed without a timestamp. */
export function includes(point: AsOfPoint, d: IndexedDelivery): boolean {
  if ("points" in point) return atOrBefore(d, point.points);
  if (d.timestamp === null) {
    throw new IndexError(
      `the delivery at ${d.partition}:${d.offset} was indexed without a timestamp (a record without one, or folded before the index kept them: a replay rebuilds it): only offsets can name a point of this identity's past`,
    );
  }
  return d.timestamp <= point.time;
}

/** Per partition, the last of the deliveries included: the offsets an as-of answer used. */
export function lastUsed(deliveries: readonly IndexedDelivery[], point: AsOfPoint): LogPosition[] {
  const last = new Map<number, bigint>();
  for (const d of deliveries) if (includes(point, d) && (last.get(d.partition) ?? -1n) < d.offset) last.set(d.partition, d.offset);
  return [...last].sort((a, b) => a[0] - b[0]).map(([partition, offset]) => ({ partition, offset }));
}

/** The identity state of the deliveries an as-of point includes, or null when they include a delivery whose payload is gone (past the bound) without being past it. */
export function stateAsOf(deliveries: readonly IndexedDelivery[], point: AsOfPoint): { state: IdentityState; used: number } | null {
  const state = emptyIdentityState();
  let used = 0;
  let payloadless = false;
  for (const d of deliveries) {
    if (!includes(point, d)) continue;
    used++;
    if (d.observation === null) {
      payloadless = true;
      state.deliveries++;
    } else foldDelivery(state, d.observation, d.fingerprint);
  }
  if (payloadless && used <= MAX_PROJECTION_OBSERVATIONS) return null;
  if (used > MAX_PROJECTION_OBSERVATIONS) state.byId.clear(); // the constant rejected packet: no payload is needed
  return { state, used };
}

/**
 * The packet as of a point: the reducer over the identity's deliveries it includes, rebuilt from its
 * stored payloads and offset index; `used`, how many deliveries that is, and `last`, the last offset used per partition. Null when they include a delivery
 * whose payload is gone (past the bound) but not all up to the bound. Throws IndexError when the index does
 * not cover the stored state.
 */
export function packetAsOf(stored: StoredHistory, point: AsOfPoint): { packet: string; used: number; last: LogPosition[] } | null {
  const deliveries = indexedDeliveries(stored);
  const asOf = stateAsOf(deliveries, point);
  if (asOf === null) return null;
  return { packet: packetOf(stored.context, asOf.state), used: asOf.used, last: lastUsed(deliveries, point) };
}

/** The packet of an identity state, as the reducer gives it. */
export function packetOf(context: ReducerContext, state: IdentityState): string {
  return assembleParts(computeParts(context, state, undefined, "on read"));
}
