import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  canonicalDigest,
  canonicalJson,
  contextOfObservation,
  emptyIdentityState,
  foldDelivery,
  observationFingerprint,
  observationToPy,
  parsePyJson,
  projectIdentityState,
  reducerIdentity,
  subjectIdOf,
  validateObservation,
  type Observation,
  type PyObject,
} from "../../src/core/index.js";
import { observationIdentityJson, observationJson, historyEntryJson, historyListJson } from "../../src/core/observation-json.js";
import { historyEntry, historyEntryToPy } from "../../src/core/projection.js";
import { assembleParts, assemblePartsLine, computeParts } from "../../src/core/packet-parts.js";
import { IDENTITY_FIELDS } from "../../src/core/observation.js";
import { fragmentText } from "../../src/core/fragment.js";
import { simulate } from "../../producers/simulation.js";
import { conformanceCases } from "../support/conformance.js";
import { quickOnly } from "../support/depth.js";

const observations = [...simulate({ agents: 5, observationsPerAgent: 60, duplicateRate: 0.2, conflictRate: 0.05, snapshotEvery: 25, seed: 5 })].map((d) => d.observation);

describe("direct canonical writers equal the generic canonical JSON", () => {
  it("observations, identities, history entries and subject ids", () => {
    for (const o of observations) {
      expect(observationJson(o)).toBe(canonicalJson(observationToPy(o)));
      expect(observationJson(o, false)).toBe(canonicalJson(observationToPy(o, true)));
      const identity = Object.fromEntries(IDENTITY_FIELDS.map((k) => [k, observationToPy(o)[k]!]));
      expect(observationIdentityJson(o)).toBe(canonicalJson(identity));
      const fp = observationFingerprint(o);
      expect(historyEntryJson(o, fp, "mui_x")).toBe(canonicalJson(historyEntryToPy(historyEntry(o, "mui_x", fp))));
      const subjectIdentity: PyObject =
        o.attribution_level === "none"
          ? { attribution_level: "none", application_receipt_id: o.application_receipt_id, memory_ref_digests: [...o.memory_ref_digests] }
          : { attribution_level: o.attribution_level, memory_ref_digests: [...o.memory_ref_digests] };
      const prefix = o.attribution_level === "none" ? "mul_" : o.attribution_level === "item" ? "mui_" : "mus_";
      expect(subjectIdOf(o)).toBe(canonicalDigest(subjectIdentity, prefix));
    }
  });
});

describe("subject ids", () => {
  it("equal the canonical digest of the subject's identity for any receipt and digests, escaped or not", () => {
    const text = fc.oneof(fc.string({ maxLength: 20 }), fc.string({ unit: "binary", maxLength: 20 }), fc.constantFrom('a"b', "c\\d", "e\u0001f", "g\ud800h", "\ud83d\ude00"));
    fc.assert(
      fc.property(fc.constantFrom("item", "set", "none") as fc.Arbitrary<"item" | "set" | "none">, text, fc.array(text, { maxLength: 4 }), (level, receipt, digests) => {
        const subjectIdentity: PyObject =
          level === "none" ? { attribution_level: "none", application_receipt_id: receipt, memory_ref_digests: digests } : { attribution_level: level, memory_ref_digests: digests };
        const prefix = level === "none" ? "mul_" : level === "item" ? "mui_" : "mus_";
        expect(subjectIdOf({ attribution_level: level, application_receipt_id: receipt, memory_ref_digests: digests })).toBe(canonicalDigest(subjectIdentity, prefix));
      }),
      { numRuns: 500 },
    );
  });
});

describe("the fragment path equals the object path of the reducer", () => {
  // Rebuilding the parts after each delivery is quadratic in an identity's deliveries: the five cases past the
  // 1,024-delivery bound take most of this tier's time, so a quick run (test/support/depth.ts) leaves them to `npm test`.
  it("for every identity of the conformance cases, built incrementally delivery by delivery", () => {
    let identities = 0;
    for (const c of quickOnly(conformanceCases(), (c) => ((c.input as { observations?: unknown[] }).observations?.length ?? 0) < 1024)) {
      const input = parsePyJson(JSON.stringify(c.input)) as { observations: unknown[]; reducer_version?: string };
      let valid: Observation[];
      try {
        valid = input.observations.map((o) => validateObservation(o as never));
      } catch {
        continue;
      }
      const byIdentity = new Map<string, { context: ReturnType<typeof contextOfObservation>; state: ReturnType<typeof emptyIdentityState>; parts?: ReturnType<typeof computeParts> }>();
      for (const o of valid) {
        const context = contextOfObservation(o, input.reducer_version ?? "memory_utility_reducer_v0");
        const id = reducerIdentity(context);
        let e = byIdentity.get(id);
        if (!e) byIdentity.set(id, (e = { context, state: emptyIdentityState() }));
        foldDelivery(e.state, o);
        e.parts = computeParts(e.context, e.state, e.parts);
      }
      for (const e of byIdentity.values()) {
        identities++;
        expect(assembleParts(e.parts!)).toBe(canonicalJson(projectIdentityState(e.context, e.state)));
      }
    }
    expect(identities).toBeGreaterThan(100);
  }, 120_000);
});

describe("history fragments written on read (the one-shot reduction's assembly)", () => {
  // One agent and one snapshot: every observation is one identity's, ~90% of them accepted.
  const oneIdentity = (deliveries: number) => [...simulate({ agents: 1, observationsPerAgent: deliveries, snapshotEvery: 1e9, duplicateRate: 0.1, conflictRate: 0.01, memories: 6, seed: 3 })].map((d) => d.observation);

  it.each([40, 300, 1000])("assemble to the object path's bytes at %i deliveries (below and past the 256 history entries a packet holds)", (deliveries) => {
    const all = oneIdentity(deliveries);
    const context = contextOfObservation(all[0]!, "memory_utility_reducer_v0");
    const state = emptyIdentityState();
    for (const o of all) foldDelivery(state, o);
    const expected = canonicalJson(projectIdentityState(context, state));
    const parts = computeParts(context, state, undefined, "on read");
    expect(assembleParts(parts)).toBe(expected);
    // Assembled again, as text and as the CLI's bytes; and a deferred part's fragment equals the one written at once.
    expect(assembleParts(parts)).toBe(expected);
    expect(assemblePartsLine(parts).toString("utf8")).toBe(expected + "\n");
    const now = computeParts(context, state);
    expect(assemblePartsLine(now).toString("utf8")).toBe(expected + "\n");
    for (const [id, h] of now.history) expect(fragmentText(parts.history.get(id)!.fragment)).toBe(fragmentText(h.fragment));
  });

  it.each([40, 300])("the CLI's bytes when a created_at is not ASCII (%i deliveries): the object path's, in UTF-8", (deliveries) => {
    const all = oneIdentity(deliveries).map((o, i) => (i === 7 ? { ...o, created_at: o.created_at.replace("T", "\u00e9") } : o));
    expect(all[7]!.created_at).toContain("\u00e9");
    const context = contextOfObservation(all[0]!, "memory_utility_reducer_v0");
    const state = emptyIdentityState();
    for (const o of all) foldDelivery(state, o);
    const expected = canonicalJson(projectIdentityState(context, state));
    expect(expected).toContain("\u00e9");
    expect(assemblePartsLine(computeParts(context, state, undefined, "on read")).equals(Buffer.from(expected + "\n", "utf8"))).toBe(true);
  });

  it("refuses parts made on read as `previous` (their fragments are canonical JSON, not the stored form)", () => {
    const all = oneIdentity(40);
    const context = contextOfObservation(all[0]!, "memory_utility_reducer_v0");
    const state = emptyIdentityState();
    for (const o of all) foldDelivery(state, o);
    expect(() => computeParts(context, state, computeParts(context, state, undefined, "on read"))).toThrow("made on read");
  });

  it("a packet of conflicts and no accepted observation: the CLI's line is the object path's, from parts made either way", () => {
    const some = oneIdentity(40).slice(0, 5);
    const context = contextOfObservation(some[0]!, "memory_utility_reducer_v0");
    const state = emptyIdentityState();
    // The same id with another confidence: another fingerprint, so every id is quarantined.
    for (const o of some) for (const confidence of [0.25, 0.75]) foldDelivery(state, { ...o, confidence });
    const packet = projectIdentityState(context, state);
    expect(packet.accepted_observation_count).toBe(0);
    expect((packet.rejections as PyObject[]).length).toBeGreaterThan(0);
    const expected = canonicalJson(packet) + "\n";
    expect(assemblePartsLine(computeParts(context, state)).toString("utf8")).toBe(expected);
    expect(assemblePartsLine(computeParts(context, state, undefined, "on read")).toString("utf8")).toBe(expected);
  });

  it("the history list is written in one buffer, and the concatenating way when a created_at is not ASCII, to the same bytes", () => {
    const some = oneIdentity(30);
    const expected = (entries: { obs: Observation; fingerprint: string; subjectId: string }[]) =>
      canonicalJson(entries.map((e) => historyEntryToPy(historyEntry(e.obs, e.subjectId, e.fingerprint))));
    const ascii = some.map((o) => ({ obs: o, fingerprint: observationFingerprint(o), subjectId: subjectIdOf(o) }));
    expect(historyListJson(ascii)).toBe(expected(ascii));
    expect(historyListJson([])).toBe("[]");
    for (const createdAt of ["2026-01-02\u00e910:00:00+00:00", "2026-01-02\u6642", "2026-01-02T10:00:00+00:00\ud83d\ude00"]) {
      const mixed = ascii.map((e, i) => (i === 7 ? { ...e, obs: { ...e.obs, created_at: createdAt } } : e));
      expect(historyListJson(mixed)).toBe(expected(mixed));
      expect(historyListJson(mixed)).toContain(JSON.stringify(createdAt).slice(1, -1));
    }
  });
});
