/**
 * What a cached identity model keeps of an accepted observation, mostly off
 * the V8 heap. A fold reads few of a kept observation's fields again: its id
 * and created_at (order, history members, the latest), and its label, basis,
 * level and confidence (the subject's estimate). Those stay on a small object.
 * The fields only a conflict's delivery record reads again (receipt, outcome
 * ref, evaluator, evidence refs, memory ref digests, reason codes) go into
 * its identity's shelf, one growable Buffer whose bytes the collector neither
 * copies nor marks; the scope and snapshot refs are the identity's context's,
 * and the rest is constant. A getter of one of those fields rebuilds the
 * observation from the shelf. Its version's fingerprint goes on the shelf
 * too, as 32 bytes, just before those fields.
 *
 * Measured by bench/model-memory.bench.ts (--shapes) on the pipeline bench's
 * shape: a kept observation held ~0.9 KB of strings, lists and an 18-field
 * object on the heap; shelved, with its version's fields (identity-parts.ts,
 * KeptObservation), one 11-field object and two strings, and ~190 bytes of
 * shelf.
 */
import { HEX_DIGITS } from "./digest.js";
import { detached } from "./flat-string.js";
import { latin1 } from "./repeated-strings.js";
import type { ReducerContext } from "./identity.js";
import { FINGERPRINT_PREFIX, OBSERVATION_SCHEMA_VERSION, type AttributionLevel, type EvidenceBasis, type Observation, type UtilityLabel } from "./observation-model.js";

/**
 * An identity's shelved fields, one observation's after another's, and its
 * subjects' element hashes (32 bytes each, in slots rewritten in place). Each
 * string is a varint (LEB128) head, then its bytes: an ASCII string a byte a
 * character, any other its UTF-16 code units (exact for every JS string); the
 * head is the byte length, shifted left once, with 1 for UTF-16. Each list is
 * its length as a varint, then its strings.
 */
export class ObservationShelf {
  private bytes: Buffer | null = null;
  private used = 0;

  /** `context`: the identity's (owned), whose scope and snapshot refs every observation shelved here has. */
  constructor(readonly context: ReducerContext) {}

  /** Bytes held (the model's memory estimate counts them with its observations). */
  get capacity(): number {
    return this.bytes?.length ?? 0;
  }

  /** Let go of every shelved field (no kept observation reads them any more: a model sealed past the bound). */
  clear(): void {
    this.bytes = null;
    this.used = 0;
  }

  /**
   * Room for an element hash (part-hash.ts: 32 latin1 characters, a byte each); returns where. A cached
   * subject kept its hash as a 48-byte string on the heap, which the collector copied and marked.
   */
  hashSlot(): number {
    return this.reserve(32);
  }

  putHash(at: number, h: string): void {
    const b = this.bytes!;
    for (let i = 0; i < 32; i++) b[at + i] = h.charCodeAt(i);
  }

  /** The hash at `at`, as `putHash` took it. */
  hashAt(at: number): string {
    return latin1(this.bytes!, at, at + 32);
  }

  /**
   * Shelve `o`'s cold fields, and its version's fingerprint before them when given and of the contract's form
   * (`muof_` and 64 lowercase hex digits: 32 bytes here, where its string held ~88 bytes of heap). Returns where the
   * fields start, as a mark: negative when the fingerprint is shelved (see ShelvedObservation).
   */
  put(o: Observation, fingerprint: string | null = null): number {
    const fingerprintAt = fingerprint === null ? -1 : this.putFingerprint(fingerprint);
    const start = this.used;
    // Sized and written as ASCII, a byte a character (the contract's refs are ASCII): a call into Buffer's
    // native byteLength and write for each string cost ~2 µs a record. Another character starts it over.
    if (!this.write(o, true)) {
      this.used = start;
      this.write(o, false);
    }
    return fingerprintAt < 0 ? start : -start - 1;
  }

  /** The fingerprint's digest as 32 bytes; returns where, or -1 (nothing written) when it is not of the contract's form. */
  private putFingerprint(fingerprint: string): number {
    if (!isContractFingerprint(fingerprint)) return -1;
    const at = this.reserve(32);
    const b = this.bytes!;
    // (every digit is lowercase hex: isContractFingerprint)
    for (let i = 0, c = FINGERPRINT_PREFIX.length; i < 32; i++, c += 2) b[at + i] = (HEX_VALUE[fingerprint.charCodeAt(c)]! << 4) | HEX_VALUE[fingerprint.charCodeAt(c + 1)]!;
    return at;
  }

  /** The fingerprint shelved just before the fields at `start`. */
  fingerprintBefore(start: number): string {
    const b = this.bytes!;
    const out = FINGERPRINT_TEXT;
    let at = FINGERPRINT_PREFIX.length;
    for (let i = start - 32; i < start; i++) {
      out[at++] = HEX_DIGITS[b[i]! >> 4]!;
      out[at++] = HEX_DIGITS[b[i]! & 15]!;
    }
    return latin1(out, 0, at);
  }

  /** Whether `fingerprint` is the one shelved just before the fields at `start` (no string made). */
  fingerprintIsBefore(start: number, fingerprint: string): boolean {
    if (fingerprint.length !== FINGERPRINT_PREFIX.length + 64 || !fingerprint.startsWith(FINGERPRINT_PREFIX)) return false;
    const b = this.bytes!;
    for (let i = 0, c = FINGERPRINT_PREFIX.length; i < 32; i++, c += 2) {
      const byte = b[start - 32 + i]!;
      if (fingerprint.charCodeAt(c) !== HEX_DIGITS[byte >> 4] || fingerprint.charCodeAt(c + 1) !== HEX_DIGITS[byte & 15]) return false;
    }
    return true;
  }

  /** Reserve room for `o`'s fields and write them, all as ASCII or each as it is; false if `ascii` and one was not. */
  private write(o: Observation, ascii: boolean): boolean {
    const size = ascii ? sizeOf : anySizeOf;
    let n = varintSize(o.evidence_refs.length) + varintSize(o.memory_ref_digests.length) + varintSize(o.reason_codes.length);
    n += size(o.application_receipt_id) + size(o.outcome_ref) + size(o.evaluator_ref) + size(o.evaluation_version);
    for (const s of o.evidence_refs) n += size(s);
    for (const s of o.memory_ref_digests) n += size(s);
    for (const s of o.reason_codes) n += size(s);
    let at = this.reserve(n);
    at = this.putString(at, o.application_receipt_id, ascii);
    at = this.putString(at, o.outcome_ref, ascii);
    at = this.putString(at, o.evaluator_ref, ascii);
    at = this.putString(at, o.evaluation_version, ascii);
    at = this.putList(at, o.evidence_refs, ascii);
    at = this.putList(at, o.memory_ref_digests, ascii);
    at = this.putList(at, o.reason_codes, ascii);
    return at >= 0;
  }

  /** The fields `put` shelved at `start`, as an observation with the rest from `kept` (see ShelvedObservation.full). */
  read(start: number, kept: ShelvedObservation): Observation {
    const context = this.context;
    cursor = start;
    const application_receipt_id = this.getString();
    const outcome_ref = this.getString();
    const evaluator_ref = this.getString();
    const evaluation_version = this.getString();
    const evidence_refs = this.getList();
    const memory_ref_digests = this.getList();
    const reason_codes = this.getList();
    return {
      schema_version: OBSERVATION_SCHEMA_VERSION,
      observation_id: kept.observation_id,
      scope: context.scope,
      application_receipt_id,
      memory_ref_digests,
      retrieval_snapshot_ref: context.retrieval_snapshot_ref,
      policy_snapshot_ref: context.policy_snapshot_ref,
      outcome_ref,
      utility_label: kept.utility_label,
      attribution_level: kept.attribution_level,
      evidence_basis: kept.evidence_basis,
      confidence: kept.confidence,
      reason_codes,
      evidence_refs,
      evaluator_ref,
      evaluation_version,
      created_at: kept.created_at,
      grants_new_action_authority: false,
      provider_write_performed: false,
      external_writes_performed: false,
      raw_content_captured: false,
    };
  }

  /** Room for `n` more bytes; returns where they go. Grows by half again, at least by `n`. */
  private reserve(n: number): number {
    const at = this.used;
    const old = this.bytes;
    if (old === null || old.length - at < n) {
      // Not Buffer.allocUnsafe: a pool slice would keep its whole 8 KB pool alive with the model.
      const next = Buffer.allocUnsafeSlow(old === null ? n : Math.max(old.length + (old.length >> 1), at + n));
      if (old !== null) old.copy(next, 0, 0, at);
      this.bytes = next;
    }
    this.used = at + n;
    return at;
  }

  private putVarint(at: number, n: number): number {
    const b = this.bytes!;
    while (n > 0x7f) {
      b[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    b[at++] = n;
    return at;
  }

  /** Write `s` at `at` (past -1: nothing); returns where it ends, or -1 when `ascii` and it is not ASCII. */
  private putString(at: number, s: string, ascii: boolean): number {
    if (at < 0) return at;
    const b = this.bytes!;
    if (!ascii && !isAscii(s)) {
      // UTF-16 code units as they are (a lone surrogate too: UTF-8 would replace it), flagged by the length's low bit.
      const from = this.putVarint(at, ((2 * s.length) << 1) | 1);
      return from + b.write(s, from, "utf16le");
    }
    const from = this.putVarint(at, s.length << 1);
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) return -1;
      b[from + i] = c;
    }
    return from + s.length;
  }

  private putList(at: number, list: readonly string[], ascii: boolean): number {
    if (at < 0) return at;
    at = this.putVarint(at, list.length);
    for (const s of list) at = this.putString(at, s, ascii);
    return at;
  }

  private getVarint(): number {
    const b = this.bytes!;
    let n = 0;
    let shift = 0;
    let c: number;
    do {
      c = b[cursor++]!;
      n |= (c & 0x7f) << shift;
      shift += 7;
    } while (c > 0x7f);
    return n;
  }

  private getString(): string {
    const head = this.getVarint();
    const length = head >>> 1;
    const s = this.bytes!.toString(head & 1 ? "utf16le" : "latin1", cursor, cursor + length);
    cursor += length;
    return s;
  }

  private getList(): string[] {
    const n = this.getVarint();
    const list: string[] = [];
    for (let i = 0; i < n; i++) list.push(this.getString());
    return list;
  }
}

/** Whether `fingerprint` is of the contract's form, which the shelf keeps as 32 bytes: `muof_` and 64 lowercase hex digits. */
export function isContractFingerprint(fingerprint: string): boolean {
  if (fingerprint.length !== FINGERPRINT_PREFIX.length + 64 || !fingerprint.startsWith(FINGERPRINT_PREFIX)) return false;
  for (let i = FINGERPRINT_PREFIX.length; i < fingerprint.length; i++) if (HEX_VALUE[fingerprint.charCodeAt(i)] === undefined) return false;
  return true;
}

/** Where `read` is (one reader at a time: reads are synchronous). */
let cursor = 0;

/** Each lowercase hex digit's value, by character code (the rest undefined). */
const HEX_VALUE: number[] = [];
for (let d = 0; d < 16; d++) HEX_VALUE[HEX_DIGITS[d]!] = d;
/** `muof_` and room for 64 hex digits: where fingerprintBefore writes. */
const FINGERPRINT_TEXT = Buffer.from(FINGERPRINT_PREFIX + "0".repeat(64), "latin1");

function varintSize(n: number): number {
  let size = 1;
  for (let rest = n >>> 7; rest > 0; rest >>>= 7) size++;
  return size;
}

/** An ASCII string's size on the shelf: its varint head and a byte a character. */
function sizeOf(s: string): number {
  return varintSize(s.length << 1) + s.length;
}

/** Any string's size on the shelf: as ASCII, or its varint head and two bytes a UTF-16 unit. */
function anySizeOf(s: string): number {
  return isAscii(s) ? sizeOf(s) : varintSize((2 * s.length) << 1) + 2 * s.length;
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** The last observation a getter rebuilt: observationJson reads seven shelved fields in a row. */
const last: { of: ShelvedObservation | null; rebuilt: Observation | null } = { of: null, rebuilt: null };

/**
 * A kept observation: an Observation to every reader, equal in every field to
 * the one it was made from. The scope and snapshot refs are its identity's
 * context's (it is made only for an observation of that context).
 */
export class ShelvedObservation implements Observation {
  readonly observation_id: string;
  /** Changed only by `redate`. */
  created_at: string;
  readonly utility_label: UtilityLabel;
  readonly attribution_level: AttributionLevel;
  readonly evidence_basis: EvidenceBasis;
  readonly confidence: number;
  /** Where its shelved fields start; negative (`-start - 1`) when its version's fingerprint is shelved before them. */
  private readonly mark: number;

  /**
   * `owned`: `o`'s strings are its own (ReadObservation.owned), not views into a record's text to be copied.
   * `fingerprint`: its version's, shelved with it when of the contract's form (`shelvedFingerprint` then reads it).
   */
  constructor(
    o: Observation,
    owned: boolean,
    private readonly shelf: ObservationShelf,
    fingerprint: string | null = null,
  ) {
    this.observation_id = owned ? o.observation_id : detached(o.observation_id);
    this.created_at = owned ? o.created_at : detached(o.created_at);
    // Compared by value everywhere; strings this short are copies already (flat-string.ts).
    this.utility_label = o.utility_label;
    this.attribution_level = o.attribution_level;
    this.evidence_basis = o.evidence_basis;
    this.confidence = o.confidence;
    this.mark = shelf.put(o, fingerprint);
  }

  /**
   * Take an earlier delivery's created_at: the observation of that delivery has this one's payload (the same
   * fingerprint: every field but created_at). `owned`: as the constructor's.
   */
  redate(createdAt: string, owned: boolean): void {
    this.created_at = owned ? createdAt : detached(createdAt);
    if (last.of === this) last.of = null; // its rebuilt object had the old created_at
  }

  /** Whether its version's fingerprint was shelved with it. */
  get holdsFingerprint(): boolean {
    return this.mark < 0;
  }

  /** Its version's fingerprint (only when `holdsFingerprint`). */
  shelvedFingerprint(): string {
    return this.shelf.fingerprintBefore(-this.mark - 1);
  }

  /** Whether `fingerprint` is its version's (only when `holdsFingerprint`). */
  hasFingerprint(fingerprint: string): boolean {
    return this.shelf.fingerprintIsBefore(-this.mark - 1, fingerprint);
  }

  /** The observation as a plain object, rebuilt from the shelf (for the rare reader of a shelved field). */
  full(): Observation {
    if (last.of !== this) {
      last.rebuilt = this.shelf.read(this.mark < 0 ? -this.mark - 1 : this.mark, this);
      last.of = this;
    }
    return last.rebuilt!;
  }

  get schema_version(): typeof OBSERVATION_SCHEMA_VERSION {
    return OBSERVATION_SCHEMA_VERSION;
  }
  get scope(): Observation["scope"] {
    return this.shelf.context.scope;
  }
  get retrieval_snapshot_ref(): string {
    return this.shelf.context.retrieval_snapshot_ref;
  }
  get policy_snapshot_ref(): string {
    return this.shelf.context.policy_snapshot_ref;
  }
  get application_receipt_id(): string {
    return this.full().application_receipt_id;
  }
  get memory_ref_digests(): string[] {
    return this.full().memory_ref_digests;
  }
  get outcome_ref(): string {
    return this.full().outcome_ref;
  }
  get reason_codes(): string[] {
    return this.full().reason_codes;
  }
  get evidence_refs(): string[] {
    return this.full().evidence_refs;
  }
  get evaluator_ref(): string {
    return this.full().evaluator_ref;
  }
  get evaluation_version(): string {
    return this.full().evaluation_version;
  }
  get grants_new_action_authority(): false {
    return false;
  }
  get provider_write_performed(): false {
    return false;
  }
  get external_writes_performed(): false {
    return false;
  }
  get raw_content_captured(): false {
    return false;
  }
}
