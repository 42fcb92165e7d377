/**
 * Fast paths of the core against the slow paths they shortcut: each must give
 * exactly the slow path's result on every input it takes.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  canonicalJson,
  observationFingerprint,
  observationIdOf,
  parseContractTimestamp,
  parsePyJson,
  validateObservation,
  type Observation,
} from "../../src/core/index.js";
import { normalizedFingerprint, normalizedObservationId } from "../../src/core/observation.js";
import { quote } from "../../src/core/canonical-json.js";
import { AsciiDigest, sha256Hex } from "../../src/core/digest.js";
import { commonIsoFormat, commonUtcSeconds, fullFromIsoFormat, pyFromIsoFormat, utcMicros } from "../../src/core/iso-timestamp.js";
import { compareOrder } from "../../src/core/ordering.js";
import { isoTimestampText, observationCase, unicodeString } from "../support/arbitraries.js";

describe("quote", () => {
  const edges = ["", "a", '"', "\\", "\u0000", "\u001f", " ", "\u007f", "\u2028", "\u2029", "é", "\ud800", "\udc00", "\ud800\udc00", "\u{1F600}", "\uffff", "a\ud800b"];
  it("is JSON.stringify on edge strings", () => {
    for (const s of edges) expect(quote(s)).toBe(JSON.stringify(s));
  });
  it("is JSON.stringify on random strings (lone surrogates included)", () => {
    fc.assert(
      fc.property(fc.oneof(unicodeString(), fc.string({ unit: "binary" }), fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) })), (s) => {
        expect(quote(s)).toBe(JSON.stringify(s));
      }),
      { numRuns: 3000 },
    );
  });
  it("keeps canonicalJson escaping as Python does", () => {
    expect(canonicalJson("é\u2028\u007f\u0001\"\\\n\t")).toBe('"é\u2028\u007f\\u0001\\"\\\\\\n\\t"');
  });
});

describe("AsciiDigest", () => {
  it("hashes pieces as sha256Hex hashes their concatenation", () => {
    const digest = new AsciiDigest();
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "grapheme-ascii", maxLength: 3000 }), { maxLength: 6 }), (pieces) => {
        digest.start();
        for (const p of pieces) digest.put(p).char(0x2c);
        expect(digest.hex()).toBe(sha256Hex(pieces.map((p) => p + ",").join("")));
      }),
      { numRuns: 300 },
    );
  });

  it("hashes text pieces (any UTF-16: non-ASCII, astral, lone surrogates) as sha256Hex hashes their concatenation", () => {
    const digest = new AsciiDigest();
    const text = fc.oneof(fc.string({ unit: "grapheme", maxLength: 2000 }), fc.string({ unit: "binary", maxLength: 2000 }), fc.constantFrom("\ud800", "a\udfff\ud83d\ude00", "é中"));
    fc.assert(
      fc.property(fc.array(fc.tuple(text, fc.boolean()), { maxLength: 6 }), (pieces) => {
        digest.start();
        for (const [p, ascii] of pieces) (ascii ? digest.put("p:") : digest.putText("t:")).putText(p);
        expect(digest.hex()).toBe(sha256Hex(pieces.map(([p, ascii]) => (ascii ? "p:" : "t:") + p).join("")));
      }),
      { numRuns: 300 },
    );
  });
});

/** Timestamps in (and near) the common shape: random digits, so out-of-range fields too. */
function commonShaped(): fc.Arbitrary<string> {
  const digits = (n: number) => fc.array(fc.constantFrom(..."0123456789"), { minLength: n, maxLength: n }).map((d) => d.join(""));
  const edgeNumber = (n: number, edges: string[]) => fc.oneof(digits(n), fc.constantFrom(...edges));
  return fc
    .tuple(
      edgeNumber(4, ["0000", "0001", "2000", "1900", "2024", "9999"]),
      edgeNumber(2, ["00", "01", "02", "12", "13"]),
      edgeNumber(2, ["00", "01", "28", "29", "30", "31", "32"]),
      fc.constantFrom("T", " ", "t", "_"),
      edgeNumber(2, ["00", "23", "24"]),
      edgeNumber(2, ["00", "59", "60"]),
      edgeNumber(2, ["00", "59", "60"]),
      fc.oneof(fc.constant(""), digits(1), digits(3), digits(6), digits(7)).map((f) => (f === "" ? "" : "." + f)),
      fc.oneof(fc.constantFrom("", "Z", "+00:00", "-00:00", "+23:59", "-24:00", "+24:00", "+00:99", "z"), fc.tuple(fc.constantFrom("+", "-"), digits(2), digits(2)).map(([s, h, m]) => `${s}${h}:${m}`)),
    )
    .map((parts) => parts.join(""));
}

describe("common-shape timestamps", () => {
  it("parse exactly as the full port of CPython's parser", () => {
    fc.assert(
      fc.property(fc.oneof(commonShaped(), isoTimestampText()), (text) => {
        const common = commonIsoFormat(text);
        if (common !== undefined) expect(common).toStrictEqual(fullFromIsoFormat(text));
        expect(pyFromIsoFormat(text)).toStrictEqual(fullFromIsoFormat(text));
      }),
      { numRuns: 5000 },
    );
  });

  it("parse as the contract's Z replacement then the full parser", () => {
    fc.assert(
      fc.property(fc.oneof(commonShaped(), isoTimestampText()), (text) => {
        expect(parseContractTimestamp(text)).toStrictEqual(fullFromIsoFormat(text.replaceAll("Z", "+00:00")));
      }),
      { numRuns: 5000 },
    );
  });

  it("give their UTC instant without an object exactly when they name a moment with an offset", () => {
    const EPOCH_SECONDS = 719_163 * 86_400; // 0001-01-01 to 1970-01-01
    const shape = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?(Z|[+-]\d\d:\d\d)$/;
    let instants = 0;
    fc.assert(
      fc.property(fc.oneof(commonShaped(), isoTimestampText()), (text) => {
        const seconds = commonUtcSeconds(text);
        const micros = utcMicros();
        const m = shape.exec(text);
        const full = fullFromIsoFormat(text.replaceAll("Z", "+00:00"));
        if (m === null || full === null || full.offsetMicros === null) {
          expect(seconds, text).toBeNaN();
          return;
        }
        // Date.parse is exact to the millisecond; offsets are whole minutes, so the fraction is the text's own.
        const ms = Date.parse(`${m[1]}T${m[2]}${m[4]}`);
        expect(seconds, text).toBe(Math.floor(ms / 1000) + EPOCH_SECONDS);
        expect(micros, text).toBe(Number((m[3] ?? "").padEnd(6, "0")));
        instants++;
      }),
      { numRuns: 5000 },
    );
    expect(instants).toBeGreaterThan(300);
  });

  it("order observations by instant, then raw text, then id, across shapes", () => {
    const at = (created_at: string, observation_id = "muo_a") => ({ created_at, observation_id });
    // Later instant first in text order; the same instant spelled two ways; a shape the common path leaves to the full parser.
    expect(compareOrder(at("2026-08-15T01:00:00+02:00"), at("2026-08-14T23:30:00Z"))).toBeLessThan(0);
    expect(compareOrder(at("2026-08-15T00:00:00.000001Z"), at("2026-08-15T00:00:00Z"))).toBeGreaterThan(0);
    expect(Math.sign(compareOrder(at("2026-08-15T00:00:00+00:00"), at("2026-08-15T00:00:00Z")))).toBe(-1); // "+" < "Z"
    expect(compareOrder(at("2026-W33-6T00:00:00Z"), at("2026-08-15T00:00:01Z"))).toBeLessThan(0); // ISO week date: 2026-08-15
    expect(compareOrder(at("2026-08-15T00:00:00Z", "muo_b"), at("2026-08-15T00:00:00Z", "muo_a"))).toBeGreaterThan(0);
  });

  it("take the common path for the usual spellings", () => {
    for (const t of ["2026-08-15T00:00:00Z", "2026-08-15 00:00:00+00:00", "2026-08-15T00:00:00.123456-05:30", "2024-02-29T23:59:59.5+01:00"]) {
      expect(commonIsoFormat(t)).toBeTruthy();
    }
    expect(commonIsoFormat("2026-08-15T00:00:00.1234567Z")).toBeUndefined();
    expect(commonIsoFormat("2025-02-29T00:00:00Z")).toBeNull();
  });
});

describe("normalized observation id and fingerprint", () => {
  function expectSameHashes(o: Observation): void {
    expect(normalizedObservationId(o)).toBe(observationIdOf(o));
    expect(normalizedFingerprint(o)).toBe(observationFingerprint(o));
  }

  it("hash what observationIdOf and observationFingerprint hash, for every normalized observation", () => {
    let checked = 0;
    fc.assert(
      fc.property(observationCase({ validRate: 0.9 }), (c) => {
        let o: Observation;
        try {
          o = validateObservation(parsePyJson(c.text));
        } catch {
          return;
        }
        checked++;
        expectSameHashes(o);
      }),
      { numRuns: 800 },
    );
    expect(checked).toBeGreaterThan(0);
  });

  it("agree on edge confidences and list shapes", () => {
    const text = `{"application_receipt_id":"r","attribution_level":"set","confidence":0.5,"created_at":"2026-08-15T00:00:00Z","evaluation_version":"v","evaluator_ref":"e","evidence_basis":"insufficient","evidence_refs":[],"external_writes_performed":false,"grants_new_action_authority":false,"memory_ref_digests":["0123456789abcdef","sha256:${"ab".repeat(32)}"],"observation_id":"x","outcome_ref":"o","policy_snapshot_ref":"p","provider_write_performed":false,"raw_content_captured":false,"reason_codes":["a","b"],"retrieval_snapshot_ref":"q","schema_version":"memory_utility_observation_v0","scope":{"agent_id":"a","corpus_id":"c","project_id":"p","surface_id":"s"},"utility_label":"unknown"}`;
    const base = { ...(parsePyJson(text) as object) } as unknown as Observation;
    for (const confidence of [0, -0, 1, 0.5, 5e-324, 1e-5, 0.1, 0.30000000000000004, 0.9999999999999999]) {
      for (const reasons of [[], ["a"], ["a", "b", "c"]]) expectSameHashes({ ...base, scope: { ...base.scope }, confidence, reason_codes: reasons });
    }
  });
});
