/**
 * The observation fast path (observation-reader.ts) against the slow path it
 * stands in for: whenever the reader accepts a text, parsePyJson +
 * validateObservation + observationFingerprint must give the same observation
 * and fingerprint; whenever the slow path refuses, the reader must refuse too.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  canonicalJson,
  observationFingerprint,
  observationIdOf,
  observationToPy,
  parsePyJson,
  validateObservation,
  type Observation,
  type PyValue,
} from "../../src/core/index.js";
import {
  ReadObservation,
  observationListReader,
  readCanonicalObservation,
  readObservation,
  readObservationDocument,
  readerEnd,
} from "../../src/core/observation-reader.js";
import { readObservationBytes } from "../../src/core/observation-bytes.js";
import { parsePyJsonWith } from "../../src/core/pyjson-parse.js";
import { simulate } from "../../producers/simulation.js";
import { observationCase, unicodeString } from "../support/arbitraries.js";
import { DIGEST_A, DIGEST_B, observation } from "../support/fixtures.js";

type Slow = { ok: true; observation: Observation; fingerprint: string } | { ok: false; error: string };

function slowPath(text: string): Slow {
  try {
    const observation = validateObservation(parsePyJson(text));
    return { ok: true, observation, fingerprint: observationFingerprint(observation) };
  } catch (err) {
    return { ok: false, error: String(err) };
  }
}

/**
 * The reader's verdict on a document agrees with the slow path's (and so do its canonical tier's and its bytes
 * tier's). The bytes tier takes exactly the documents that are one canonical observation in ASCII, with what
 * the text tiers read from them.
 */
function expectAgrees(text: string): ReadObservation | null {
  const canonical = readCanonicalObservation(text, 0);
  if (canonical !== null) expectSame(canonical.read, text.slice(0, canonical.end));
  const fast = readObservationDocument(text);
  if (fast !== null) expectSame(fast, text);
  if (canonical !== null && canonical.end === text.length) expect(fast).toStrictEqual(canonical.read);
  expectBytesAgree(text, fast);
  return fast;
}

function expectBytesAgree(text: string, fast: ReadObservation | null): void {
  const bytes = Buffer.from(text, "utf8");
  const read = readObservationBytes(bytes);
  const start = /^[\t\n\r ]*/.exec(text)![0].length;
  const canonical = readCanonicalObservation(text, start);
  const whole = canonical !== null && /^[\t\n\r ]*$/.test(text.slice(canonical.end));
  expect(read !== null, `the bytes tier ${read === null ? "refused" : "took"}: ${text}`).toBe(whole && /^[\x00-\x7f]*$/.test(text));
  if (read === null) return;
  expect(read.owned).toBe(true);
  expect(read.observation).toStrictEqual(fast!.observation);
  expect(Object.keys(read.observation)).toEqual(Object.keys(fast!.observation));
  expect(Object.is(read.observation.confidence, fast!.observation.confidence)).toBe(true);
  expect(read.fingerprint).toBe(fast!.fingerprint);
}

function expectSame(fast: ReadObservation, text: string): void {
  const slow = slowPath(text);
  expect(slow.ok, `the reader accepted what the slow path refuses: ${text}`).toBe(true);
  if (!slow.ok) return;
  expect(fast.observation).toStrictEqual(slow.observation);
  expect(Object.keys(fast.observation)).toEqual(Object.keys(slow.observation));
  expect(Object.is(fast.observation.confidence, slow.observation.confidence)).toBe(true);
  expect(fast.fingerprint).toBe(slow.fingerprint);
}

const simulated = [...simulate({ agents: 2, observationsPerAgent: 60, snapshotEvery: 1e9, duplicateRate: 0.1, conflictRate: 0.05, memories: 6, seed: 7 })].map(
  (d) => d.observation,
);
const canonicalTexts = simulated.map((o) => canonicalJson(observationToPy(o)));
const base = observation({ utility_label: "helpful", attribution_level: "set", evidence_basis: "controlled_replay", confidence: 0.5, digests: [DIGEST_A, DIGEST_B], reason_codes: ["b", "a"] });
const baseText = canonicalJson(observationToPy(base));

describe("observation reader: canonical producer texts", () => {
  it("reads every canonical observation a producer writes, and agrees with the slow path", () => {
    for (const text of [...canonicalTexts, baseText]) {
      expect(readCanonicalObservation(text, 0)).not.toBeNull();
      expect(expectAgrees(text)).not.toBeNull();
    }
  });

  it("stops right after the object and leaves surrounding text alone", () => {
    const text = `[ ${baseText} ,1]`;
    const read = readObservation(text, 2);
    expect(read).not.toBeNull();
    expect(readerEnd()).toBe(2 + baseText.length);
  });
});

describe("observation reader: the values records share", () => {
  it("reads each value as itself when more values than the bytes tier's table has slots take turns", () => {
    // 4,500 evaluators (more than the 4,096 slots: some share one), with scopes, refs and reason codes that repeat.
    const made = Array.from({ length: 4_500 }, (_, i) =>
      observation({
        evaluator_ref: `evaluator:${i}`,
        scope: { agent_id: `agent:${i % 97}`, project_id: `project:${i % 5}`, corpus_id: "corpus:1", surface_id: `surface:${i % 3}` },
        retrieval: `retrieval:${i % 7}`,
        utility_label: "helpful",
        attribution_level: "set",
        evidence_basis: "controlled_replay",
        digests: [DIGEST_A, DIGEST_B],
        reason_codes: [`r${i % 11}`, `s${i % 13}`],
        confidence: [0.5, 0.25, 0.1, 1][i % 4],
      }),
    );
    const texts = made.map((o) => Buffer.from(canonicalJson(observationToPy(o))));
    for (const pass of [0, 1]) {
      for (let i = 0; i < made.length; i++) {
        const read = readObservationBytes(texts[(i * 7 + pass) % made.length]!)!.observation;
        expect(read).toStrictEqual(made[(i * 7 + pass) % made.length]);
      }
    }
  });
});

/** Replace the first occurrence of `from` (which must exist) in the text. */
function edit(text: string, from: string, to: string): string {
  expect(text.includes(from)).toBe(true);
  return text.replace(from, to);
}

/** JSON whitespace around every structural character outside strings. */
function spaced(text: string): string {
  let out = "";
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      out += ch;
      if (ch === "\\") out += text[++i];
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      out += ch;
      inString = true;
    } else out += ",:{}[]".includes(ch) ? ` \n${ch}\t\r ` : ch;
  }
  return out;
}

/** A canonical text whose outcome ref is `length` characters long, with the id of its content (past 200 the validator refuses it). */
function longRefText(length: number): string {
  return withRef(length, (ref) => ({ outcome_ref: ref }));
}

/** A canonical text with one ref `length` characters long where `place` puts it, with the id of its content. */
function withRef(length: number, place: (ref: string) => Partial<typeof base>): string {
  return withRefText("r".padEnd(length, "x"), place);
}

/** A canonical text with `ref` where `place` puts it, with the id of its content (the validator may refuse the ref). */
function withRefText(ref: string, place: (ref: string) => Partial<typeof base>): string {
  const changed = { ...base, ...place(ref) };
  return canonicalJson(observationToPy({ ...changed, observation_id: observationIdOf(changed) }));
}

/** Every place an opaque ref goes (the id aside: its length is fixed), each field's own. */
const REF_PLACES: [string, (ref: string) => Partial<typeof base>][] = [
  ["application_receipt_id", (ref) => ({ application_receipt_id: ref })],
  ["evaluation_version", (ref) => ({ evaluation_version: ref })],
  ["evaluator_ref", (ref) => ({ evaluator_ref: ref })],
  ["outcome_ref", (ref) => ({ outcome_ref: ref })],
  ["policy_snapshot_ref", (ref) => ({ policy_snapshot_ref: ref })],
  ["retrieval_snapshot_ref", (ref) => ({ retrieval_snapshot_ref: ref })],
  ["scope.agent_id", (ref) => ({ scope: { ...base.scope, agent_id: ref } })],
  ["scope.corpus_id", (ref) => ({ scope: { ...base.scope, corpus_id: ref } })],
  ["scope.project_id", (ref) => ({ scope: { ...base.scope, project_id: ref } })],
  ["scope.surface_id", (ref) => ({ scope: { ...base.scope, surface_id: ref } })],
  ["an evidence ref", (ref) => ({ evidence_refs: [...base.evidence_refs, ref].sort() })],
  ["a reason code", (ref) => ({ reason_codes: [...base.reason_codes, ref].sort() })],
];

describe("observation reader: edge texts agree with the slow path", () => {
  const conf = `"confidence":0.5`;
  const cases: [string, string][] = [
    ["int confidence 1", edit(baseText, conf, `"confidence":1`)],
    ["int confidence 0", edit(baseText, conf, `"confidence":0`)],
    ["int confidence -0", edit(baseText, conf, `"confidence":-0`)],
    ["float -0.0", edit(baseText, conf, `"confidence":-0.0`)],
    ["5e-324", edit(baseText, conf, `"confidence":5e-324`)],
    ["1e16", edit(baseText, conf, `"confidence":1e16`)],
    ["1E0", edit(baseText, conf, `"confidence":1E0`)],
    ["0.50", edit(baseText, conf, `"confidence":0.50`)],
    ["5e-1", edit(baseText, conf, `"confidence":5e-1`)],
    ["0.1e1", edit(baseText, conf, `"confidence":0.1e1`)],
    ["1.0000000000000001", edit(baseText, conf, `"confidence":1.0000000000000001`)],
    ["big int", edit(baseText, conf, `"confidence":${"1".padEnd(400, "0")}`)],
    ["huge int", edit(baseText, conf, `"confidence":${"1".padEnd(5000, "0")}`)],
    ["NaN", edit(baseText, conf, `"confidence":NaN`)],
    ["Infinity", edit(baseText, conf, `"confidence":Infinity`)],
    ["-Infinity", edit(baseText, conf, `"confidence":-Infinity`)],
    ["bool confidence", edit(baseText, conf, `"confidence":true`)],
    ["string confidence", edit(baseText, conf, `"confidence":"0.5"`)],
    ["1.", edit(baseText, conf, `"confidence":1.`)],
    ["01", edit(baseText, conf, `"confidence":01`)],
    ["1e", edit(baseText, conf, `"confidence":1e`)],
    ["no confidence", edit(baseText, conf, `"confidence":`)],
    ["escaped key", edit(baseText, `"scope":`, `"\\u0073cope":`)],
    ["escaped value", edit(baseText, `"outcome_ref":"outcome:1"`, `"outcome_ref":"outcome\\u003a1"`)],
    ["escaped enum", edit(baseText, `"utility_label":"helpful"`, `"utility_label":"help\\u0066ul"`)],
    ["padded ref", edit(baseText, `"outcome_ref":"outcome:1"`, `"outcome_ref":" outcome:1"`)],
    ["padded enum", edit(baseText, `"utility_label":"helpful"`, `"utility_label":"helpful\\u00a0"`)],
    ["int ref", edit(baseText, `"evaluator_ref":"evaluator:1"`, `"evaluator_ref":123`)],
    ["non-ASCII ref", edit(baseText, `"outcome_ref":"outcome:1"`, `"outcome_ref":"outcomé:1"`)],
    ["astral created_at", edit(baseText, `"created_at":"2026-08-15T00:00:00Z"`, `"created_at":"2026-08-15T00:00:00Z\u{1F600}"`)],
    ["surrogate escape created_at", edit(baseText, `"created_at":"2026-08-15T00:00:00Z"`, `"created_at":"2026-08-15T00:00:00\\ud800Z"`)],
    ["lone surrogate created_at", edit(baseText, `"created_at":"2026-08-15T00:00:00Z"`, `"created_at":"2026-08-15T00:00:00\ud800Z"`)],
    ["offset created_at", edit(baseText, `"created_at":"2026-08-15T00:00:00Z"`, `"created_at":"2026-08-15 01:00:00+01:00"`)],
    ["naive created_at", edit(baseText, `"created_at":"2026-08-15T00:00:00Z"`, `"created_at":"2026-08-15T00:00:00"`)],
    ["padded created_at", edit(baseText, `"created_at":"2026-08-15T00:00:00Z"`, `"created_at":"2026-08-15T00:00:00Z "`)],
    ["control char", edit(baseText, `"outcome_ref":"outcome:1"`, `"outcome_ref":"outcome:1\u0001"`)],
    ["unsorted digests", edit(baseText, `["${DIGEST_A}","${DIGEST_B}"]`, `["${DIGEST_B}","${DIGEST_A}"]`)],
    ["duplicate digests", edit(baseText, `["${DIGEST_A}","${DIGEST_B}"]`, `["${DIGEST_A}","${DIGEST_A}"]`)],
    ["uppercase digest", edit(baseText, DIGEST_B, DIGEST_B.toUpperCase())],
    ["sha256 digest", edit(baseText, `"${DIGEST_B}"`, `"sha256:${"ab".repeat(32)}"`)],
    ["empty digests", edit(baseText, `["${DIGEST_A}","${DIGEST_B}"]`, `[]`)],
    ["unsorted reason codes", edit(baseText, `"reason_codes":["a","b"]`, `"reason_codes":["b","a"]`)],
    ["duplicate reason codes", edit(baseText, `"reason_codes":["a","b"]`, `"reason_codes":["a","a"]`)],
    ["13 reason codes", edit(baseText, `"reason_codes":["a","b"]`, `"reason_codes":[${Array.from({ length: 13 }, (_, i) => `"r${String(i).padStart(2, "0")}"`).join(",")}]`)],
    ["whitespace everywhere", spaced(baseText)],
    ["leading and trailing whitespace", ` \n${baseText}\r\n `],
    ["BOM", `\ufeff${baseText}`],
    ["space then BOM", ` \ufeff${baseText}`],
    ["trailing garbage", `${baseText}x`],
    ["two objects", `${baseText} ${baseText}`],
    ["duplicate key, last valid", edit(baseText, `"outcome_ref":`, `"outcome_ref":"other:1","outcome_ref":`)],
    ["duplicate key, last invalid", edit(baseText, `,"policy_snapshot_ref"`, `,"outcome_ref":" x","policy_snapshot_ref"`)],
    ["duplicate scope key", edit(baseText, `"scope":{`, `"scope":{"agent_id":"x",`)],
    ["unknown key", edit(baseText, `"scope":`, `"scope2":1,"scope":`)],
    ["__proto__ key", edit(baseText, `"scope":`, `"__proto__":1,"scope":`)],
    ["missing key", edit(baseText, `,"raw_content_captured":false`, ``)],
    ["flag true", edit(baseText, `"raw_content_captured":false`, `"raw_content_captured":true`)],
    ["flag 0", edit(baseText, `"raw_content_captured":false`, `"raw_content_captured":0`)],
    ["wrong schema", edit(baseText, `"memory_utility_observation_v0"`, `"memory_utility_observation_v1"`)],
    ["wrong id", edit(baseText, base.observation_id, base.observation_id.replace(/.$/, (c) => (c === "0" ? "1" : "0")))],
    ["scope with extra key", edit(baseText, `"scope":{`, `"scope":{"extra":"x",`)],
    ["scope not an object", edit(baseText, /"scope":\{[^}]*\}/.exec(baseText)![0], `"scope":[]`)],
    ["200-character ref", canonicalJson(observationToPy(observation({ outcome_ref: "o".padEnd(200, "x") })))],
    ["201-character ref, its id made to match", longRefText(201)],
    ["sha256 digest with 63 hex digits", edit(baseText, `"${DIGEST_B}"`, `"sha256:${"ab".repeat(31)}a"`)],
    ["id with a digit more", edit(baseText, `"${base.observation_id}"`, `"${base.observation_id}0"`)],
    // Digests that are not canonical, each with the id of its content (the id hashes the digests).
    ...["ABCDEF0123456789", "abcdef012345678", "abcdef01234567890", "abcdef012345678g", "abcdef01234567_8", `sha256:${"ab".repeat(31)}a`, `sha256:${"AB".repeat(32)}`].map(
      (d): [string, string] => [`digest ${d}, its id matched`, withRefText(d, (ref) => ({ memory_ref_digests: [DIGEST_A, ref].sort() }))],
    ),
    ["truncated", baseText.slice(0, -1)],
    ["empty", ""],
    ["not an object", "[]"],
  ];
  // Non-canonical but plain: the reader takes these itself (and must still agree).
  const READ = new Set([
    "int confidence 1",
    "int confidence 0",
    "int confidence -0",
    "float -0.0",
    "5e-324",
    "1E0",
    "0.50",
    "5e-1",
    "0.1e1",
    "1.0000000000000001",
    "offset created_at",
    "unsorted digests",
    "unsorted reason codes",
    "whitespace everywhere",
    "leading and trailing whitespace",
  ]);
  for (const [field, place] of REF_PLACES) {
    // 200 is read; 201 is refused, as the slow path refuses it.
    for (const length of [200, 201]) cases.push([`${field} of ${length} characters`, withRef(length, place)]);
    READ.add(`${field} of 200 characters`);
    // An opaque ref starts with a letter or a digit; `_.:-` may follow. A ref that is not ASCII, its id matched.
    for (const c of "_.:-") {
      cases.push([`${field} starting with ${c}`, withRefText(`${c}ref`, place)]);
      cases.push([`${field} with ${c} inside`, withRefText(`r${c}ef`, place)]);
      READ.add(`${field} with ${c} inside`);
    }
    cases.push([`${field} not ASCII`, withRefText("r\u00e9f", place)]);
  }
  for (const [name, text] of cases) {
    it(name, () => {
      const read = expectAgrees(text);
      if (READ.has(name)) expect(read).not.toBeNull();
    });
  }

  it("reorders keys and lists without changing the result", () => {
    const parsed = parsePyJson(baseText) as Record<string, PyValue>;
    const keys = Object.keys(parsed).reverse();
    const text = "{" + keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(parsed[k]!)}`).join(",") + "}";
    expect(expectAgrees(text)).not.toBeNull();
  });
});

describe("observation reader: random texts agree with the slow path", () => {
  it("valid, malformed and exotic observations", () => {
    let read = 0;
    fc.assert(
      fc.property(observationCase({ validRate: 0.7 }), (c) => {
        if (expectAgrees(c.text) !== null) read++;
      }),
      { numRuns: 1500 },
    );
    expect(read).toBeGreaterThan(0);
  });

  it("random edits of a canonical text", () => {
    const edits = fc.record({
      at: fc.nat(),
      drop: fc.integer({ min: 0, max: 3 }),
      insert: fc.oneof(unicodeString({ maxLength: 3 }), fc.constantFrom(" ", "\\", '"', "\\u0041", "0", "1", ".", "e", ",", "]", "}", "\ud800", "\u{10000}")),
    });
    fc.assert(
      fc.property(fc.constantFrom(...canonicalTexts.slice(0, 20), baseText), edits, (text, e) => {
        const at = e.at % (text.length + 1);
        expectAgrees(text.slice(0, at) + e.insert + text.slice(at + e.drop));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("parsePyJsonWith the observation list reader", () => {
  /** Same value as parsePyJson, with read observations standing for what validation makes of the parsed ones. */
  function expectSameParse(text: string): void {
    let slow: PyValue | Error;
    let fast: PyValue | Error;
    try {
      slow = parsePyJson(text);
    } catch (err) {
      slow = err as Error;
    }
    try {
      fast = parsePyJsonWith(text, observationListReader);
    } catch (err) {
      fast = err as Error;
    }
    if (slow instanceof Error || fast instanceof Error) {
      expect(fast instanceof Error && fast.constructor).toBe(slow instanceof Error && slow.constructor);
      expect((fast as Error).message).toBe((slow as Error).message);
      return;
    }
    const a = slow as Record<string, PyValue>;
    const b = fast as Record<string, PyValue>;
    const list = b.observations as PyValue[] | undefined;
    if (Array.isArray(list)) {
      const slowList = a.observations as PyValue[];
      expect(list.length).toBe(slowList.length);
      list.forEach((item, i) => {
        if (!(item instanceof ReadObservation)) return expect(item).toStrictEqual(slowList[i]);
        const normalized = validateObservation(slowList[i]);
        expect(item.observation).toStrictEqual(normalized);
        expect(item.fingerprint).toBe(observationFingerprint(normalized));
      });
    }
    expect({ ...b, observations: null }).toStrictEqual({ ...a, observations: null });
  }

  const request = `{"observations":[${canonicalTexts.slice(0, 3).join(",")}, {"x":1}, ${baseText}],"scope":{"observations":[${baseText}]}}`;

  it("reads the top-level list only, and parses the rest as parsePyJson does", () => {
    const parsed = parsePyJsonWith(request, observationListReader) as Record<string, PyValue>;
    const list = parsed.observations as PyValue[];
    expect(list.filter((x) => x instanceof ReadObservation)).toHaveLength(4);
    expect(((parsed.scope as Record<string, PyValue>).observations as PyValue[])[0]).not.toBeInstanceOf(ReadObservation);
    expectSameParse(request);
  });

  it("every prefix of a request fails with parsePyJson's error", () => {
    for (let n = 0; n < request.length; n += 7) expectSameParse(request.slice(0, n));
  });

  it("random edits of a request", () => {
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 0, max: 2 }), fc.constantFrom("", " ", "]", "}", ",", "[", "{", '"', "1", "NaN", "\\"), (at, drop, insert) => {
        const i = at % (request.length + 1);
        expectSameParse(request.slice(0, i) + insert + request.slice(i + drop));
      }),
      { numRuns: 2000 },
    );
  });

  it("leaves elements past the reducer's input limit to the scanner", () => {
    const text = `{"observations":[${Array.from({ length: 1030 }, () => baseText).join(",")}]}`;
    const list = (parsePyJsonWith(text, observationListReader) as Record<string, PyValue[]>).observations!;
    expect(list.filter((x) => x instanceof ReadObservation)).toHaveLength(observationListReader.limit);
  });
});
