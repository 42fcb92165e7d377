/**
 * A kept observation (shelved-observation.ts) is its original to every
 * reader: each field, the rebuilt object (in the normalized property order)
 * and its canonical JSON equal the original's, however many share a shelf,
 * whatever characters and lengths its strings have, and after the shelf has
 * grown past where it started. Its version's fingerprint, shelved with it when
 * of the contract's form, reads back as it was given.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { contextOfObservation } from "../../src/core/index.js";
import { observationJson } from "../../src/core/observation-json.js";
import type { Observation } from "../../src/core/observation-model.js";
import { ownedContext } from "../../src/core/owned-observation.js";
import { ObservationShelf, ShelvedObservation } from "../../src/core/shelved-observation.js";
import { observation } from "../support/fixtures.js";

const FIELDS = [
  "schema_version", "observation_id", "scope", "application_receipt_id", "memory_ref_digests", "retrieval_snapshot_ref",
  "policy_snapshot_ref", "outcome_ref", "utility_label", "attribution_level", "evidence_basis", "confidence", "reason_codes",
  "evidence_refs", "evaluator_ref", "evaluation_version", "created_at", "grants_new_action_authority",
  "provider_write_performed", "external_writes_performed", "raw_content_captured",
] as const;

const base = observation({ reason_codes: ["signal:one"], evidence_refs: ["evidence:1"] });
const context = ownedContext(contextOfObservation(base, "memory_utility_reducer_v0"));

/** `base` with the shelved fields replaced (the shelf does not validate: any strings go). */
function variant(fields: Partial<Pick<Observation, "application_receipt_id" | "outcome_ref" | "evaluator_ref" | "evaluation_version" | "evidence_refs" | "memory_ref_digests" | "reason_codes">>, i: number): Observation {
  return { ...base, ...fields, observation_id: `muo_${String(i).padStart(64, "0")}`, created_at: `2026-11-01T00:00:${String(i % 60).padStart(2, "0")}Z` };
}

function expectSame(kept: ShelvedObservation, original: Observation): void {
  for (const field of FIELDS) expect(kept[field], field).toStrictEqual(original[field]);
  expect(kept.full()).toStrictEqual(original);
  expect(Object.keys(kept.full())).toEqual(Object.keys(original));
  expect(observationJson(kept)).toBe(observationJson(original));
}

describe("a shelved observation", () => {
  it("equals its original in every field, with ASCII, non-ASCII, long and empty values, many to one shelf", () => {
    const text = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.string({ unit: "binary", maxLength: 40 }), // any code point
      fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 40 }), // any UTF-16 unit, lone surrogates too
      fc.string({ minLength: 120, maxLength: 300 }), // a length of two varint bytes
    );
    const list = fc.array(text, { maxLength: 16 });
    fc.assert(
      fc.property(
        fc.array(fc.record({ application_receipt_id: text, outcome_ref: text, evaluator_ref: text, evaluation_version: text, evidence_refs: list, memory_ref_digests: list, reason_codes: list }), { minLength: 1, maxLength: 40 }),
        (rows) => {
          const shelf = new ObservationShelf(context);
          const originals = rows.map((fields, i) => variant(fields, i));
          const kept = originals.map((o) => new ShelvedObservation(o, false, shelf));
          originals.forEach((o, i) => expectSame(kept[i]!, o)); // read after all were written: the shelf grew meanwhile
        },
      ),
      { numRuns: 200 },
    );
  });

  it("keeps a string whose length takes three varint bytes, and what follows it", () => {
    const shelf = new ObservationShelf(context);
    const long = variant({ outcome_ref: "o".repeat(20_000), reason_codes: ["r".repeat(16_384), "é\ud800"] }, 1);
    const next = variant({ evaluator_ref: "evaluator:after" }, 2);
    const [a, b] = [new ShelvedObservation(long, false, shelf), new ShelvedObservation(next, false, shelf)];
    expectSame(a, long);
    expectSame(b, next);
  });

  it("after a string that is not ASCII starts one over, leaves no stray bytes for the next", () => {
    const shelf = new ObservationShelf(context);
    const originals = [
      variant({ reason_codes: ["ascii", "then \u00e9"] }, 1), // its last string turns the write over
      variant({}, 2),
      variant({ application_receipt_id: "\u4e2d\ud83d\ude00" }, 3), // its first one does
      variant({}, 4),
    ];
    const kept = originals.map((o) => new ShelvedObservation(o, false, shelf));
    originals.forEach((o, i) => expectSame(kept[i]!, o));
  });

  it("keeps its version's fingerprint, of the contract's form, before its fields: read back equal, told apart from any other", () => {
    const hex = fc.stringMatching(/^[0-9a-f]{64}$/);
    const text = fc.oneof(fc.string({ maxLength: 20 }), fc.string({ unit: "binary", maxLength: 20 })); // a non-ASCII one starts the fields over
    fc.assert(
      fc.property(fc.array(fc.record({ digits: hex, outcome_ref: text, flip: fc.nat(63) }), { minLength: 1, maxLength: 30 }), (rows) => {
        const shelf = new ObservationShelf(context);
        const originals = rows.map((r, i) => variant({ outcome_ref: r.outcome_ref }, i));
        const kept = originals.map((o, i) => new ShelvedObservation(o, false, shelf, `muof_${rows[i]!.digits}`));
        originals.forEach((o, i) => {
          const { digits, flip } = rows[i]!;
          const k = kept[i]!;
          expectSame(k, o);
          expect(k.holdsFingerprint).toBe(true);
          expect(k.shelvedFingerprint()).toBe(`muof_${digits}`);
          expect(k.hasFingerprint(`muof_${digits}`)).toBe(true);
          // One digit other, anywhere: another payload's.
          const other = digits.slice(0, flip) + (digits[flip] === "0" ? "1" : "0") + digits.slice(flip + 1);
          expect(k.hasFingerprint(`muof_${other}`)).toBe(false);
          expect(k.hasFingerprint(`muof_${digits}0`)).toBe(false);
        });
      }),
      { numRuns: 200 },
    );
  });

  it("keeps no fingerprint of another form, and the next observation's fields and fingerprint read right after one", () => {
    const digits = "0123456789abcdef".repeat(4);
    const others = [`muof_${digits.toUpperCase()}`, `muof_${digits.slice(1)}`, `muof_${digits}0`, `muo_${digits}0`, `muof_${digits.slice(0, 63)}g`, ""];
    const shelf = new ObservationShelf(context);
    const rows = others.flatMap((fingerprint, i) => [
      { o: variant({ evaluator_ref: `evaluator:${i}` }, 2 * i), fingerprint },
      { o: variant({ evaluator_ref: `next:${i}` }, 2 * i + 1), fingerprint: `muof_${digits}` },
    ]);
    const kept = rows.map(({ o, fingerprint }) => new ShelvedObservation(o, false, shelf, fingerprint));
    rows.forEach(({ o, fingerprint }, i) => {
      expectSame(kept[i]!, o);
      expect(kept[i]!.holdsFingerprint, fingerprint).toBe(fingerprint === `muof_${digits}`);
      if (kept[i]!.holdsFingerprint) expect(kept[i]!.shelvedFingerprint()).toBe(fingerprint);
    });
    expect(new ShelvedObservation(base, false, shelf).holdsFingerprint).toBe(false); // none given
  });

  it("takes an earlier delivery's created_at, and is rebuilt with it even just after a rebuild", () => {
    const shelf = new ObservationShelf(context);
    const later = variant({}, 7);
    const kept = new ShelvedObservation(later, false, shelf);
    expect(kept.full().created_at).toBe(later.created_at); // rebuilt, and remembered as the last one
    const earlier = { ...later, created_at: "2026-10-31T23:59:59.5+00:00" };
    kept.redate(earlier.created_at, false);
    expectSame(kept, earlier);
  });

  it("holds its shelved fields on the shelf, not on itself", () => {
    const shelf = new ObservationShelf(context);
    const kept = new ShelvedObservation(base, false, shelf);
    expect(shelf.capacity).toBeGreaterThanOrEqual(base.application_receipt_id.length + base.outcome_ref.length);
    expect(Object.keys(kept)).not.toContain("application_receipt_id");
    expect(kept.scope).toBe(context.scope); // the context's, not a copy
  });
});
