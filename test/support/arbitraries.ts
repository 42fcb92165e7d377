// fast-check arbitraries for differential tests against the loopx reference.
//
// Reducer inputs are produced AS JSON TEXT: number lexemes (`1` vs `1.0` vs
// `1e0`, `-0.0`, `1e400`, `NaN`), string escapes, duplicate keys and key order
// are part of what is tested, so values are built as a small tree (`Raw` for an
// explicit lexeme, `Obj` for ordered/duplicate keys) and serialized here.
//
// Streams are built by a seeded PRNG from a few shrinkable knobs (tier, size,
// fault kind, seed): fast-check shrinks the knobs toward smaller/cleaner
// streams, while the dependent structure (ids computed from normalized fields,
// retries and conflicts of earlier deliveries) stays consistent.
import fc from "fast-check";
import { comparePy, observationId, type ObservationScope } from "./observation-id.js";

// ---------------------------------------------------------------------------
// JSON tree + serializer
// ---------------------------------------------------------------------------

/** Raw JSON text inserted verbatim (a number lexeme, NaN, Infinity, an escaped string, ...). */
export class Raw {
  constructor(readonly text: string) {}
}

/** An object with explicit key order; keys may repeat (Python keeps the last one). */
export class Obj {
  constructor(readonly entries: Array<readonly [string, Tree]>) {}
  set(key: string, value: Tree): this {
    const i = this.entries.findIndex(([k]) => k === key);
    if (i >= 0) this.entries[i] = [key, value];
    else this.entries.push([key, value]);
    return this;
  }
  get(key: string): Tree | undefined {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i];
      if (e && e[0] === key) return e[1];
    }
    return undefined;
  }
  delete(key: string): this {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      if (this.entries[i]?.[0] === key) this.entries.splice(i, 1);
    }
    return this;
  }
  keys(): string[] {
    return this.entries.map(([k]) => k);
  }
}

export type Tree =
  | null
  | boolean
  | number
  | string
  | Raw
  | Obj
  | readonly Tree[]
  | { readonly [key: string]: Tree };

export interface SerializeStyle {
  /** Pretty-print with this indent (Python json accepts any of " \t\n\r" between tokens). */
  indent?: string;
  /** Escape every non-ASCII UTF-16 unit as \uXXXX (like Python's ensure_ascii=True). */
  asciiOnly?: boolean;
  /** Add a space after ',' and ':' (Python json.dumps default separators). */
  spaced?: boolean;
}

function encodeString(s: string, asciiOnly: boolean): string {
  const json = JSON.stringify(s); // escapes ", \, U+0000..U+001F and lone surrogates
  if (!asciiOnly) return json;
  let out = "";
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    out += c < 0x80 ? json[i] : `\\u${c.toString(16).padStart(4, "0")}`;
  }
  return out;
}

export function serializeTree(tree: Tree, style: SerializeStyle = {}): string {
  const asciiOnly = style.asciiOnly ?? false;
  const indent = style.indent;
  const comma = style.spaced && indent === undefined ? ", " : ",";
  const colon = style.spaced || indent !== undefined ? ": " : ":";
  const parts: string[] = [];
  const emit = (t: Tree, depth: number): void => {
    if (t === null) parts.push("null");
    else if (t === true) parts.push("true");
    else if (t === false) parts.push("false");
    else if (typeof t === "number") {
      if (!Number.isFinite(t)) throw new Error("serializeTree: use Raw for non-finite numbers");
      parts.push(Object.is(t, -0) ? "-0" : JSON.stringify(t));
    } else if (typeof t === "string") parts.push(encodeString(t, asciiOnly));
    else if (t instanceof Raw) parts.push(t.text);
    else {
      const entries: Array<readonly [string | null, Tree]> = Array.isArray(t)
        ? (t as readonly Tree[]).map((v) => [null, v] as const)
        : t instanceof Obj
          ? t.entries
          : Object.entries(t as { readonly [key: string]: Tree });
      const open = Array.isArray(t) ? "[" : "{";
      const close = Array.isArray(t) ? "]" : "}";
      parts.push(open);
      entries.forEach(([k, v], i) => {
        if (i > 0) parts.push(comma);
        if (indent !== undefined) parts.push("\n" + indent.repeat(depth + 1));
        if (k !== null) parts.push(encodeString(k, asciiOnly), colon);
        emit(v, depth + 1);
      });
      if (indent !== undefined && entries.length > 0) parts.push("\n" + indent.repeat(depth));
      parts.push(close);
    }
  };
  emit(tree, 0);
  return parts.join("");
}

// ---------------------------------------------------------------------------
// Seeded PRNG (sfc32)
// ---------------------------------------------------------------------------

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 12; i++) this.u32();
  }
  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }
  float(): number {
    return this.u32() / 4294967296;
  }
  /** Uniform double in [0, 1) with 53 random bits. */
  double53(): number {
    return ((this.u32() >>> 5) * 67108864 + (this.u32() >>> 6)) / 9007199254740992;
  }
  /** Integer in [lo, hi] inclusive. */
  int(lo: number, hi: number): number {
    if (hi <= lo) return lo;
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.float() < p;
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from empty list");
    return items[Math.floor(this.float() * items.length)] as T;
  }
  weighted<T>(items: ReadonlyArray<readonly [T, number]>): T {
    let total = 0;
    for (const [, w] of items) total += w;
    let x = this.float() * total;
    for (const [v, w] of items) {
      x -= w;
      if (x < 0) return v;
    }
    const last = items[items.length - 1];
    if (!last) throw new Error("weighted pick from empty list");
    return last[0];
  }
  shuffle<T>(items: readonly T[]): T[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.float() * (i + 1));
      const tmp = out[i] as T;
      out[i] = out[j] as T;
      out[j] = tmp;
    }
    return out;
  }
  hex(n: number): string {
    let s = "";
    while (s.length < n) s += this.u32().toString(16).padStart(8, "0");
    return s.slice(0, n);
  }
  /** k distinct items (k clamped to the list length). */
  sample<T>(items: readonly T[], k: number): T[] {
    return this.shuffle(items).slice(0, Math.max(0, Math.min(k, items.length)));
  }
}

// ---------------------------------------------------------------------------
// Vocabulary
// ---------------------------------------------------------------------------

export const UTILITY_LABELS = ["helpful", "harmful", "neutral", "unknown"] as const;
export const ATTRIBUTION_LEVELS = ["item", "set", "none"] as const;
export const EVIDENCE_BASES = [
  "insufficient",
  "evaluator_inference",
  "deterministic_effect",
  "controlled_replay",
  "owner_correction",
] as const; // weakest first (reference rank order)
export type UtilityLabel = (typeof UTILITY_LABELS)[number];
export type AttributionLevel = (typeof ATTRIBUTION_LEVELS)[number];
export type EvidenceBasis = (typeof EVIDENCE_BASES)[number];
const DIRECTIONAL: readonly UtilityLabel[] = ["helpful", "harmful", "neutral"];
const STRONG: ReadonlySet<string> = new Set(["owner_correction", "controlled_replay", "deterministic_effect"]);
const SCHEMA = "memory_utility_observation_v0";
const FLAGS = [
  "grants_new_action_authority",
  "provider_write_performed",
  "external_writes_performed",
  "raw_content_captured",
] as const;
const OBSERVATION_KEYS = [
  "schema_version",
  "observation_id",
  "scope",
  "application_receipt_id",
  "memory_ref_digests",
  "retrieval_snapshot_ref",
  "policy_snapshot_ref",
  "outcome_ref",
  "utility_label",
  "attribution_level",
  "evidence_basis",
  "confidence",
  "reason_codes",
  "evidence_refs",
  "evaluator_ref",
  "evaluation_version",
  "created_at",
  ...FLAGS,
] as const;

/** Is this combination accepted by the reference's structural validator (given evidence refs)? */
export function combinationAllowed(
  label: UtilityLabel,
  basis: EvidenceBasis,
  level: AttributionLevel,
  hasEvidenceRefs: boolean,
): boolean {
  if (basis === "insufficient" && label !== "unknown") return false;
  if (STRONG.has(basis) && !hasEvidenceRefs) return false;
  if (level === "none" && label !== "unknown") return false;
  if (label !== "unknown" && !hasEvidenceRefs) return false;
  return true;
}

/** Python str.isspace() characters used to pad refs (all stripped by the reference). */
const PAD_CHARS = [" ", " ", " ", "\t", "\n", "\r", "\u000b", "\u000c", "\u001c", "\u001f", "\u0085", "\u00a0", "\u2009", "\u2028", "\u2029", "\u3000"];

/** Refs whose normalized value Python's str() also produces from a non-string JSON value. */
const COERCIBLE: Record<string, readonly string[]> = {
  True: ["true"],
  "7": ["7"],
  "42": ["42"],
  "2026": ["2026"],
  "1.5": ["1.5", "15e-1", "1.50"],
  "100000.0": ["1e5", "100000.0", "1E+5"],
  "0.001": ["0.001", "1e-3"],
  "1234567890123456": ["1234567890123456"],
  "9007199254740993": ["9007199254740993"], // 2**53 + 1: not a JS double
  "1000000000000001": ["1000000000000001"],
};

const SCOPES: readonly ObservationScope[] = [
  { agent_id: "agent:stage2", project_id: "project:loopx", corpus_id: "reward-memory-corpus", surface_id: "loopx.issue_fix" },
  { agent_id: "agent:a1", project_id: "p", corpus_id: "c", surface_id: "s" },
  { agent_id: "A0_b.c:d-e", project_id: "project:mufold", corpus_id: "corpus:main", surface_id: "surface:chat" },
  { agent_id: "agent:" + "x".repeat(194), project_id: "9", corpus_id: "corpus.2026", surface_id: "surface_1" },
];
const OTHER_SCOPE: ObservationScope = { agent_id: "agent:other", project_id: "project:loopx", corpus_id: "reward-memory-corpus", surface_id: "loopx.issue_fix" };
const RETRIEVALS = ["retrieval:stage2", "retrieval:r1", "r", "snapshot:2026-08-15.1"];
const POLICIES = ["policy:stage2", "policy:p1", "p", "policy:v2.0"];
const OUTCOMES = ["effect:o1", "outcome:verified", "o2", "outcome:ci-pass", "outcome:tests.green", "7"];
const EVALUATORS = ["evaluator:e1", "evaluator:model-x", "e2", "evaluator:human.owner", "42"];
const FIXED_EVAL_VERSIONS = ["evaluation:v1", "evaluation:v2", "True", "1.5", "100000.0", "2026", "0.001"];
const REASON_CODES = Array.from({ length: 20 }, (_, i) => `rc_${i}`).concat([
  "negative_outcome",
  "owner:said-so",
  "tests.passed",
  "Z9",
  "7",
]);
const EVIDENCE_REFS = Array.from({ length: 40 }, (_, i) => `ev:${i}`).concat(["artifact:ci.log", "evidence:owner-note", "E", "1.5"]);

// ---------------------------------------------------------------------------
// Confidence lexemes
// ---------------------------------------------------------------------------

const CONFIDENCE_VALUES: readonly number[] = [
  0, 1, 0.5, 0.1, 0.2, 0.3, 0.30000000000000004, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 1e-5, 0.999999, 0.9999995,
  0.0000005, 0.0000015, 0.1234565, 0.0000004999999999, 5e-324, 2.2250738585072014e-308, 0.9999999999999999,
  0.25, 0.125, 1 / 3, 2 / 3, 0.1 + 1e-17, 0.05, 0.35, 0.45,
];

/** Python repr() of a finite double (shortest round-trip, Python's exponent rules). */
export function pyFloatRepr(x: number): string {
  if (Object.is(x, -0)) return "-0.0";
  if (x === 0) return "0.0";
  let s = x.toExponential(); // shortest digits: d.ddde±X
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (!m) return String(x);
  const sign = m[1] ?? "";
  const digits = (m[2] ?? "") + (m[3] ?? "");
  const exp = Number(m[4]);
  if (exp >= -4 && exp < 16) {
    // fixed notation
    if (exp >= 0) {
      const intPart = digits.length > exp + 1 ? digits.slice(0, exp + 1) : digits.padEnd(exp + 1, "0");
      const frac = digits.length > exp + 1 ? digits.slice(exp + 1) : "0";
      s = `${sign}${intPart}.${frac}`;
    } else {
      s = `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
    }
    return s;
  }
  const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const e = Math.abs(exp);
  return `${sign}${mant}e${exp < 0 ? "-" : "+"}${e < 10 ? "0" : ""}${e}`;
}

/** Equivalent JSON lexemes for a confidence value (ints allowed: Python float() makes them equal). */
function confidenceLexemes(x: number): string[] {
  const out = new Set<string>();
  const add = (s: string): void => {
    if (Object.is(Number(s), x) && /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(s)) out.add(s);
  };
  add(pyFloatRepr(x));
  add(String(x));
  add(x.toExponential());
  add(x.toExponential().toUpperCase());
  add(x.toPrecision(17));
  if (x !== 0 && Math.abs(x) >= 1e-6) add(x.toFixed(20));
  if (Number.isInteger(x)) {
    add(`${x}`);
    add(`${x}.0`);
    add(`${x}.000`);
    add(`${x}e0`);
    add(`${x}E+0`);
    add(`${x}0e-1`);
  }
  if (Object.is(x, -0)) {
    // NOT "-0": json.loads("-0") is the int 0, so float() gives +0.0.
    out.add("-0.0");
    out.add("-0e0");
  }
  if (x === 0.1) out.add("0.10000000000000001");
  if (x === 0.5) out.add("5e-1").add("50E-2");
  if (x === 1e-5) out.add("1e-05").add("0.00001");
  if (Object.is(x, 0)) out.add("1e-400").add("0e10").add("-0"); // "-0" is Python int 0 -> 0.0
  if (Object.is(x, -0)) out.add("-1e-400").add("-0E+3");
  return [...out];
}

const INVALID_CONFIDENCE = ["1e400", "-1e400", "NaN", "Infinity", "-Infinity", "true", "false", "null", '"0.5"', "-0.1", "1.0000000000000002", "2", "-1", "1" + "0".repeat(400), "[0.5]", "{}"];

// ---------------------------------------------------------------------------
// Timestamps (CPython 3.11 datetime.fromisoformat after Z -> +00:00)
// ---------------------------------------------------------------------------

/** An instant: whole seconds since 1970-01-01T00:00:00Z plus microseconds. */
export interface Instant {
  sec: number;
  micro: number;
}

function civilFromDays(z0: number): [number, number, number] {
  const z = z0 + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const y = yoe + era * 400;
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [m <= 2 ? y + 1 : y, m, d];
}

function daysFromCivil(y0: number, m: number, d: number): number {
  const y = m <= 2 ? y0 - 1 : y0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function isoWeek(days: number): [number, number, number] {
  const weekday = ((((days + 3) % 7) + 7) % 7) + 1; // 1970-01-01 was a Thursday (4)
  const thursday = days + (4 - weekday);
  const [ty] = civilFromDays(thursday);
  const week = Math.floor((thursday - daysFromCivil(ty, 1, 1)) / 7) + 1;
  return [ty, week, weekday];
}

const p2 = (n: number): string => String(n).padStart(2, "0");
const p4 = (n: number): string => String(n).padStart(4, "0");

interface OffsetSpelling {
  text: string;
  /** offset in microseconds as CPython 3.11 interprets it */
  us: number;
  weight: number;
}

const OFFSETS: readonly OffsetSpelling[] = [
  { text: "Z", us: 0, weight: 20 },
  { text: "+00:00", us: 0, weight: 8 },
  { text: "-00:00", us: 0, weight: 1 },
  { text: "+0000", us: 0, weight: 1 },
  { text: "+00", us: 0, weight: 1 },
  { text: "+01:00", us: 3600e6, weight: 5 },
  { text: "+0100", us: 3600e6, weight: 1 },
  { text: "+01", us: 3600e6, weight: 1 },
  { text: "+05:30", us: 19800e6, weight: 3 },
  { text: "+0530", us: 19800e6, weight: 1 },
  { text: "-08:00", us: -28800e6, weight: 3 },
  { text: "-0800", us: -28800e6, weight: 1 },
  { text: "+02:00", us: 7200e6, weight: 1 },
  { text: "-03:30", us: -12600e6, weight: 1 },
  { text: "+14:00", us: 50400e6, weight: 1 },
  { text: "-12:00", us: -43200e6, weight: 1 },
  { text: "+23:59", us: 86340e6, weight: 0.5 },
  { text: "-23:59:59", us: -86399e6, weight: 0.5 },
  { text: "+01:00:30", us: 3630e6, weight: 2 },
  { text: "+010030", us: 3630e6, weight: 0.5 },
  { text: "-03:30:15", us: -12615e6, weight: 1 },
  { text: "+01:00:30.5", us: 3630.5e6, weight: 0.5 },
  { text: "-00:00:01.25", us: -1.25e6, weight: 0.3 },
  // CPython 3.11 quirk: an offset whose H:M:S are all zero is UTC even with a fraction.
  { text: "+00:00:00.5", us: 0, weight: 0.3 },
];

export interface TimestampStyle {
  /** 0..1: how exotic the spellings may get (0 = mostly "YYYY-MM-DDTHH:MM:SSZ"). */
  exotic: number;
}

/** Spell an instant as a (valid, aware) CPython 3.11 fromisoformat string. */
const MIN_SEC = -62135596800; // 0001-01-01T00:00:00Z
const MAX_SEC = 253402300799; // 9999-12-31T23:59:59Z

export function spellInstant(rng: Rng, instant: Instant, style: TimestampStyle = { exotic: 0.5 }): string {
  const inst = instant.sec < MIN_SEC ? { sec: MIN_SEC, micro: 0 } : instant.sec > MAX_SEC ? { sec: MAX_SEC, micro: instant.micro } : instant;
  const ex = style.exotic;
  let off = OFFSETS[0] as OffsetSpelling;
  if (rng.chance(ex)) off = rng.weighted(OFFSETS.map((o) => [o, o.weight] as const));
  const localUs = inst.sec * 1e6 + inst.micro + off.us; // exact for |value| < 2**53 (years ~1685..2255)
  let days: number;
  let usOfDay: number;
  if (Math.abs(localUs) < 9e15) {
    days = Math.floor(localUs / 86400e6);
    usOfDay = localUs - days * 86400e6;
  } else {
    const big = BigInt(inst.sec) * 1000000n + BigInt(inst.micro) + BigInt(Math.round(off.us));
    const d = big / 86400000000n - (big % 86400000000n < 0n ? 1n : 0n);
    days = Number(d);
    usOfDay = Number(big - d * 86400000000n);
  }
  const [y, mo, d] = civilFromDays(days);
  if (y < 1 || y > 9999) return spellInstant(rng, inst, { exotic: 0 });
  const hh = Math.floor(usOfDay / 3600e6);
  const mm = Math.floor((usOfDay % 3600e6) / 60e6);
  const ss = Math.floor((usOfDay % 60e6) / 1e6);
  const micro = usOfDay % 1e6;

  // date part
  let date: string;
  const dateForm = rng.chance(ex) ? rng.weighted([["ext", 6], ["basic", 2], ["week", 1], ["weekbasic", 0.6]] as const) : "ext";
  if (dateForm === "basic") date = `${p4(y)}${p2(mo)}${p2(d)}`;
  else if (dateForm === "week" || dateForm === "weekbasic") {
    const [wy, wk, wd] = isoWeek(days);
    if (wy < 1 || wy > 9999) date = `${p4(y)}-${p2(mo)}-${p2(d)}`;
    else if (dateForm === "week") date = wd === 1 && rng.chance(0.3) ? `${p4(wy)}-W${p2(wk)}` : `${p4(wy)}-W${p2(wk)}-${wd}`;
    else date = `${p4(wy)}W${p2(wk)}${wd}`;
  } else date = `${p4(y)}-${p2(mo)}-${p2(d)}`;

  const sep = rng.chance(ex * 0.5) ? rng.weighted([[" ", 4], ["t", 1], ["_", 0.5], ["\u00a0", 0.3], ["\u{1F600}", 0.2]] as const) : "T";

  // time part
  const basicTime = rng.chance(ex * 0.3);
  const c = basicTime ? "" : ":";
  let time: string;
  const canDropSeconds = ss === 0 && micro === 0;
  const canDropMinutes = canDropSeconds && mm === 0;
  const shortForm = rng.chance(ex * 0.3);
  if (shortForm && canDropMinutes && rng.chance(0.5)) time = p2(hh);
  else if (shortForm && canDropSeconds) time = `${p2(hh)}${c}${p2(mm)}`;
  else {
    time = `${p2(hh)}${c}${p2(mm)}${c}${p2(ss)}`;
    // fraction: 1..9 digits, exact for the first 6 (CPython truncates beyond 6)
    let needed = 6;
    while (needed > 0 && micro % 10 ** (7 - needed) === 0) needed--;
    const wantFraction = micro !== 0 || rng.chance(ex * 0.2);
    if (wantFraction) {
      let digits = rng.chance(ex) ? rng.int(Math.max(1, needed), 9) : Math.max(needed, rng.pick([3, 6]));
      digits = Math.max(digits, needed, 1);
      let frac = String(micro).padStart(6, "0");
      frac = digits <= 6 ? frac.slice(0, digits) : frac + Array.from({ length: digits - 6 }, () => String(rng.int(0, 9))).join("");
      const dot = rng.chance(ex * 0.2) ? "," : ".";
      time += dot + frac;
    }
  }
  return `${date}${sep}${time}${off.text}`;
}

const INVALID_TIMESTAMPS = [
  "2026-08-15T00:00:00", // naive
  "2026-08-15", // naive date
  "2026-08-15Z", // becomes "2026-08-15+00:00": parsed as NAIVE 2026-08-15T00:00 ('+' taken as the separator)
  "20260815", // naive
  "2026-08-15T00:00:00.123456", // naive
  "2026-13-01T00:00:00Z",
  "2026-02-29T00:00:00Z",
  "2026-08-32T00:00:00Z",
  "2026-08-15T24:00:00Z",
  "2026-08-15T23:59:60Z",
  "2026-08-15T00:00:00z",
  "2026-227T00:00Z", // ordinal dates are not accepted by 3.11
  "2026-W33-8T00:00Z",
  "2026-W00-1T00:00Z",
  "2026-w33-6T00:00Z",
  "2026-08-15T00:00:00+24:00",
  "2026-08-15T00:00:00+1:00",
  "2026-08-15T00:00:00+01:0",
  "2026-08-15T00:00:00ZZ",
  "2026-08-15T00:00:00+00:00Z",
  "2026-8-15T00:00:00Z",
  "2026-08-15T1:00:00Z",
  "２０２６-08-15T00:00:00Z",
  "2026-08-15T00:00:00.5,Z",
  "2026-08-15T00:00:00\u2028Z",
  "now",
  "",
];

// ---------------------------------------------------------------------------
// Observation specs
// ---------------------------------------------------------------------------

/** Semantic (normalized) content of one observation, without created_at. */
export interface ObservationSpec {
  scope: ObservationScope;
  application_receipt_id: string;
  memory_ref_digests: string[]; // sorted
  retrieval_snapshot_ref: string;
  policy_snapshot_ref: string;
  outcome_ref: string;
  utility_label: UtilityLabel;
  attribution_level: AttributionLevel;
  evidence_basis: EvidenceBasis;
  confidence: number;
  reason_codes: string[]; // sorted, unique
  evidence_refs: string[]; // sorted, unique
  evaluator_ref: string;
  evaluation_version: string;
  observation_id: string;
}

export interface EmitStyle {
  /** probability to pad a ref with Python whitespace */
  pad: number;
  /** probability to shuffle a list / the key order */
  shuffle: number;
  /** probability to use a non-canonical confidence lexeme */
  lexeme: number;
  /** probability to emit a coercible ref as a JSON number/bool */
  coerce: number;
  /** probability of a (harmless) duplicated key whose last value is the valid one */
  dupKey: number;
  timestamps: TimestampStyle;
}

function withId(spec: Omit<ObservationSpec, "observation_id">): ObservationSpec {
  const id = observationId({ schema_version: SCHEMA, ...spec });
  return { ...spec, observation_id: id };
}

const sortPy = (xs: readonly string[]): string[] => xs.slice().sort(comparePy);

function pad(rng: Rng, s: string, p: number): string {
  if (!rng.chance(p)) return s;
  const left = rng.chance(0.6) ? Array.from({ length: rng.int(1, 2) }, () => rng.pick(PAD_CHARS)).join("") : "";
  const right = rng.chance(0.6) || !left ? Array.from({ length: rng.int(1, 2) }, () => rng.pick(PAD_CHARS)).join("") : "";
  return left + s + right;
}

function refTree(rng: Rng, s: string, style: EmitStyle): Tree {
  const alts = COERCIBLE[s];
  if (alts && rng.chance(style.coerce)) return new Raw(rng.pick(alts));
  return pad(rng, s, style.pad);
}

function listTree(rng: Rng, items: readonly string[], style: EmitStyle): Tree {
  const order = rng.chance(style.shuffle) ? rng.shuffle(items) : items.slice();
  return order.map((s) => refTree(rng, s, style));
}

function confidenceTree(rng: Rng, x: number, style: EmitStyle): Tree {
  if (!rng.chance(style.lexeme)) return new Raw(pyFloatRepr(x));
  return new Raw(rng.pick(confidenceLexemes(x)));
}

/** Emit one delivery of a spec as an ordered JSON object. */
export function emitObservation(rng: Rng, spec: ObservationSpec, createdAt: string, style: EmitStyle): Obj {
  const scopeEntries: Array<readonly [string, Tree]> = (["agent_id", "project_id", "corpus_id", "surface_id"] as const).map(
    (k) => [k, pad(rng, spec.scope[k], style.pad)] as const,
  );
  const fields: Record<(typeof OBSERVATION_KEYS)[number], Tree> = {
    schema_version: SCHEMA,
    observation_id: pad(rng, spec.observation_id, style.pad),
    scope: new Obj(rng.chance(style.shuffle) ? rng.shuffle(scopeEntries) : scopeEntries),
    application_receipt_id: refTree(rng, spec.application_receipt_id, style),
    memory_ref_digests: listTree(rng, spec.memory_ref_digests, style),
    retrieval_snapshot_ref: pad(rng, spec.retrieval_snapshot_ref, style.pad),
    policy_snapshot_ref: pad(rng, spec.policy_snapshot_ref, style.pad),
    outcome_ref: refTree(rng, spec.outcome_ref, style),
    utility_label: pad(rng, spec.utility_label, style.pad),
    attribution_level: pad(rng, spec.attribution_level, style.pad),
    evidence_basis: pad(rng, spec.evidence_basis, style.pad),
    confidence: confidenceTree(rng, spec.confidence, style),
    reason_codes: listTree(rng, spec.reason_codes, style),
    evidence_refs: listTree(rng, spec.evidence_refs, style),
    evaluator_ref: refTree(rng, spec.evaluator_ref, style),
    evaluation_version: refTree(rng, spec.evaluation_version, style),
    created_at: pad(rng, createdAt, style.pad * 0.5),
    grants_new_action_authority: false,
    provider_write_performed: false,
    external_writes_performed: false,
    raw_content_captured: false,
  };
  const keys = rng.chance(style.shuffle) ? rng.shuffle(OBSERVATION_KEYS) : OBSERVATION_KEYS.slice();
  const obj = new Obj(keys.map((k) => [k, fields[k]] as const));
  if (rng.chance(style.dupKey)) {
    // A duplicated key: json.loads keeps the LAST value, so put a bogus value first.
    const k = rng.pick(["confidence", "utility_label", "created_at", "evaluator_ref", "raw_content_captured"] as const);
    const bogus: Tree = k === "confidence" ? new Raw("NaN") : k === "raw_content_captured" ? true : "viking://bogus";
    const idx = obj.entries.findIndex(([key]) => key === k);
    obj.entries.splice(idx, 0, [k, bogus]);
  }
  return obj;
}

function digestPool(rng: Rng, n: number): string[] {
  const out = new Set<string>();
  const special = ["1234567890123456", "9007199254740993", "1000000000000001", "0000000000000000", "ffffffffffffffff"];
  for (const s of special) if (rng.chance(0.15)) out.add(s);
  while (out.size < n) out.add(rng.chance(0.75) ? rng.hex(16) : `sha256:${rng.hex(64)}`);
  return [...out];
}

interface Universe {
  scope: ObservationScope;
  retrieval: string;
  policy: string;
  digests: string[];
  receipts: string[];
  evalCounter: number;
}

function evidenceRefsFor(rng: Rng, needed: boolean): string[] {
  const k = needed ? (rng.chance(0.03) ? 16 : rng.int(1, 3)) : rng.weighted([[0, 5], [1, 2], [2, 1]] as const);
  return sortPy(rng.sample(EVIDENCE_REFS, k));
}

function reasonCodesFor(rng: Rng): string[] {
  const k = rng.chance(0.03) ? 12 : rng.weighted([[0, 3], [1, 3], [2, 2], [3, 1]] as const);
  return sortPy(rng.sample(REASON_CODES, k));
}

function randomConfidence(rng: Rng): number {
  const r = rng.float();
  if (r < 0.7) return rng.pick(CONFIDENCE_VALUES);
  if (r < 0.85) return rng.int(0, 1000) / 1000;
  if (r < 0.97) return rng.double53();
  return rng.pick([0, 1, -0]);
}

type SubjectProfile = "consistent" | "unknown_only" | "mixed";

interface Subject {
  level: AttributionLevel;
  digests: string[];
  receipt: string | null; // fixed receipt for lineage ("none") subjects
  profile: SubjectProfile;
  topBasis: EvidenceBasis;
  topLabel: UtilityLabel;
  count: number; // observations assigned so far
}

function labelBasisFor(rng: Rng, subj: Subject, first: boolean): [UtilityLabel, EvidenceBasis] {
  if (subj.level === "none") return ["unknown", rng.pick(EVIDENCE_BASES)];
  if (subj.profile === "unknown_only") return ["unknown", rng.pick(EVIDENCE_BASES)];
  if (subj.profile === "consistent") {
    const topRank = EVIDENCE_BASES.indexOf(subj.topBasis);
    if (first || topRank === 0 || rng.chance(0.55)) return [subj.topLabel, subj.topBasis];
    const basis = EVIDENCE_BASES[rng.int(0, topRank - 1)] as EvidenceBasis;
    return [basis === "insufficient" ? "unknown" : rng.pick(UTILITY_LABELS), basis];
  }
  const basis = rng.pick(EVIDENCE_BASES);
  return [basis === "insufficient" ? "unknown" : rng.pick(UTILITY_LABELS), basis];
}

function makeSubjects(rng: Rng, u: Universe, n: number, calm: boolean): Subject[] {
  const subjects: Subject[] = [];
  const used = new Set<string>();
  const itemDigests = rng.shuffle(u.digests);
  let itemIdx = 0;
  let guard = 0;
  while (subjects.length < n && guard++ < n * 50) {
    const level = rng.weighted([["item", 5], ["set", 3], ["none", 1.5]] as const);
    let digests: string[];
    if (level === "item") {
      const dgt = itemDigests[itemIdx++ % itemDigests.length] as string;
      digests = [dgt];
    } else {
      const k = rng.chance(0.03) ? 16 : rng.weighted([[1, 1], [2, 4], [3, 2], [4, 1]] as const);
      digests = sortPy(rng.sample(u.digests, k));
    }
    const receipt = level === "none" ? rng.pick(u.receipts) : null;
    const key = `${level}|${digests.join(",")}|${receipt ?? ""}`;
    if (used.has(key)) continue;
    used.add(key);
    const profile: SubjectProfile = calm
      ? rng.weighted([["consistent", 4], ["unknown_only", 1]] as const)
      : rng.weighted([["consistent", 3], ["unknown_only", 1], ["mixed", 2]] as const);
    const topBasis = rng.pick(EVIDENCE_BASES.slice(1));
    subjects.push({ level, digests, receipt, profile, topBasis, topLabel: rng.pick(DIRECTIONAL), count: 0 });
  }
  return subjects;
}

function makeSpec(rng: Rng, u: Universe, subj: Subject, used: Set<string>): ObservationSpec {
  for (let attempt = 0; ; attempt++) {
    const [label, basis] = labelBasisFor(rng, subj, subj.count === 0);
    const needRefs = STRONG.has(basis) || label !== "unknown";
    const evaluation_version = rng.chance(0.75) || attempt > 3 ? `evaluation:v${u.evalCounter++}` : rng.pick(FIXED_EVAL_VERSIONS);
    const spec = withId({
      scope: u.scope,
      application_receipt_id: subj.receipt ?? rng.pick(u.receipts),
      memory_ref_digests: subj.digests,
      retrieval_snapshot_ref: u.retrieval,
      policy_snapshot_ref: u.policy,
      outcome_ref: rng.pick(OUTCOMES),
      utility_label: label,
      attribution_level: subj.level,
      evidence_basis: basis,
      confidence: randomConfidence(rng),
      reason_codes: reasonCodesFor(rng),
      evidence_refs: evidenceRefsFor(rng, needRefs),
      evaluator_ref: rng.pick(EVALUATORS),
      evaluation_version,
    });
    if (!used.has(spec.observation_id)) {
      used.add(spec.observation_id);
      subj.count++;
      return spec;
    }
  }
}

/** A different judgment under the same id (label / confidence / reason codes changed). */
function conflictVariant(rng: Rng, spec: ObservationSpec, taken: Set<string>): ObservationSpec {
  for (let attempt = 0; attempt < 50; attempt++) {
    const v = { ...spec };
    const what = rng.weighted([["confidence", 4], ["label", 3], ["reasons", 2], ["zero_sign", 0.5]] as const);
    if (what === "label") {
      const options = UTILITY_LABELS.filter(
        (l) => l !== spec.utility_label && combinationAllowed(l, spec.evidence_basis, spec.attribution_level, spec.evidence_refs.length > 0),
      );
      if (options.length === 0) continue;
      v.utility_label = rng.pick(options);
    } else if (what === "reasons") {
      v.reason_codes = reasonCodesFor(rng);
    } else if (what === "zero_sign") {
      v.confidence = Object.is(spec.confidence, -0) ? 0 : spec.confidence === 0 ? -0 : rng.pick([0, -0]);
    } else {
      v.confidence = randomConfidence(rng);
    }
    const key = fingerprintKey(v);
    if (!taken.has(key)) {
      taken.add(key);
      return v;
    }
  }
  const v = { ...spec, confidence: rng.double53() };
  taken.add(fingerprintKey(v));
  return v;
}

/** Key equal for specs the reference fingerprints identically (float -0.0 and 0.0 differ). */
function fingerprintKey(s: ObservationSpec): string {
  return `${s.utility_label}|${Object.is(s.confidence, -0) ? "-0" : String(s.confidence)}|${s.reason_codes.join(",")}`;
}

// ---------------------------------------------------------------------------
// Malformed observations
// ---------------------------------------------------------------------------

export const MALFORMATIONS = [
  "missing_field",
  "unknown_field",
  "wrong_type",
  "uri_ref",
  "absolute_path",
  "uppercase_digest",
  "bad_timestamp",
  "naive_timestamp",
  "flag_true",
  "schema_mismatch",
  "non_object",
  "bad_id",
  "bad_confidence",
  "forbidden_combination",
  "bounds",
  "duplicate_refs",
  "bad_enum",
  "falsy_ref",
  "dup_key_last_invalid",
  "nonfinite_elsewhere",
] as const;
export type Malformation = (typeof MALFORMATIONS)[number];

/** Mutate a valid emitted observation into a (most likely) invalid one. */
export function malform(rng: Rng, obj: Obj, spec: ObservationSpec, kind: Malformation): Tree {
  switch (kind) {
    case "missing_field":
      return obj.delete(rng.pick(OBSERVATION_KEYS));
    case "unknown_field":
      return obj.set(rng.pick(["raw_prompt", "transcript", "provider_uri", "local_path", "extra", "Observation_id"]), rng.pick<Tree>(["x", null, 0, false]));
    case "wrong_type": {
      const k = rng.pick(["confidence", "reason_codes", "memory_ref_digests", "scope", "evidence_refs", "utility_label"] as const);
      const bad: Record<typeof k, Tree[]> = {
        confidence: ['0.5', [0.5], new Obj([])],
        reason_codes: ["rc_1", new Obj([]), null, [["rc_1"]]],
        memory_ref_digests: [spec.memory_ref_digests[0] ?? "x", new Obj([]), null, []],
        scope: [[spec.scope.agent_id], "scope", null, new Obj([["agent_id", spec.scope.agent_id]])],
        evidence_refs: [null, "ev:1", 1, [null]],
        utility_label: [["helpful"], new Obj([]), 1],
      };
      return obj.set(k, rng.pick(bad[k]));
    }
    case "uri_ref":
      return obj.set(rng.pick(["outcome_ref", "evaluator_ref", "application_receipt_id"]), rng.pick(["viking://private/outcome", "https://x", "file:///etc/passwd"]))
        .set("evidence_refs", rng.chance(0.5) ? ["viking://x"] : spec.evidence_refs);
    case "absolute_path":
      return obj.set(rng.pick(["evidence_refs", "retrieval_snapshot_ref", "policy_snapshot_ref"]), rng.pick<Tree>(["/Users/x/secret", ["/private/x"], "C:\\Users\\x", ["\\\\server\\share"]]));
    case "uppercase_digest": {
      const d = spec.memory_ref_digests[0] ?? "abcdef0123456789";
      return obj.set("memory_ref_digests", [d.toUpperCase() === d ? "ABCDEF0123456789" : d.toUpperCase()]);
    }
    case "bad_timestamp":
      return obj.set("created_at", rng.pick<Tree>([...INVALID_TIMESTAMPS.filter((s) => !/^[0-9-]+(T[0-9:.]+)?$/.test(s)), 1755216000, null, ["2026-08-15T00:00:00Z"]]));
    case "naive_timestamp":
      return obj.set("created_at", rng.pick(["2026-08-15T00:00:00", "2026-08-15", "2026-08-15Z", "20260815T000000", "2026-08-15 12:34:56.789"]));
    case "flag_true":
      return obj.set(rng.pick(FLAGS), rng.pick<Tree>([true, 0, null, "false", 1]));
    case "schema_mismatch":
      return obj.set("schema_version", rng.pick<Tree>(["memory_utility_observation_v99", "memory_utility_observation_v1", ` ${SCHEMA}`, SCHEMA.toUpperCase(), null]));
    case "non_object":
      return rng.pick<Tree>(["observation", 42, null, true, [], [obj]]);
    case "bad_id": {
      const hex = spec.observation_id.slice(4);
      return obj.set("observation_id", rng.pick(["muo_" + "0".repeat(64), "muo_" + hex.toUpperCase(), "muo_" + hex.slice(1), "mui_" + hex, "muo_" + hex + "0"]));
    }
    case "bad_confidence":
      return obj.set("confidence", new Raw(rng.pick(INVALID_CONFIDENCE)));
    case "forbidden_combination": {
      const which = rng.int(0, 3);
      if (which === 0) return obj.set("utility_label", "helpful").set("evidence_basis", "insufficient");
      if (which === 1) return obj.set("utility_label", "harmful").set("attribution_level", "none");
      if (which === 2) return obj.set("evidence_basis", "owner_correction").set("evidence_refs", []);
      return obj.set("utility_label", "neutral").set("evidence_basis", "evaluator_inference").set("evidence_refs", []);
    }
    case "bounds": {
      const which = rng.int(0, 4);
      if (which === 0) return obj.set("memory_ref_digests", Array.from({ length: 17 }, () => rng.hex(16)));
      if (which === 1) return obj.set("reason_codes", REASON_CODES.slice(0, 13));
      if (which === 2) return obj.set("evidence_refs", EVIDENCE_REFS.slice(0, 17));
      if (which === 3) return obj.set("evaluator_ref", "e" + "x".repeat(200));
      return obj.set("memory_ref_digests", []);
    }
    case "duplicate_refs":
      return obj.set(rng.pick(["reason_codes", "evidence_refs"]), ["ev:1", " ev:1"]);
    case "bad_enum":
      return obj.set(rng.pick(["utility_label", "attribution_level", "evidence_basis"]), rng.pick<Tree>(["good", "items", "", null, "Helpful", "owner-correction"]));
    case "falsy_ref":
      return obj.set(rng.pick(["evaluator_ref", "evaluation_version", "outcome_ref", "application_receipt_id"]), rng.pick<Tree>([0, false, "", null, "   ", new Raw("0.0")]));
    case "dup_key_last_invalid": {
      obj.entries.push(["confidence", new Raw("1.5")]);
      return obj;
    }
    case "nonfinite_elsewhere":
      return obj.set(rng.pick(["evaluator_ref", "outcome_ref"]), new Raw(rng.pick(["NaN", "Infinity", "1e400", "1e16"])));
  }
}

// ---------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------

export type StreamTier = "small" | "medium" | "history" | "subjects" | "deliveries";

export type StreamFault =
  | "none"
  | "malformed_observation"
  | "scope_mismatch"
  | "retrieval_mismatch"
  | "policy_mismatch"
  | "reducer_version_other"
  | "reducer_version_invalid"
  | "invalid_context"
  | "invalid_request";

export interface StreamMeta {
  tier: StreamTier;
  seed: number;
  /** length of the observations array */
  deliveries: number;
  /** distinct valid observation ids generated (including conflicting ids) */
  distinctIds: number;
  /** ids delivered with >= 2 different fingerprints */
  conflictIds: number;
  /** distinctIds - conflictIds when nothing else rejects the stream */
  expectedAccepted: number;
  /** distinct subjects intended among accepted observations */
  subjects: number;
  /** no conflict-prone subject profiles and no conflicting ids */
  calm: boolean;
  fault: StreamFault;
  /** details of the fault (malformation kinds, context variant, ...) */
  faultDetail: string[];
  /** value of the reducer_version field when present (JSON text) */
  reducerVersion: string | null;
  style: string;
}

export interface StreamInput {
  text: string;
  meta: StreamMeta;
}

export interface StreamOptions {
  /** relative tier weights (default small 45, medium 37, history 6, subjects 6, deliveries 6) */
  tierWeights?: Partial<Record<StreamTier, number>>;
  /** probability of a fault in small/medium streams (default 0.22; big tiers use a third of it) */
  faultRate?: number;
  /** disable all faults (every stream is a structurally valid input) */
  clean?: boolean;
}

const DEFAULT_TIER_WEIGHTS: Record<StreamTier, number> = { small: 45, medium: 37, history: 6, subjects: 6, deliveries: 6 };

interface StreamKnobs {
  tier: StreamTier;
  size: number; // 0..10000, position inside the tier range (shrinks to the low end)
  fault: StreamFault;
  calm: boolean;
  seed: number;
}

/** Pick a count in [lo, hi] from a 0..10000 knob, with extra mass on the listed edges. */
function sized(rng: Rng, knob: number, lo: number, hi: number, edges: readonly number[] = []): number {
  if (edges.length > 0 && rng.chance(0.3)) return rng.pick(edges);
  return lo + Math.round(((hi - lo) * knob) / 10000);
}

function streamStyle(rng: Rng): { emit: EmitStyle; ser: SerializeStyle; name: string } {
  const kind = rng.weighted([["plain", 5], ["canonical", 2], ["exotic", 3]] as const);
  const exotic = kind === "exotic";
  const emit: EmitStyle =
    kind === "canonical"
      ? { pad: 0, shuffle: 0, lexeme: 0, coerce: 0, dupKey: 0, timestamps: { exotic: 0 } }
      : {
          pad: exotic ? 0.25 : 0.05,
          shuffle: exotic ? 0.8 : 0.3,
          lexeme: exotic ? 0.6 : 0.2,
          coerce: exotic ? 0.3 : 0.05,
          dupKey: exotic ? 0.02 : 0,
          timestamps: { exotic: exotic ? 0.8 : 0.3 },
        };
  const ser: SerializeStyle = rng.chance(0.1) ? { indent: rng.pick(["  ", "\t", ""]) } : rng.chance(0.1) ? { asciiOnly: true, spaced: rng.chance(0.5) } : rng.chance(0.1) ? { spaced: true } : {};
  return { emit, ser, name: `${kind}${ser.indent !== undefined ? "+indent" : ""}${ser.asciiOnly ? "+ascii" : ""}${ser.spaced ? "+spaced" : ""}` };
}

function buildStream(k: StreamKnobs): StreamInput {
  const rng = new Rng(k.seed ^ 0x5bd1e995);
  const { emit, ser, name } = streamStyle(rng);

  // tier shape
  let deliveriesTarget: number;
  let accepted: number;
  let nSubjects: number;
  let nConflicts = 0;
  const conflictish = !k.calm;
  switch (k.tier) {
    case "small":
      deliveriesTarget = sized(rng, k.size, 0, 20, [0, 1, 2]);
      accepted = Math.max(0, Math.min(deliveriesTarget, Math.round(deliveriesTarget * (0.5 + 0.5 * rng.float()))));
      if (conflictish && deliveriesTarget >= 2 && rng.chance(0.4)) nConflicts = rng.int(1, Math.min(3, Math.floor(deliveriesTarget / 2)));
      accepted = Math.max(0, Math.min(accepted, deliveriesTarget - 2 * nConflicts));
      nSubjects = accepted === 0 ? 0 : rng.int(1, Math.min(accepted, 6));
      break;
    case "medium":
      deliveriesTarget = sized(rng, k.size, 20, 200);
      accepted = Math.round(deliveriesTarget * (0.4 + 0.6 * rng.float()));
      if (conflictish && rng.chance(0.6)) nConflicts = rng.chance(0.05) ? 1 : rng.int(1, 6);
      accepted = Math.max(1, Math.min(accepted, deliveriesTarget - 2 * nConflicts));
      nSubjects = rng.int(1, Math.min(accepted, rng.chance(0.5) ? 10 : 40));
      break;
    case "history":
      accepted = sized(rng, k.size, 250, 300, [255, 256, 257, 258]);
      if (conflictish && rng.chance(0.5)) nConflicts = rng.int(1, 8);
      nSubjects = rng.chance(0.2) ? 1 : rng.int(2, 60);
      deliveriesTarget = Math.min(1024, accepted + 2 * nConflicts + rng.int(0, Math.round(accepted * 0.4)));
      break;
    case "subjects":
      nSubjects = sized(rng, k.size, 120, 140, [127, 128, 129]);
      accepted = nSubjects + rng.int(0, 80);
      if (conflictish && rng.chance(0.4)) nConflicts = rng.int(1, 5);
      deliveriesTarget = accepted + 2 * nConflicts + rng.int(0, 60);
      break;
    case "deliveries": {
      deliveriesTarget = rng.chance(0.3) ? rng.pick([1023, 1024, 1025, 1026]) : rng.chance(0.55) ? sized(rng, k.size, 1000, 1024) : sized(rng, k.size, 1025, 1100);
      if (conflictish && rng.chance(0.6)) nConflicts = rng.chance(0.25) ? rng.int(60, 80) : rng.int(1, 10);
      accepted = rng.int(150, 700);
      nSubjects = rng.chance(0.15) ? 1 : rng.int(2, 100);
      break;
    }
  }
  nSubjects = Math.min(nSubjects, accepted);

  // universe
  const scope = rng.chance(0.6) ? (SCOPES[0] as ObservationScope) : rng.pick(SCOPES);
  const u: Universe = {
    scope,
    retrieval: rng.pick(RETRIEVALS),
    policy: rng.pick(POLICIES),
    digests: digestPool(rng, Math.max(8, nSubjects * 2 + 4)),
    receipts: Array.from({ length: rng.int(1, 6) }, () => (rng.chance(0.85) ? `rma_${rng.hex(64)}` : rng.pick(["receipt:1", "rma_short", "R1"]))),
    evalCounter: rng.int(0, 1000),
  };
  const subjects = makeSubjects(rng, u, nSubjects, k.calm);
  const usedIds = new Set<string>();

  // distinct accepted specs: each subject gets one, the rest spread (skewed)
  const specs: ObservationSpec[] = [];
  for (const s of subjects) specs.push(makeSpec(rng, u, s, usedIds));
  while (specs.length < accepted && subjects.length > 0) {
    const s = rng.chance(0.5) ? (subjects[Math.floor(subjects.length * rng.float() * rng.float())] as Subject) : rng.pick(subjects);
    specs.push(makeSpec(rng, u, s, usedIds));
  }
  // conflicting ids (attached to existing subjects, so subject counts stay exact)
  const conflictGroups: ObservationSpec[][] = [];
  let budget = Math.max(0, deliveriesTarget - specs.length);
  for (let i = 0; i < nConflicts && subjects.length > 0 && budget >= 2; i++) {
    const s = rng.pick(subjects);
    const base = makeSpec(rng, u, s, usedIds);
    s.count--; // not accepted
    const taken = new Set<string>([fingerprintKey(base)]);
    const nVariants = Math.min(budget, rng.chance(0.05) ? rng.int(17, 20) : rng.chance(0.2) ? 3 : 2);
    budget -= nVariants;
    const group = [base];
    for (let j = 1; j < nVariants; j++) group.push(conflictVariant(rng, base, taken));
    conflictGroups.push(group);
  }

  // instants
  const baseSec =
    rng.chance(0.01)
      ? rng.pick([-62135596800 + 1800, 253402300799 - 86400 * 2]) // year 1 / year 9999 edges
      : 1786752000 + rng.int(-30, 30) * 86400; // around 2026-08-15
  const span = Math.max(60, specs.length * rng.pick([1, 60, 600]));
  const microPool = [0, 0, 0, 500000, 123000, 123456, 1, 999999];
  const instants: Instant[] = [];
  const newInstant = (): Instant => {
    if (instants.length > 0 && rng.chance(0.08)) return rng.pick(instants); // exact ties
    const inst = { sec: baseSec + rng.int(0, span), micro: rng.pick(microPool) };
    instants.push(inst);
    return inst;
  };

  // deliveries
  const deliveries: Tree[] = [];
  const firstDeliveries: Array<{ spec: ObservationSpec; inst: Instant; text: Obj }> = [];
  for (const spec of specs) {
    const inst = newInstant();
    const obj = emitObservation(rng, spec, spellInstant(rng, inst, emit.timestamps), emit);
    firstDeliveries.push({ spec, inst, text: obj });
    deliveries.push(obj);
  }
  for (const group of conflictGroups) {
    for (const v of group) {
      const inst = newInstant();
      const obj = emitObservation(rng, v, spellInstant(rng, inst, emit.timestamps), emit);
      firstDeliveries.push({ spec: v, inst, text: obj });
      deliveries.push(obj);
    }
  }
  // duplicates / retries up to the delivery target
  while (deliveries.length < deliveriesTarget && firstDeliveries.length > 0) {
    const src = rng.chance(0.5) ? (firstDeliveries[Math.floor(firstDeliveries.length * rng.float() * rng.float())] as (typeof firstDeliveries)[number]) : rng.pick(firstDeliveries);
    const mode = rng.weighted([["exact", 3], ["same_instant", 2], ["later", 3], ["earlier", 1]] as const);
    if (mode === "exact") {
      deliveries.push(src.text);
      continue;
    }
    const inst: Instant =
      mode === "same_instant"
        ? src.inst
        : { sec: src.inst.sec + (mode === "later" ? 1 : -1) * rng.int(1, 7200), micro: rng.pick(microPool) };
    deliveries.push(emitObservation(rng, src.spec, spellInstant(rng, inst, { exotic: Math.max(0.5, emit.timestamps.exotic) }), emit));
  }

  // order
  let ordered = rng.chance(0.85) ? rng.shuffle(deliveries) : deliveries;

  // faults
  const faultDetail: string[] = [];
  let context: Obj = new Obj([
    ["observations", null],
    ["scope", new Obj((["agent_id", "project_id", "corpus_id", "surface_id"] as const).map((kk) => [kk, u.scope[kk]] as const))],
    ["retrieval_snapshot_ref", u.retrieval],
    ["policy_snapshot_ref", u.policy],
  ]);
  if (rng.chance(0.3)) context.entries.push(["reducer_version", "memory_utility_reducer_v0"]);
  if (rng.chance(0.05)) context.entries.push(["previous_projection", null]);
  let rawText: string | null = null;
  const insertAt = (tree: Tree): void => {
    const arr = ordered.slice();
    arr.splice(rng.int(0, arr.length), 0, tree);
    ordered = arr;
  };
  const mismatchSpec = (field: "scope" | "retrieval" | "policy"): void => {
    const s = rng.pick(subjects.length > 0 ? subjects : makeSubjects(rng, u, 1, true));
    const spec = makeSpec(rng, { ...u, scope: field === "scope" ? OTHER_SCOPE : u.scope, retrieval: field === "retrieval" ? "retrieval:stale" : u.retrieval, policy: field === "policy" ? "policy:stale" : u.policy }, s, usedIds);
    s.count--;
    insertAt(emitObservation(rng, spec, spellInstant(rng, newInstant(), emit.timestamps), emit));
  };
  switch (k.fault) {
    case "none":
      break;
    case "malformed_observation": {
      const n = rng.chance(0.8) ? 1 : rng.int(2, 3);
      for (let i = 0; i < n; i++) {
        const kind = rng.pick(MALFORMATIONS);
        faultDetail.push(kind);
        const s = subjects.length > 0 ? rng.pick(subjects) : makeSubjects(rng, u, 1, true)[0];
        if (!s) break;
        const spec = makeSpec(rng, u, s, usedIds);
        s.count--;
        const obj = emitObservation(rng, spec, spellInstant(rng, newInstant(), emit.timestamps), emit);
        insertAt(malform(rng, obj, spec, kind));
      }
      break;
    }
    case "scope_mismatch":
      mismatchSpec("scope");
      break;
    case "retrieval_mismatch":
      mismatchSpec("retrieval");
      break;
    case "policy_mismatch":
      mismatchSpec("policy");
      break;
    case "reducer_version_other": {
      const v = rng.pick(["memory_utility_reducer_v1", "memory_utility_reducer_v0.1", "reducer:x", "True"]);
      context.delete("reducer_version").entries.push(["reducer_version", v]);
      faultDetail.push(v);
      break;
    }
    case "reducer_version_invalid": {
      const v = rng.pick<Tree>([" memory_utility_reducer_v0", "memory_utility_reducer_v0\n", "v0://x", "/abs", "", null, 1, "\u3000"]);
      context.delete("reducer_version").entries.push(["reducer_version", v]);
      faultDetail.push(serializeTree(v));
      break;
    }
    case "invalid_context": {
      const which = rng.int(0, 9);
      const sc = context.get("scope") as Obj;
      const variants: Array<[string, () => void]> = [
        ["scope_padded", () => sc.set("agent_id", ` ${u.scope.agent_id}`)],
        ["scope_missing_key", () => sc.delete("surface_id")],
        ["scope_extra_key", () => sc.set("tenant_id", "t")],
        ["scope_value_number", () => sc.set("project_id", 7)],
        ["scope_uri", () => sc.set("corpus_id", "viking://corpus")],
        ["retrieval_padded", () => context.set("retrieval_snapshot_ref", `${u.retrieval}\t`)],
        ["policy_invalid", () => context.set("policy_snapshot_ref", "-policy")],
        ["scope_not_object", () => context.set("scope", [u.scope.agent_id])],
        ["retrieval_not_string", () => context.set("retrieval_snapshot_ref", 5)],
        ["previous_projection_empty", () => context.set("previous_projection", new Obj([]))],
      ];
      const chosen = variants[which] as [string, () => void];
      chosen[1]();
      faultDetail.push(chosen[0]);
      break;
    }
    case "invalid_request": {
      const which = rng.int(0, 9);
      const names = ["missing_field", "unknown_field", "observations_not_list", "top_level_array", "truncated_json", "bom", "previous_projection_number", "huge_int", "reducer_version_empty", "nan_context"];
      const name2 = names[which] as string;
      faultDetail.push(name2);
      if (which === 0) context.delete(rng.pick(["observations", "scope", "retrieval_snapshot_ref", "policy_snapshot_ref"]));
      else if (which === 1) context.set("strict", true);
      else if (which === 2) {
        context.set("observations", new Obj([["0", ordered[0] ?? null]]));
        ordered = [];
      } else if (which === 6) context.set("previous_projection", 5);
      else if (which === 7) insertAt(new Raw("1" + "0".repeat(4400)));
      else if (which === 8) context.delete("reducer_version").entries.push(["reducer_version", rng.pick(["", "  "])]);
      else if (which === 9) context.set("retrieval_snapshot_ref", new Raw("NaN"));
      if (which === 3 || which === 4 || which === 5) rawText = "";
    }
  }

  if (context.keys().includes("observations") && !(context.get("observations") instanceof Obj)) {
    context.set("observations", ordered);
  }
  if (rng.chance(0.3) && k.fault !== "invalid_request") {
    // top-level key order does not matter
    context = new Obj(rng.shuffle(context.entries));
  }
  let text = serializeTree(context, ser);
  if (rawText !== null) {
    const detail = faultDetail[faultDetail.length - 1];
    if (detail === "top_level_array") text = `[${text}]`;
    else if (detail === "truncated_json") text = text.slice(0, Math.max(1, Math.floor(text.length * rng.float())));
    else if (detail === "bom") text = `\ufeff${text}`;
  }
  const rv = context.get("reducer_version");
  const conflictIds = conflictGroups.length;
  return {
    text,
    meta: {
      tier: k.tier,
      seed: k.seed,
      deliveries: ordered.length,
      distinctIds: specs.length + conflictIds,
      conflictIds,
      expectedAccepted: specs.length,
      subjects: subjects.length,
      calm: k.calm,
      fault: k.fault,
      faultDetail,
      reducerVersion: rv === undefined ? null : serializeTree(rv),
      style: name,
    },
  };
}

const FAULT_WEIGHTS: ReadonlyArray<readonly [StreamFault, number]> = [
  ["malformed_observation", 40],
  ["scope_mismatch", 6],
  ["retrieval_mismatch", 4],
  ["policy_mismatch", 4],
  ["reducer_version_other", 8],
  ["reducer_version_invalid", 5],
  ["invalid_context", 8],
  ["invalid_request", 5],
];

/**
 * Reducer inputs as JSON text, in weighted tiers: small (0-20 deliveries),
 * medium (20-200), history (250-300 accepted ids), subjects (120-140
 * subjects), deliveries (1000-1100 deliveries).
 */
export function streamInput(opts: StreamOptions = {}): fc.Arbitrary<StreamInput> {
  const weights = { ...DEFAULT_TIER_WEIGHTS, ...opts.tierWeights };
  const tiers = (Object.keys(weights) as StreamTier[]).filter((t) => (weights[t] ?? 0) > 0);
  const tierArb = fc.oneof(...tiers.map((t) => ({ arbitrary: fc.constant(t), weight: Math.max(1, Math.round((weights[t] ?? 0) * 10)) })));
  const faultRate = opts.clean ? 0 : (opts.faultRate ?? 0.22);
  const faultArb = (rate: number): fc.Arbitrary<StreamFault> =>
    rate <= 0
      ? fc.constant<StreamFault>("none")
      : fc.oneof(
          { arbitrary: fc.constant<StreamFault>("none"), weight: Math.round((1 - rate) * 1000) },
          { arbitrary: fc.oneof(...FAULT_WEIGHTS.map(([f, w]) => ({ arbitrary: fc.constant(f), weight: w }))), weight: Math.round(rate * 1000) },
        );
  return tierArb
    .chain((tier) =>
      fc.record({
        tier: fc.constant(tier),
        size: fc.integer({ min: 0, max: 10000 }),
        fault: faultArb(tier === "small" || tier === "medium" ? faultRate : faultRate / 3),
        calm: fc.boolean(),
        seed: fc.noBias(fc.integer({ min: 0, max: 0x7fffffff })),
      }),
    )
    .map((k) => buildStream(k));
}

/** Build one stream directly (for scripts/benchmarks). */
export function buildStreamInput(tier: StreamTier, seed: number, opts: { size?: number; fault?: StreamFault; calm?: boolean } = {}): StreamInput {
  return buildStream({ tier, seed, size: opts.size ?? new Rng(seed).int(0, 10000), fault: opts.fault ?? "none", calm: opts.calm ?? (seed & 1) === 0 });
}

// ---------------------------------------------------------------------------
// Smaller arbitraries
// ---------------------------------------------------------------------------

/** Random instants in years 1..9999, biased to around 2026. */
function instantFromRng(rng: Rng): Instant {
  const r = rng.float();
  let sec: number;
  if (r < 0.7) sec = 1786752000 + rng.int(-400, 400) * 86400 + rng.int(0, 86399);
  else if (r < 0.9) sec = rng.int(-62135596800 + 86400 * 2, 253402300799 - 86400 * 2);
  else sec = rng.pick([-62135596800, -62135596800 + 1800, 253402300799, 253402300799 - 1800, 0, 951782400, 1709164800]);
  const micro = rng.pick([0, 0, 1, 500000, 999999, rng.int(0, 999999)]);
  return { sec, micro };
}

/** Mutate a valid spelling into a near miss (often invalid, sometimes still valid). */
function mutateTimestamp(rng: Rng, s: string): string {
  const ops: Array<() => string> = [
    () => s.replace(/(Z|[+-]\d{2}(:?\d{2}(:?\d{2}(\.\d+)?)?)?)$/, ""), // drop the offset -> naive
    () => s.toLowerCase(),
    () => s.replace("Z", "z"),
    () => ` ${s}`,
    () => `${s} `,
    () => `${s}\n`,
    () => s.replace("T", ""),
    () => s.replace(/-/g, "/"),
    () => s.replace(/\d/, "\uff11"),
    () => s + "Z",
    () => s.slice(0, -1),
    () => s.slice(0, rng.int(0, s.length)),
    () => s.replace(/:/, ""),
    () => s.replace(/\.(\d+)/, ".$1$1$1"),
    () => s.replace(/T(\d\d)/, "T$1.5"),
    () => s.replace(/T(\d\d):(\d\d)/, "T$1:$2.25"),
    () => s.replace(/\d\d\d\d/, "20260"),
    () => s.replace(/^(\d{4})-(\d{2})-(\d{2})/, "$1-$2-3$3"),
    () => s.replace("T", "\u{1F600}"),
    () => s.replace("T", "\ud800"),
  ];
  return rng.pick(ops)();
}

/** ISO-like timestamp strings: valid CPython 3.11 spellings (aware and naive) and near misses. */
export function isoTimestampText(): fc.Arbitrary<string> {
  return fc.noBias(fc.integer({ min: 0, max: 0x7fffffff })).map((seed) => {
    const rng = new Rng(seed);
    const r = rng.float();
    if (r < 0.12) return rng.pick(INVALID_TIMESTAMPS);
    const s = spellInstant(rng, instantFromRng(rng), { exotic: rng.pick([0, 0.5, 1]) });
    if (r < 0.6) return s;
    return mutateTimestamp(rng, s);
  });
}

/** Doubles: arbitrary bit patterns plus the interesting edges (subnormals, -0.0, integral floats, repr switch points). */
export function floatValue(): fc.Arbitrary<number> {
  const edges = [
    0, -0, 1, -1, 0.5, 0.1, 0.2, 0.3, 0.30000000000000004, 1e-5, 1e-4, 0.0001, 0.00001, 1e-7, 1e15, 1e16, 1e17, 1e21, 1e22, 1e23,
    123456789012345680, 9007199254740992, 9007199254740993, 5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
    1.7976931348623157e308, 0.9999995, 0.0000005, 0.1234565, 2.5, 1.5, 1e-323, 4.9406564584124654e-324,
  ];
  return fc.oneof(
    { arbitrary: fc.constantFrom(...edges), weight: 3 },
    { arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }), weight: 4 },
    { arbitrary: fc.double({ min: 0, max: 1, noNaN: true }), weight: 3 },
    { arbitrary: fc.integer({ min: -1e6, max: 1e6 }).map((n) => n * 1.0), weight: 1 },
    { arbitrary: fc.integer({ min: 0, max: 1e6 }).map((n) => n / 1e6), weight: 2 },
    { arbitrary: fc.double({ min: -1e-300, max: 1e-300, noNaN: true }), weight: 1 },
  );
}

/** Strings with control chars, DEL, U+2028/9, BOM, astral chars, quotes and backslashes (no lone surrogates). */
export function unicodeString(opts: { maxLength?: number } = {}): fc.Arbitrary<string> {
  const special = fc.constantFrom(
    "\u0000", "\u0001", "\b", "\t", "\n", "\u000b", "\f", "\r", "\u001b", "\u001f", "\u007f", "\u0080", "\u0085", "\u009f",
    "\u00a0", "\u00e9", "\u2028", "\u2029", "\ufeff", "\ufffd", "\uffff", "\u{1F600}", "\u{10FFFF}", "\u{1D11E}", '"', "\\", "/",
    "</script>", " ", "\u3000", "e\u0301",
  );
  const unit = fc.oneof(
    { arbitrary: special, weight: 3 },
    { arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }), weight: 3 },
    { arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 1 }), weight: 4 },
  );
  return fc.array(unit, { maxLength: opts.maxLength ?? 24 }).map((xs) => xs.join(""));
}

export interface ObservationCase {
  text: string;
  /** null for a valid observation, else the malformation applied */
  malformation: Malformation | null;
  /** the observation_id of the underlying valid observation */
  observationId: string;
}

/** One observation as JSON text (valid in ~60% of cases, otherwise malformed), with metadata. */
export function observationCase(opts: { validRate?: number } = {}): fc.Arbitrary<ObservationCase> {
  const validRate = opts.validRate ?? 0.6;
  return fc
    .record({
      seed: fc.noBias(fc.integer({ min: 0, max: 0x7fffffff })),
      valid: fc.noBias(fc.integer({ min: 0, max: 9999 })).map((x) => x < validRate * 10000),
      malformation: fc.constantFrom(...MALFORMATIONS),
      exotic: fc.boolean(),
    })
    .map(({ seed, valid, malformation, exotic }) => {
      const rng = new Rng(seed);
      const u: Universe = {
        scope: rng.pick([...SCOPES, OTHER_SCOPE]),
        retrieval: rng.pick(RETRIEVALS),
        policy: rng.pick(POLICIES),
        digests: digestPool(rng, 20),
        receipts: [`rma_${rng.hex(64)}`, "receipt:1"],
        evalCounter: rng.int(0, 99),
      };
      const subj = makeSubjects(rng, u, 1, !exotic)[0] as Subject;
      const spec = makeSpec(rng, u, subj, new Set());
      const style: EmitStyle = exotic
        ? { pad: 0.3, shuffle: 0.8, lexeme: 0.7, coerce: 0.4, dupKey: 0.05, timestamps: { exotic: 0.9 } }
        : { pad: 0.03, shuffle: 0.2, lexeme: 0.1, coerce: 0, dupKey: 0, timestamps: { exotic: 0.2 } };
      const obj = emitObservation(rng, spec, spellInstant(rng, instantFromRng(rng), style.timestamps), style);
      const tree = valid ? obj : malform(rng, obj, spec, malformation);
      const ser: SerializeStyle = exotic && rng.chance(0.3) ? { asciiOnly: true } : {};
      return { text: serializeTree(tree, ser), malformation: valid ? null : malformation, observationId: spec.observation_id };
    });
}

// ---------------------------------------------------------------------------
// Byte order marks (cli-bom.ref.spec.ts): the same text as the bytes of a
// file or a record value, with or without a UTF-8 BOM where a decoder might
// drop it (at the start) or not (after whitespace, or a second one).
// ---------------------------------------------------------------------------

export const BOM_PLACEMENTS = ["none", "start", "twice", "after_space", "start_crlf"] as const;
export type BomPlacement = (typeof BOM_PLACEMENTS)[number];

export interface BomBytes {
  placement: BomPlacement;
  bytes: Buffer;
}

/** `text` as UTF-8 bytes, a BOM placed as named (start_crlf: a BOM and CRLF line ends). */
export function placeBom(text: string, placement: BomPlacement): Buffer {
  const bom = "\ufeff";
  const body =
    placement === "start" ? bom + text
    : placement === "twice" ? bom + bom + text
    : placement === "after_space" ? ` ${bom}${text}`
    : placement === "start_crlf" ? bom + text.replace(/\n/g, "\r\n") + "\r\n"
    : text;
  return Buffer.from(body, "utf8");
}

/** Texts of `arb` as bytes: half with no BOM, half with one placed somewhere. */
export function withBom(arb: fc.Arbitrary<string>): fc.Arbitrary<BomBytes> {
  const placement = fc.oneof({ arbitrary: fc.constant<BomPlacement>("none"), weight: 4 }, { arbitrary: fc.constantFrom<BomPlacement>(...BOM_PLACEMENTS.slice(1)), weight: 4 });
  return fc.tuple(arb, placement).map(([text, p]) => ({ placement: p, bytes: placeBom(text, p) }));
}
