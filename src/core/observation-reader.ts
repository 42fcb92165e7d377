/**
 * The fast path of parse + validate + fingerprint for one observation, read
 * straight from JSON text, in two tiers:
 *
 * - canonical: the text producers write (sorted keys, no whitespace, sorted
 *   lists, confidence as Python's repr) is matched by one regex, and since it
 *   is its own canonical JSON, the id and the fingerprint hash slices of it
 *   instead of a re-serialised observation;
 * - plain: any key order and whitespace, unsorted lists, other number
 *   lexemes; read by hand, hashed from the normalized observation.
 *
 * Both take only values the validator would keep as they are (refs needing no
 * strip, no coercion, no escapes, every rule kept) and return null for
 * anything else, so the caller runs the exact slow path (`parsePyJson` +
 * `validateObservation`), which produces the reference's value or its error.
 * Whatever they take, they return what the slow path would;
 * test/unit/core-observation-reader.unit.spec.ts holds them together.
 */
import { floatJson } from "./canonical-json.js";
import { AsciiDigest } from "./digest.js";
import { parseContractTimestamp, type Scope } from "./fields.js";
import { commonUtcSeconds } from "./iso-timestamp.js";
import { JSON_NUMBER, lexNumber } from "./json-number.js";
import {
  OBSERVATION_SCHEMA_VERSION,
  normalizedFingerprint,
  normalizedObservationId,
  type AttributionLevel,
  type EvidenceBasis,
  type Observation,
  type UtilityLabel,
} from "./observation.js";
import { FINGERPRINT_PREFIX } from "./observation-model.js";
import { MAX_PROJECTION_OBSERVATIONS } from "./projection-limits.js";
import type { ListElementReader } from "./pyjson-parse.js";
import { pyStrip } from "./pystr.js";
import type { PyValue } from "./pyvalue.js";

/** A validated observation and its `muof_` fingerprint. */
export class ReadObservation {
  constructor(
    readonly observation: Observation,
    readonly fingerprint: string,
    /** Its strings are copies, none a view into the text it was read from (the bytes tier's): a kept copy takes its id and created_at without copying them. */
    readonly owned = false,
  ) {}
}

// The observation's keys in sorted order; the index is the field number below.
const KEYS = [
  "application_receipt_id",
  "attribution_level",
  "confidence",
  "created_at",
  "evaluation_version",
  "evaluator_ref",
  "evidence_basis",
  "evidence_refs",
  "external_writes_performed",
  "grants_new_action_authority",
  "memory_ref_digests",
  "observation_id",
  "outcome_ref",
  "policy_snapshot_ref",
  "provider_write_performed",
  "raw_content_captured",
  "reason_codes",
  "retrieval_snapshot_ref",
  "schema_version",
  "scope",
  "utility_label",
] as const;
const F = Object.fromEntries(KEYS.map((k, i) => [k, i])) as Record<(typeof KEYS)[number], number>;
const KEY_INDEX: ReadonlyMap<string, number> = new Map(KEYS.map((k, i) => [k, i]));
const ALL_FIELDS = (1 << KEYS.length) - 1;
const QUOTED_SCHEMA_VERSION = `"${OBSERVATION_SCHEMA_VERSION}"`;

const SCOPE_INDEX: ReadonlyMap<string, number> = new Map(["agent_id", "corpus_id", "project_id", "surface_id"].map((k, i) => [k, i]));

const UTILITY_LABELS: ReadonlySet<string> = new Set(["helpful", "harmful", "neutral", "unknown"]);
const ATTRIBUTION_LEVELS: ReadonlySet<string> = new Set(["item", "set", "none"]);
const STRONG_BASES: ReadonlySet<string> = new Set(["owner_correction", "controlled_replay", "deterministic_effect"]);
const EVIDENCE_BASES: ReadonlySet<string> = new Set([...STRONG_BASES, "evaluator_inference", "insufficient"]);
export const MAX_REASON_CODES = 12;
export const MAX_EVIDENCE_REFS = 16;
export const MAX_MEMORY_DIGESTS = 16;
export const MAX_REF_LENGTH = 200;

// Character classes of ASCII: OPAQUE_REF_RE's first and later characters, lowercase hex.
export const REF_FIRST = 1;
export const REF_REST = 2;
export const HEX = 4;
export const CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (/[A-Za-z0-9]/.test(ch)) CLASS[c]! |= REF_FIRST | REF_REST;
  if (/[_.:-]/.test(ch)) CLASS[c]! |= REF_REST;
  if (/[0-9a-f]/.test(ch)) CLASS[c]! |= HEX;
}

/** Thrown inside the plain tier to hand the text to the slow path; never escapes it. */
const BAIL = Symbol("bail");
function bail(): never {
  throw BAIL;
}

/** `c` is one of JSON's four whitespace characters. */
export function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Strictly ascending (then also unique), in code point order: refs are ASCII, so `<` is Python's order. */
export function ascending(xs: readonly string[]): boolean {
  for (let i = 1; i < xs.length; i++) if (!(xs[i - 1]! < xs[i]!)) return false;
  return true;
}

/** `sorted(xs)` with the duplicate check of `_refs`, for lists that were not written sorted. */
function sortedUnique(xs: string[]): string[] {
  const out = xs.slice().sort();
  for (let i = 1; i < out.length; i++) if (out[i] === out[i - 1]) bail();
  return out;
}

/**
 * An opaque ref, captured; the same ref quoted in a list, not captured; a list of them; a canonical memory digest.
 * A ref's length is checked after the match (refFits, refsOf): bounded as `{0,199}`, the regex took ~40% longer.
 */
const REF = String.raw`([A-Za-z0-9][A-Za-z0-9_.:-]*)`;
const QREF = String.raw`"[A-Za-z0-9][A-Za-z0-9_.:-]*"`;
const QREFS = String.raw`((?:${QREF}(?:,${QREF})*)?)`;
const QDIGEST = String.raw`"(?:[0-9a-f]{16}|sha256:[0-9a-f]{64})"`;

/**
 * Canonical observation JSON, one regex (native code, one pass). Outer groups
 * capture the runs of fields the id and the fingerprint hash, so those texts
 * are a few captured slices: A = receipt and level, X = everything after
 * created_at, and inside X: B = evaluation_version..evidence_refs,
 * C = memory_ref_digests, D = outcome_ref and policy_snapshot_ref,
 * E = retrieval_snapshot_ref..scope.
 */
const CANONICAL = new RegExp(
  String.raw`\{("application_receipt_id":"${REF}","attribution_level":"(item|set|none)")` + // 1 A, 2, 3
    String.raw`,"confidence":(${JSON_NUMBER})` + // 4
    String.raw`,"created_at":"([^"\\\x00-\x1f]*)",(` + // 5, 6 X
    String.raw`("evaluation_version":"${REF}","evaluator_ref":"${REF}"` + // 7 B, 8, 9
    String.raw`,"evidence_basis":"(owner_correction|controlled_replay|deterministic_effect|evaluator_inference|insufficient)"` + // 10
    String.raw`,"evidence_refs":\[${QREFS}\])` + // 11
    String.raw`,"external_writes_performed":false,"grants_new_action_authority":false` +
    String.raw`,("memory_ref_digests":\[(${QDIGEST}(?:,${QDIGEST})*)\])` + // 12 C, 13
    String.raw`,"observation_id":"${REF}"` + // 14
    String.raw`,("outcome_ref":"${REF}","policy_snapshot_ref":"${REF}")` + // 15 D, 16, 17
    String.raw`,"provider_write_performed":false,"raw_content_captured":false,"reason_codes":\[${QREFS}\]` + // 18
    String.raw`,("retrieval_snapshot_ref":"${REF}","schema_version":"memory_utility_observation_v0"` + // 19 E, 20
    String.raw`,"scope":\{"agent_id":"${REF}","corpus_id":"${REF}","project_id":"${REF}","surface_id":"${REF}"\})` + // 21-24
    String.raw`,"utility_label":"(helpful|harmful|neutral|unknown)")\}`, // 25
  "y",
);

/** The refs of a captured list body (`"a","b"`): refs hold no quote or comma. */
function refsOf(body: string, maximum: number): string[] | null {
  if (body.length === 0) return [];
  // Made at its size: pushing into [] would give each list room for 17 (refs hold no comma).
  let n = 1;
  for (let i = body.indexOf(","); i !== -1; i = body.indexOf(",", i + 1)) n++;
  if (n > maximum) return null;
  const refs = new Array<string>(n);
  for (let k = 0, from = 1; k < n; k++) {
    const close = body.indexOf('"', from);
    if (close - from > MAX_REF_LENGTH) return null;
    refs[k] = body.slice(from, close);
    from = close + 3; // past `","`
  }
  return ascending(refs) ? refs : null;
}

/** A captured ref is within the contract's length (the id has its own, exact, check). */
function refFits(ref: string): boolean {
  return ref.length <= MAX_REF_LENGTH;
}

/** Canonical text is ASCII: its pieces hash without being concatenated. */
const digest = new AsciiDigest();
const [LBRACE, COMMA, RBRACE] = [0x7b, 0x2c, 0x7d];

/** Position after the object the last successful canonical read matched. */
let canonicalEnd = 0;

/** The canonical tier: null when the text is not canonical or breaks a rule (the other tiers decide then). */
function readCanonical(text: string, start: number): ReadObservation | null {
  CANONICAL.lastIndex = start;
  const m = CANONICAL.exec(text);
  if (m === null) return null;
  const [, a, receipt, levelText, lexeme, createdAt, x, b, evaluationVersion, evaluatorRef, basisText, evidenceBody, c, digestBody, id, d, outcome, policy, reasonBody, e, retrieval, agent, corpus, project, surface, labelText] = m as unknown as string[];
  if (!refFits(receipt!) || !refFits(evaluationVersion!) || !refFits(evaluatorRef!) || !refFits(outcome!) || !refFits(policy!) || !refFits(retrieval!)) return null;
  if (!refFits(agent!) || !refFits(corpus!) || !refFits(project!) || !refFits(surface!)) return null;
  const label = labelConstant(labelText!);
  const level = levelConstant(levelText!);
  const basis = BASIS_BY_INITIAL[basisText![0]!]!;
  const confidence = Number(lexeme);
  // Canonical: the lexeme is Python's repr of the float it denotes (so it is a float lexeme).
  if (!(confidence >= 0 && confidence <= 1) || floatJson(confidence) !== lexeme) return null;
  const evidenceRefs = refsOf(evidenceBody!, MAX_EVIDENCE_REFS);
  const reasonCodes = refsOf(reasonBody!, MAX_REASON_CODES);
  const digests = refsOf(digestBody!, MAX_MEMORY_DIGESTS);
  if (evidenceRefs === null || reasonCodes === null || digests === null) return null;
  if (!validTimestamp(createdAt!) || !crossFieldRulesHold(label, level, basis, evidenceRefs)) return null;
  const idHex = digest.start().char(LBRACE).put(a!).char(COMMA).put(b!).char(COMMA).put(c!).char(COMMA).put(d!).char(COMMA).put(e!).char(RBRACE).hex();
  if (id!.length !== 68 || !id!.endsWith(idHex) || !id!.startsWith("muo_")) return null;
  const obs = makeObservation(
    id!, { agent_id: agent!, project_id: project!, corpus_id: corpus!, surface_id: surface! }, receipt!, digests, retrieval!, policy!, outcome!,
    label, level, basis, confidence, reasonCodes, evidenceRefs, evaluatorRef!, evaluationVersion!, createdAt!,
  );
  canonicalEnd = CANONICAL.lastIndex;
  return new ReadObservation(obs, FINGERPRINT_PREFIX + digest.start().char(LBRACE).put(a!).put(',"confidence":').put(lexeme!).char(COMMA).put(x!).char(RBRACE).hex());
}

/**
 * The constant for a captured enum value (the regex admitted only these): the
 * observation then holds the one shared string, and comparisons with literals
 * downstream are pointer checks.
 */
function labelConstant(v: string): UtilityLabel {
  return v.charCodeAt(0) === 0x68 ? (v.charCodeAt(1) === 0x65 ? "helpful" : "harmful") : v.charCodeAt(0) === 0x6e ? "neutral" : "unknown";
}

function levelConstant(v: string): AttributionLevel {
  return v.charCodeAt(0) === 0x69 ? "item" : v.charCodeAt(0) === 0x73 ? "set" : "none";
}

const BASIS_BY_INITIAL: Readonly<Record<string, EvidenceBasis>> = {
  o: "owner_correction",
  c: "controlled_replay",
  d: "deterministic_effect",
  e: "evaluator_inference",
  i: "insufficient",
};

/** `_timestamp` would return the text unchanged: nothing to strip, parses, has an offset. */
export function validTimestamp(text: string): boolean {
  if (pyStrip(text) !== text) return false;
  if (!Number.isNaN(commonUtcSeconds(text))) return true; // the common shape, with an offset
  const parsed = parseContractTimestamp(text);
  return parsed !== null && parsed.offsetMicros !== null;
}

/** `_utility_fields`' cross-field rules (a broken one is the slow path's error to report). */
export function crossFieldRulesHold(label: string, level: string, basis: string, evidenceRefs: readonly string[]): boolean {
  if (basis === "insufficient" && label !== "unknown") return false;
  if (evidenceRefs.length === 0 && (STRONG_BASES.has(basis) || label !== "unknown")) return false;
  return !(level === "none" && label !== "unknown");
}

/** A normalized observation, with the property order normalizeObservation gives it (one hidden class). */
export function makeObservation(
  id: string, scope: Scope, receipt: string, digests: string[], retrieval: string, policy: string, outcome: string,
  label: string, level: string, basis: string, confidence: number, reasonCodes: string[], evidenceRefs: string[],
  evaluatorRef: string, evaluationVersion: string, createdAt: string,
): Observation {
  return {
    schema_version: OBSERVATION_SCHEMA_VERSION,
    observation_id: id,
    scope,
    application_receipt_id: receipt,
    memory_ref_digests: digests,
    retrieval_snapshot_ref: retrieval,
    policy_snapshot_ref: policy,
    outcome_ref: outcome,
    utility_label: label as UtilityLabel,
    attribution_level: level as AttributionLevel,
    evidence_basis: basis as EvidenceBasis,
    confidence,
    reason_codes: reasonCodes,
    evidence_refs: evidenceRefs,
    evaluator_ref: evaluatorRef,
    evaluation_version: evaluationVersion,
    created_at: createdAt,
    grants_new_action_authority: false,
    provider_write_performed: false,
    external_writes_performed: false,
    raw_content_captured: false,
  };
}

/**
 * The plain tier: any key order, JSON whitespace, unsorted lists, an int or a
 * non-repr lexeme for confidence. Throws BAIL at the first thing it does not
 * take; `read` turns that into null.
 */
class PlainReader {
  private s = "";
  private p = 0;

  read(text: string, start: number): ReadObservation | null {
    this.s = text;
    this.p = start;
    try {
      return this.observation();
    } catch (err) {
      if (err === BAIL) return null;
      throw err;
    } finally {
      this.s = ""; // do not keep the caller's text alive
    }
  }

  /** Position after the last successful read. */
  get end(): number {
    return this.p;
  }

  private ws(): void {
    const s = this.s;
    let p = this.p;
    while (isWs(s.charCodeAt(p))) p++;
    this.p = p;
  }

  private expect(c: number): void {
    if (this.s.charCodeAt(this.p) !== c) bail();
    this.p++;
  }

  /** A string without escapes (a backslash or a control character bails). */
  private plainString(): string {
    const s = this.s;
    let p = this.p;
    if (s.charCodeAt(p) !== 0x22) bail();
    const start = ++p;
    for (;;) {
      const c = s.charCodeAt(p);
      if (c === 0x22) break;
      if (c === 0x5c || c < 0x20 || c !== c) bail(); // NaN: the text ended
      p++;
    }
    this.p = p + 1;
    return s.slice(start, p);
  }

  /** A string that is already an opaque ref: `_opaque_ref` would return it unchanged. */
  private ref(): string {
    const s = this.s;
    let p = this.p;
    if (s.charCodeAt(p) !== 0x22) bail();
    const start = ++p;
    let c = s.charCodeAt(p);
    if (!(c < 128 && CLASS[c]! & REF_FIRST)) bail();
    for (;;) {
      c = s.charCodeAt(++p);
      if (c === 0x22) break;
      if (!(c < 128 && CLASS[c]! & REF_REST)) bail();
    }
    if (p - start > MAX_REF_LENGTH) bail();
    this.p = p + 1;
    return s.slice(start, p);
  }

  /** A string that is already a canonical memory digest (16 hex, or sha256: and 64 hex). */
  private digest(): string {
    const value = this.ref();
    const n = value.length;
    let i: number;
    if (n === 16) i = 0;
    else if (n === 71 && value.startsWith("sha256:")) i = 7;
    else bail();
    for (; i < n; i++) if (!(CLASS[value.charCodeAt(i)]! & HEX)) bail();
    return value;
  }

  /** `_refs`: the sorted list (a duplicate bails). */
  private list(maximum: number, item: () => string): string[] {
    this.expect(0x5b);
    this.ws();
    const out: string[] = [];
    if (this.s.charCodeAt(this.p) === 0x5d) {
      this.p++;
      return out;
    }
    for (;;) {
      if (out.length === maximum) bail();
      out.push(item());
      this.ws();
      const c = this.s.charCodeAt(this.p++);
      if (c === 0x5d) break;
      if (c !== 0x2c) bail();
      this.ws();
    }
    return ascending(out) ? out : sortedUnique(out);
  }

  private enumValue(allowed: ReadonlySet<string>): string {
    const value = this.plainString();
    if (!allowed.has(value)) bail();
    return value;
  }

  private falseValue(): void {
    if (this.s.slice(this.p, this.p + 5) !== "false") bail();
    this.p += 5;
  }

  /** `float(confidence)` of a JSON number, as the slow parser reads the lexeme; finite and in [0, 1]. */
  private confidence(): number {
    const s = this.s;
    const start = this.p;
    const lexed = lexNumber(s, start);
    if (lexed < 0) bail();
    const i = lexed >> 1;
    const isFloat = (lexed & 1) === 1;
    this.p = i;
    const lexeme = s.slice(start, i);
    let value: number;
    if (isFloat) value = Number(lexeme);
    else if (i - start <= 15) value = Number(lexeme) || 0; // an int; "-0" is the int 0
    else bail(); // long ints: the slow path knows their limits
    if (!(value >= 0 && value <= 1)) bail();
    return value;
  }

  private timestamp(): string {
    const value = this.plainString();
    if (!validTimestamp(value)) bail();
    return value;
  }

  /** The field number of a key (then past its colon). */
  private key(index: ReadonlyMap<string, number>): number {
    const k = index.get(this.plainString());
    if (k === undefined) bail();
    this.ws();
    this.expect(0x3a);
    this.ws();
    return k;
  }

  private scope(): Scope {
    this.expect(0x7b);
    this.ws();
    const found: (string | undefined)[] = [undefined, undefined, undefined, undefined];
    for (;;) {
      const k = this.key(SCOPE_INDEX);
      if (found[k] !== undefined) bail(); // a duplicate key: the last value wins
      found[k] = this.ref();
      this.ws();
      const c = this.s.charCodeAt(this.p++);
      if (c === 0x7d) break;
      if (c !== 0x2c) bail();
      this.ws();
    }
    const [agent, corpus, project, surface] = found;
    if (agent === undefined || corpus === undefined || project === undefined || surface === undefined) bail();
    return { agent_id: agent, project_id: project, corpus_id: corpus, surface_id: surface };
  }

  private observation(): ReadObservation {
    const s = this.s;
    this.expect(0x7b);
    this.ws();
    let seen = 0;
    let observationId = "";
    let scope: Scope | undefined;
    let receipt = "";
    let digests: string[] = [];
    let retrieval = "";
    let policy = "";
    let outcome = "";
    let label = "";
    let level = "";
    let basis = "";
    let confidence = 0;
    let reasonCodes: string[] = [];
    let evidenceRefs: string[] = [];
    let evaluatorRef = "";
    let evaluationVersion = "";
    let createdAt = "";
    for (;;) {
      const k = this.key(KEY_INDEX);
      if (seen & (1 << k)) bail(); // a duplicate key: the last value wins
      seen |= 1 << k;
      switch (k) {
        case F.application_receipt_id: receipt = this.ref(); break;
        case F.attribution_level: level = this.enumValue(ATTRIBUTION_LEVELS); break;
        case F.confidence: confidence = this.confidence(); break;
        case F.created_at: createdAt = this.timestamp(); break;
        case F.evaluation_version: evaluationVersion = this.ref(); break;
        case F.evaluator_ref: evaluatorRef = this.ref(); break;
        case F.evidence_basis: basis = this.enumValue(EVIDENCE_BASES); break;
        case F.evidence_refs: evidenceRefs = this.list(MAX_EVIDENCE_REFS, () => this.ref()); break;
        case F.memory_ref_digests: digests = this.list(MAX_MEMORY_DIGESTS, () => this.digest()); break;
        case F.observation_id: observationId = this.ref(); break;
        case F.outcome_ref: outcome = this.ref(); break;
        case F.policy_snapshot_ref: policy = this.ref(); break;
        case F.reason_codes: reasonCodes = this.list(MAX_REASON_CODES, () => this.ref()); break;
        case F.retrieval_snapshot_ref: retrieval = this.ref(); break;
        case F.schema_version:
          if (s.slice(this.p, this.p + QUOTED_SCHEMA_VERSION.length) !== QUOTED_SCHEMA_VERSION) bail();
          this.p += QUOTED_SCHEMA_VERSION.length;
          break;
        case F.scope: scope = this.scope(); break;
        case F.utility_label: label = this.enumValue(UTILITY_LABELS); break;
        default: this.falseValue(); // the four write-boundary flags
      }
      this.ws();
      const c = s.charCodeAt(this.p++);
      if (c === 0x7d) break;
      if (c !== 0x2c) bail();
      this.ws();
    }
    if (seen !== ALL_FIELDS || scope === undefined || digests.length === 0) bail();
    if (!crossFieldRulesHold(label, level, basis, evidenceRefs)) bail();
    const obs = makeObservation(
      observationId, scope, receipt, digests, retrieval, policy, outcome,
      label, level, basis, confidence, reasonCodes, evidenceRefs, evaluatorRef, evaluationVersion, createdAt,
    );
    if (normalizedObservationId(obs) !== observationId) bail();
    return new ReadObservation(obs, normalizedFingerprint(obs));
  }
}

const plain = new PlainReader();
let lastEnd = 0;

/**
 * Read one observation object at `start` of `text`: the canonical tier, then
 * the plain tier. Returns the validated observation and its fingerprint, with
 * `readerEnd()` past the object, or null when the slow path must decide (and
 * report errors).
 */
export function readObservation(text: string, start: number): ReadObservation | null {
  const canonical = readCanonical(text, start);
  if (canonical !== null) {
    lastEnd = canonicalEnd;
    return canonical;
  }
  const read = plain.read(text, start);
  if (read !== null) lastEnd = plain.end;
  return read;
}

/** Position after the object the last successful readObservation read. */
export function readerEnd(): number {
  return lastEnd;
}

/** The canonical tier alone (for tests): canonical text only, else null; `end` is past the object. */
export function readCanonicalObservation(text: string, start: number): { read: ReadObservation; end: number } | null {
  const read = readCanonical(text, start);
  return read === null ? null : { read, end: canonicalEnd };
}

/** A whole document that is one observation (JSON whitespace around it allowed), or null. */
export function readObservationDocument(text: string): ReadObservation | null {
  let i = 0;
  while (isWs(text.charCodeAt(i))) i++;
  const read = readObservation(text, i);
  if (read === null) return null;
  let end = lastEnd;
  while (isWs(text.charCodeAt(end))) end++;
  return end === text.length ? read : null;
}

/**
 * The request's `observations` for parsePyJsonWith: observations the tiers take
 * become ReadObservation values, which only the reducer's batch validation accepts.
 */
export const observationListReader: ListElementReader = {
  key: "observations",
  limit: MAX_PROJECTION_OBSERVATIONS,
  read: (text, start) => readObservation(text, start) as unknown as PyValue | null,
  end: readerEnd,
};
