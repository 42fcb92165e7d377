/**
 * The canonical tier of observation-reader.ts, read from a record's bytes
 * instead of its decoded text: the fold's per-record path. Decoding a ~1.5 KB
 * value into a string, cutting its values as views of it and copying the ones
 * a model keeps cost ~2 KB of young garbage a record; here each value becomes
 * one string of its own (owned: a kept copy takes them without copying), or
 * the string an earlier record's equal value became (`repeated`), and the id
 * and the fingerprint hash ranges of the bytes.
 *
 * It takes exactly what the canonical regex takes, where the value is ASCII,
 * and returns what that tier returns; anything else (a byte above 0x7f, any
 * other form) is null, and the caller decodes the text and takes the text
 * tiers. test/unit/core-observation-reader.unit.spec.ts runs it on every text
 * it runs the text tiers on.
 */
import { floatJson } from "./canonical-json.js";
import { AsciiDigest } from "./digest.js";
import { lexNumber } from "./json-number.js";
import { RepeatedStrings, hashOf, holds, latin1 } from "./repeated-strings.js";
import type { AttributionLevel, EvidenceBasis, UtilityLabel } from "./observation.js";
import { FINGERPRINT_PREFIX } from "./observation-model.js";
import {
  CLASS,
  HEX,
  MAX_EVIDENCE_REFS,
  MAX_MEMORY_DIGESTS,
  MAX_REASON_CODES,
  MAX_REF_LENGTH,
  REF_FIRST,
  REF_REST,
  ReadObservation,
  ascending,
  crossFieldRulesHold,
  isWs,
  makeObservation,
  validTimestamp,
} from "./observation-reader.js";

/** A constant piece of ASCII: its bytes, and its whole 4-byte words as little-endian integers (compared a word at a time). */
interface Piece {
  bytes: Uint8Array;
  words: Int32Array;
}

function bytesOf(s: string): Piece {
  const bytes = Uint8Array.from(s, (c) => c.charCodeAt(0));
  const words = new Int32Array(bytes.length >> 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < words.length; i++) words[i] = view.getInt32(4 * i, true);
  return { bytes, words };
}

// The constant pieces of canonical observation JSON, in order; the values go between them.
const RECEIPT = bytesOf('{"application_receipt_id":"');
const LEVEL = bytesOf('","attribution_level":"');
const CONFIDENCE = bytesOf('","confidence":');
const CREATED_AT = bytesOf(',"created_at":"');
const EVALUATION_VERSION = bytesOf('","evaluation_version":"');
const EVALUATOR = bytesOf('","evaluator_ref":"');
const BASIS = bytesOf('","evidence_basis":"');
const EVIDENCE = bytesOf('","evidence_refs":[');
const FLAGS_DIGESTS = bytesOf('],"external_writes_performed":false,"grants_new_action_authority":false,"memory_ref_digests":[');
const ID = bytesOf('],"observation_id":"');
const OUTCOME = bytesOf('","outcome_ref":"');
const POLICY = bytesOf('","policy_snapshot_ref":"');
const FLAGS_REASONS = bytesOf('","provider_write_performed":false,"raw_content_captured":false,"reason_codes":[');
const RETRIEVAL = bytesOf('],"retrieval_snapshot_ref":"');
const SCHEMA_AGENT = bytesOf('","schema_version":"memory_utility_observation_v0","scope":{"agent_id":"');
const CORPUS = bytesOf('","corpus_id":"');
const PROJECT = bytesOf('","project_id":"');
const SURFACE = bytesOf('","surface_id":"');
const LABEL = bytesOf('"},"utility_label":"');
const END = bytesOf('"}');
/** `],"external_writes_performed":false,"grants_new_action_authority":false,` : where C starts in FLAGS_DIGESTS. */
const C_IN_FLAGS = FLAGS_DIGESTS.bytes.length - '"memory_ref_digests":['.length;
const SHA256 = bytesOf("sha256:");
const MUO = bytesOf("muo_");

const LEVELS: readonly [Piece, AttributionLevel][] = (["item", "set", "none"] as const).map((v) => [bytesOf(v), v]);
const LABELS: readonly [Piece, UtilityLabel][] = (["helpful", "harmful", "neutral", "unknown"] as const).map((v) => [bytesOf(v), v]);
const BASES: readonly [Piece, EvidenceBasis][] = (
  ["owner_correction", "controlled_replay", "deterministic_effect", "evaluator_inference", "insufficient"] as const
).map((v) => [bytesOf(v), v]);

const [QUOTE, COMMA, BACKSLASH, LBRACE, RBRACE, RBRACKET] = [0x22, 0x2c, 0x5c, 0x7b, 0x7d, 0x5d];
const digest = new AsciiDigest();
/** A list's items as [from, to) pairs, before they become strings (lists are at most 16 long). */
const RANGES = new Int32Array(2 * Math.max(MAX_EVIDENCE_REFS, MAX_REASON_CODES, MAX_MEMORY_DIGESTS));


/** One read; `p` moves past what matched, and every step answers whether it matched. */
const NO_BYTES = Buffer.alloc(0);
const NO_VIEW = new DataView(new ArrayBuffer(0));

/**
 * The strings of the values that repeat from record to record (the scope, the snapshot refs, the evaluator and
 * its version, the reason codes): a direct-mapped table by a hash of the bytes. A value whose bytes equal its
 * slot's string is that string, not a new one: ~9 strings a record were young garbage (bench/alloc-sites.ts). The
 * values unique to a record (its id, receipt, outcome, evidence refs, created_at) do not go through it, so they do
 * not evict the ones that repeat. Each entry is a copy, never a view, so the table keeps no record alive.
 */
const repeated = new RepeatedStrings(4096);

/**
 * The confidence lexemes read before, by a hash of the bytes, and the number each denotes: one already found
 * canonical (Python's repr of its float, in [0, 1]) is neither cut out nor checked again.
 */
const CONFIDENCE_SLOTS = 256;
const confidenceLexemes: string[] = new Array<string>(CONFIDENCE_SLOTS).fill("");
const confidenceValues = new Float64Array(CONFIDENCE_SLOTS);

class BytesCursor {
  b: Buffer = NO_BYTES;
  /** The same bytes, read a word at a time. */
  v: DataView<ArrayBufferLike> = NO_VIEW;
  p = 0;

  /** The constant `piece` at p. */
  piece(piece: Piece): boolean {
    const at = this.p;
    const bytes = piece.bytes;
    const n = bytes.length;
    if (at + n > this.b.length) return false;
    const v = this.v;
    const words = piece.words;
    let i = 0;
    for (let w = 0; w < words.length; w++, i += 4) if (v.getInt32(at + i, true) !== words[w]) return false;
    const b = this.b;
    for (; i < n; i++) if (b[at + i] !== bytes[i]) return false;
    this.p = at + n;
    return true;
  }

  /** One of `values` at p, then a quote (not consumed): the enum's constant, or null. */
  oneOf<T>(values: readonly [Piece, T][]): T | null {
    // By index: destructuring each pair went through the array iterator (~60 bytes a record).
    for (let i = 0; i < values.length; i++) {
      const pair = values[i]!;
      const at = this.p;
      if (this.piece(pair[0])) {
        if (this.b[this.p] === QUOTE) return pair[1];
        this.p = at;
      }
    }
    return null;
  }

  /** An opaque ref at p (`[A-Za-z0-9][A-Za-z0-9_.:-]*`) up to a quote: its end, or -1. */
  ref(): number {
    const b = this.b;
    let p = this.p;
    const c = b[p]!;
    if (!(c < 0x80 && (CLASS[c]! & REF_FIRST) !== 0)) return -1;
    for (p++; ; p++) {
      const d = b[p];
      if (d === undefined || d >= 0x80 || (CLASS[d]! & REF_REST) === 0) break;
    }
    if (b[p] !== QUOTE) return -1;
    this.p = p;
    return p;
  }

  /** A ref that fits the contract's length, as a string; null otherwise. `repeats`: a value records share (see `repeated`). */
  refString(repeats = false): string | null {
    const from = this.p;
    const end = this.ref();
    if (end < 0 || end - from > MAX_REF_LENGTH) return null;
    return repeats ? this.repeatedText(from, end) : this.text(from, end);
  }

  /** `text(from, to)`, or the string an earlier record's equal value became (see `repeated`). */
  repeatedText(from: number, to: number): string {
    return repeated.of(this.b, from, to);
  }

  /** The canonical confidence whose lexeme is [from, to), or -1 when it is not one. */
  confidence(from: number, to: number): number {
    if (to === from) return -1; // (an empty slot holds "")
    const slot = hashOf(this.b, from, to) & (CONFIDENCE_SLOTS - 1);
    if (holds(confidenceLexemes[slot]!, this.b, from, to)) return confidenceValues[slot]!;
    const lexeme = this.text(from, to);
    if (lexNumber(lexeme, 0) >> 1 !== lexeme.length) return -1;
    const confidence = Number(lexeme);
    // Canonical: the lexeme is Python's repr of the float it denotes.
    if (!(confidence >= 0 && confidence <= 1) || floatJson(confidence) !== lexeme) return -1;
    confidenceLexemes[slot] = lexeme;
    confidenceValues[slot] = confidence;
    return confidence;
  }

  /**
   * `"ref","ref"…` up to `]` (not consumed), or nothing: the refs, or null when malformed, too many, too long or
   * unsorted. `repeats`: refs records share (see `repeated`).
   */
  refList(maximum: number, repeats = false): string[] | null {
    if (this.b[this.p] === RBRACKET) return [];
    let n = 0;
    for (;;) {
      if (this.b[this.p++] !== QUOTE || n === maximum) return null;
      const from = this.p;
      const to = this.ref();
      if (to < 0 || to - from > MAX_REF_LENGTH) return null;
      RANGES[2 * n] = from;
      RANGES[2 * n + 1] = to;
      n++;
      this.p++; // the closing quote
      if (this.b[this.p] !== COMMA) break;
      this.p++;
    }
    return this.sortedTexts(n, repeats);
  }

  /** The n ranges in RANGES as strings, in a list of exactly n (a list grown by push keeps room for 17); null when not ascending. */
  private sortedTexts(n: number, repeats = false): string[] | null {
    const out = new Array<string>(n);
    for (let i = 0; i < n; i++) out[i] = repeats ? this.repeatedText(RANGES[2 * i]!, RANGES[2 * i + 1]!) : this.text(RANGES[2 * i]!, RANGES[2 * i + 1]!);
    return ascending(out) ? out : null;
  }

  /** One or more `"<16 hex>"` or `"sha256:<64 hex>"`, comma-separated, up to `]` (not consumed). */
  digestList(): string[] | null {
    let n = 0;
    for (;;) {
      if (this.b[this.p++] !== QUOTE || n === MAX_MEMORY_DIGESTS) return null;
      const from = this.p;
      const hexFrom = this.piece(SHA256) ? this.p : from;
      const hexTo = hexFrom + (hexFrom === from ? 16 : 64);
      for (let i = hexFrom; i < hexTo; i++) {
        const c = this.b[i];
        if (c === undefined || c >= 0x80 || (CLASS[c]! & HEX) === 0) return null;
      }
      if (this.b[hexTo] !== QUOTE) return null;
      RANGES[2 * n] = from;
      RANGES[2 * n + 1] = hexTo;
      n++;
      this.p = hexTo + 1;
      if (this.b[this.p] !== COMMA) break;
      this.p++;
    }
    return this.sortedTexts(n);
  }

  /** created_at's characters up to its quote (not consumed): ASCII without a backslash or a control character. */
  plainAscii(): number {
    const b = this.b;
    let p = this.p;
    for (;;) {
      const c = b[p];
      if (c === undefined || c === BACKSLASH || c < 0x20 || c >= 0x80) return -1;
      if (c === QUOTE) break;
      p++;
    }
    this.p = p;
    return p;
  }

  /** The number's characters up to the comma after it (not consumed). */
  numberRun(): number {
    const b = this.b;
    let p = this.p;
    for (;;) {
      const c = b[p];
      if (c === COMMA) break;
      // Digits, `.`, `e`, `E`, `+`, `-`: what JSON_NUMBER is made of; lexNumber checks their order.
      if (c === undefined || !((c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d)) return -1;
      p++;
    }
    this.p = p;
    return p;
  }

  text(from: number, to: number): string {
    return latin1(this.b, from, to);
  }
}

const cursor = new BytesCursor();

/** Canonical observation JSON at `start` of `bytes`; null when it is not (or breaks a rule). `cursor.p` ends past it. */
function readCanonicalAt(bytes: Buffer, start: number): ReadObservation | null {
  const k = cursor;
  k.b = bytes;
  k.v = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  k.p = start;
  if (!k.piece(RECEIPT)) return null;
  const receipt = k.refString();
  if (receipt === null || !k.piece(LEVEL)) return null;
  const level = k.oneOf(LEVELS);
  if (level === null) return null;
  const aEnd = k.p + 1; // A: `"application_receipt_id"…"item"`
  if (!k.piece(CONFIDENCE)) return null;
  const lexemeFrom = k.p;
  const lexemeTo = k.numberRun();
  if (lexemeTo < 0) return null;
  const confidence = k.confidence(lexemeFrom, lexemeTo);
  if (confidence < 0) return null;
  if (!k.piece(CREATED_AT)) return null;
  const createdFrom = k.p;
  const createdTo = k.plainAscii();
  if (createdTo < 0) return null;
  const xFrom = k.p + 2; // X and B: from `"evaluation_version"`
  if (!k.piece(EVALUATION_VERSION)) return null;
  const evaluationVersion = k.refString(true);
  if (evaluationVersion === null || !k.piece(EVALUATOR)) return null;
  const evaluatorRef = k.refString(true);
  if (evaluatorRef === null || !k.piece(BASIS)) return null;
  const basis = k.oneOf(BASES);
  if (basis === null || !k.piece(EVIDENCE)) return null;
  const evidenceRefs = k.refList(MAX_EVIDENCE_REFS);
  if (evidenceRefs === null) return null;
  const bEnd = k.p + 1;
  const cFrom = k.p + C_IN_FLAGS;
  if (!k.piece(FLAGS_DIGESTS)) return null;
  const digests = k.digestList();
  if (digests === null) return null;
  const cEnd = k.p + 1;
  if (!k.piece(ID)) return null;
  const idFrom = k.p;
  const idTo = k.ref();
  if (idTo < 0 || idTo - idFrom !== 68 || !k.piece(OUTCOME)) return null;
  const dFrom = idTo + 2;
  const outcome = k.refString();
  if (outcome === null || !k.piece(POLICY)) return null;
  const policy = k.refString(true);
  if (policy === null) return null;
  const dEnd = k.p + 1;
  if (!k.piece(FLAGS_REASONS)) return null;
  const reasonCodes = k.refList(MAX_REASON_CODES, true);
  if (reasonCodes === null) return null;
  const eFrom = k.p + 2;
  if (!k.piece(RETRIEVAL)) return null;
  const retrieval = k.refString(true);
  if (retrieval === null || !k.piece(SCHEMA_AGENT)) return null;
  const agent = k.refString(true);
  if (agent === null || !k.piece(CORPUS)) return null;
  const corpus = k.refString(true);
  if (corpus === null || !k.piece(PROJECT)) return null;
  const project = k.refString(true);
  if (project === null || !k.piece(SURFACE)) return null;
  const surface = k.refString(true);
  if (surface === null) return null;
  const eEnd = k.p + 2;
  if (!k.piece(LABEL)) return null;
  const label = k.oneOf(LABELS);
  if (label === null) return null;
  const xEnd = k.p + 1;
  if (!k.piece(END)) return null;

  const createdAt = k.text(createdFrom, createdTo);
  if (!validTimestamp(createdAt) || !crossFieldRulesHold(label, level, basis, evidenceRefs)) return null;
  const objectFrom = start;
  digest.start().char(LBRACE).bytes(bytes, objectFrom + 1, aEnd).char(COMMA).bytes(bytes, xFrom, bEnd).char(COMMA)
    .bytes(bytes, cFrom, cEnd).char(COMMA).bytes(bytes, dFrom, dEnd).char(COMMA).bytes(bytes, eFrom, eEnd).char(RBRACE);
  if (!isId(bytes, idFrom)) return null;
  const obs = makeObservation(
    k.text(idFrom, idTo), { agent_id: agent, project_id: project, corpus_id: corpus, surface_id: surface }, receipt, digests, retrieval, policy, outcome,
    label, level, basis, confidence, reasonCodes, evidenceRefs, evaluatorRef, evaluationVersion, createdAt,
  );
  // The fingerprint's text is the object without its created_at field: `{A,"confidence":L,` and `X}`.
  const fingerprint = digest.start().bytes(bytes, objectFrom, lexemeTo + 1).bytes(bytes, xFrom, xEnd).char(RBRACE).prefixedHex(FINGERPRINT_PREFIX);
  return new ReadObservation(obs, fingerprint, true);
}

/** The id's 68 bytes are `muo_` and the hex of the digest just taken (of its content). */
function isId(bytes: Buffer, from: number): boolean {
  const muo = MUO.bytes;
  for (let i = 0; i < muo.length; i++) if (bytes[from + i] !== muo[i]) return false;
  return digest.hexIsAt(bytes, from + muo.length);
}

/**
 * A whole value that is one canonical observation (JSON whitespace around it
 * allowed), read from its bytes; null for anything else, which the text tiers
 * then read (readObservationDocument) or the slow path decides.
 */
export function readObservationBytes(bytes: Buffer): ReadObservation | null {
  let i = 0;
  while (isWs(bytes[i]!)) i++;
  if (bytes[i] !== LBRACE) return null;
  const read = readCanonicalAt(bytes, i);
  let end = cursor.p;
  cursor.b = NO_BYTES; // do not keep the record alive
  cursor.v = NO_VIEW;
  if (read === null) return null;
  while (isWs(bytes[end]!)) end++;
  return end === bytes.length ? read : null;
}
