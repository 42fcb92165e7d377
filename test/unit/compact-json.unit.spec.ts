/**
 * The stored form of fragments (src/core/compact-json.ts): expanding it gives
 * canonical JSON back exactly, and the Lua read function expands with the same
 * table.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/core/canonical-json.js";
import { librarySource } from "../../src/adapters/redis/functions.js";
import { EXPANSION, KEY_TOKENS, VALUE_TOKENS, compactJson, expandTokens, putExpanded, type ProposalFields } from "../../src/core/compact-json.js";
import { AsciiText } from "../../src/core/ascii-text.js";
import { historyEntryJson, historyEntryStored } from "../../src/core/observation-json.js";
import { PyFloat, type PyValue } from "../../src/core/pyvalue.js";
import type { ReducedSubject } from "../../src/core/subject.js";
import { simulate } from "../../producers/simulation.js";

const tricky = fc.constantFrom(...KEY_TOKENS, ...VALUE_TOKENS.filter((v) => typeof v === "string"), '"status":', "\u0002d", "\u0003!", "\u0002", "a\"b", "\\", "\u0000\u0001\u0002\u0003", "é", "😀", "\uffff", "key");
const text = fc.oneof(tricky, fc.string(), fc.string({ unit: "binary" }));
const value: fc.Arbitrary<PyValue> = fc.letrec<{ v: PyValue }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => new PyFloat(x)),
    text,
    fc.array(tie("v"), { maxLength: 4 }),
    fc.dictionary(text, tie("v"), { maxKeys: 5 }),
  ),
})).v;

describe("compact JSON", () => {
  it("expands to canonical JSON, for any value and any keys", () => {
    fc.assert(fc.property(value, (v) => expandTokens(compactJson(v)) === canonicalJson(v)), { numRuns: 2000 });
  });

  it("is shorter for the packet's own keys, and a string never holds a raw token", () => {
    const v = { subject_id: "mui_1", support: { harmful: 0, helpful: 1 }, note: "\u0002d" };
    const stored = compactJson(v);
    expect(stored.length).toBeLessThan(canonicalJson(v).length);
    expect(stored).toContain("\\u0002d"); // the string's control character stays escaped
  });

  it("history entries: the stored form expands to the canonical entry", () => {
    for (const d of simulate({ agents: 2, observationsPerAgent: 50, duplicateRate: 0.1, conflictRate: 0.05, seed: 3 })) {
      const o = d.observation;
      expect(expandTokens(historyEntryStored(o, "muof_x", "mui_y"))).toBe(historyEntryJson(o, "muof_x", "mui_y"));
    }
  });

  it("history entries whose created_at is not ASCII (written by the concatenating path) expand to the canonical entry too", () => {
    const [d] = [...simulate({ agents: 1, observationsPerAgent: 1, seed: 4 })];
    for (const createdAt of ["2026-01-02\u00e910:00:00+00:00", "2026-01-02T10:00:00+00:00", "2026-01-02\u6642"]) {
      const o = { ...d!.observation, created_at: createdAt };
      expect(expandTokens(historyEntryStored(o, "muof_x", "mui_y"))).toBe(historyEntryJson(o, "muof_x", "mui_y"));
    }
  });

  it("the Lua read function's table (as loaded into Redis) is EXPANSION, entry for entry", () => {
    const lua = librarySource();
    const body = /local EXPANSION = \{([\s\S]*?)\n\}/.exec(lua)![1]!;
    // Lua single-quoted strings: \ddd (three digits) and \<char> escapes.
    const unlua = (s: string) => s.replace(/\\(\d{3}|.)/g, (_, e: string) => (/^\d{3}$/.test(e) ? String.fromCharCode(Number(e)) : e));
    const entries = [...body.matchAll(/\['((?:\\.|[^'\\])*)'\] = '((?:\\.|[^'\\])*)'/g)].map((m) => [unlua(m[1]!), unlua(m[2]!)]);
    expect(entries).toEqual([...EXPANSION]);
    expect(entries).toHaveLength(KEY_TOKENS.length + VALUE_TOKENS.length);
  });

  it("the .lua file restates none of the shared facts: bounds, part positions, meta fields and tokens come from the generated header", () => {
    const file = readFileSync(new URL("../../src/adapters/redis/functions/mufold_v1.lua", import.meta.url), "utf8");
    expect(file).toContain("\n-- @mufold:generated-header\n");
    expect(file).not.toMatch(/local (EXPANSION|MAX_HISTORY|MAX_REJECTIONS|PART|META|SEP) =/);
    expect(file).not.toMatch(/keys\[\d+\]/);
    expect(file).not.toMatch(/'(v|rej|skel|acc)'/);
    const loaded = librarySource();
    expect(loaded).toContain("local MAX_HISTORY = 256\n");
    expect(loaded).toContain("local MAX_REJECTIONS = 64\n");
    expect(loaded).toContain("local PART = { m = 1, d = 2, s = 3, si = 4, h = 5, hi = 6, hl = 7, c = 8, ci = 9, p = 10 }\n");
    expect(loaded).toContain("local META = { version = 'v', rejected = 'rej', skeleton = 'skel', accepted = 'acc', digest = 'dig', deliveries = 'n', change = 'chg' }\n");
    expect(loaded).toContain("local SEP = '\\001'\n");
    expect(loaded.startsWith("#!lua name=mufold_v1\n")).toBe(true);
  });
});

describe("storedSubject and storedProposal", () => {
  it("equal compactJson on every subject and review proposal of simulated identities", async () => {
    const { projectIdentityState } = await import("../../src/core/reducer.js");
    const { emptyIdentityState, foldDelivery } = await import("../../src/core/identity-state.js");
    const { contextOfObservation } = await import("../../src/core/identity.js");
    const { canonicalSubject, storedProposal, storedSubject } = await import("../../src/core/compact-json.js");
    let subjects = 0;
    let proposals = 0;
    for (const seed of [1, 2, 3]) {
      const all = [...simulate({ agents: 1, observationsPerAgent: 300, snapshotEvery: 1e9, duplicateRate: 0.1, conflictRate: 0.1, memories: 8, seed })];
      const state = emptyIdentityState();
      for (const d of all) foldDelivery(state, d.observation);
      const packet = projectIdentityState(contextOfObservation(all[0]!.observation, "memory_utility_reducer_v0"), state) as { subjects: PyValue[]; review_proposals: PyValue[] };
      for (const s of packet.subjects) {
        expect(storedSubject(s as unknown as ReducedSubject)).toBe(compactJson(s));
        expect(canonicalSubject(s as unknown as ReducedSubject)).toBe(canonicalJson(s));
        subjects++;
      }
      for (const p of packet.review_proposals) {
        expect(storedProposal(p as unknown as ProposalFields)).toBe(compactJson(p));
        proposals++;
      }
    }
    expect(subjects).toBeGreaterThan(30);
    expect(proposals).toBeGreaterThan(10);
  });

  it("equals compactJson on random subjects of its type (any strings, floats and counts, null latest fields), and canonicalSubject canonicalJson", async () => {
    const { canonicalSubject, storedSubject } = await import("../../src/core/compact-json.js");
    const float = fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => new PyFloat(x));
    const count = fc.oneof(fc.nat(), fc.constant(-0));
    const entry = fc.record({ combined_confidence: float, evidence_basis: text, observation_count: count, utility_label: text });
    const subject = fc.record({
      subject_id: text,
      attribution_level: text,
      memory_ref_digests: fc.array(text, { maxLength: 4 }),
      utility_estimate: float,
      utility_bounds: fc.record({ min: float, max: float }),
      effective_utility_label: text,
      effective_evidence_basis: text,
      confidence: float,
      uncertainty: float,
      support: fc.record({ helpful: count, harmful: count, neutral: count, unknown: count }),
      evidence_strength: fc.record({ insufficient: count, evaluator_inference: count, deterministic_effect: count, controlled_replay: count, owner_correction: count }),
      evidence_label_summary: fc.array(entry, { maxLength: 5 }),
      observation_count: count,
      last_observed_at: fc.option(text, { nil: null }),
      last_observation_id: fc.option(text, { nil: null }),
      review: fc.record({ state: text, proposed_action: text, reason_codes: fc.array(text, { maxLength: 4 }), quarantine_proposed: fc.boolean(), automatic_deletion: fc.constant(false), action_authority_granted: fc.constant(false) }),
      read_only: fc.constant(true),
      automatic_deletion: fc.constant(false),
      action_authority_granted: fc.constant(false),
    });
    fc.assert(fc.property(subject, (s) => storedSubject(s as unknown as ReducedSubject) === compactJson(s as unknown as PyValue)), { numRuns: 2000 });
    fc.assert(fc.property(subject, (s) => canonicalSubject(s as unknown as ReducedSubject) === canonicalJson(s as unknown as PyValue)), { numRuns: 2000 });
  });
});

describe("storedProposal", () => {
  it("equals compactJson on random proposals of its type (any strings)", async () => {
    const { storedProposal } = await import("../../src/core/compact-json.js");
    const proposal = fc.record({
      subject_id: text,
      attribution_level: text,
      memory_ref_digests: fc.array(text, { maxLength: 4 }),
      state: text,
      proposed_action: text,
      reason_codes: fc.array(text, { maxLength: 4 }),
      quarantine_proposed: fc.boolean(),
      automatic_deletion: fc.constant(false as const),
      action_authority_granted: fc.constant(false as const),
    });
    fc.assert(fc.property(proposal, (p) => storedProposal(p) === compactJson(p as unknown as PyValue)), { numRuns: 2000 });
  });
});

describe("expandTokens on text that is not a stored form", () => {
  it("leaves unknown pairs whole, as the Lua gsub does", () => {
    expect(expandTokens("\u0002\u0002!")).toBe("\u0002\u0002!");
    expect(expandTokens("a\u0003\u0002!")).toBe("a\u0003\u0002!");
    expect(expandTokens("\u0002~x\u0002!")).toBe('\u0002~x"accepted_observation_count":');
    expect(expandTokens("end\u0002")).toBe("end\u0002");
  });
});

describe("putExpanded", () => {
  const expanded = (text: string): string | null => {
    const out = new AsciiText().start();
    putExpanded(out, text);
    return out.text();
  };

  it("writes canonical JSON for any value's stored form, and the Lua gsub's text for other text", () => {
    fc.assert(fc.property(value, (v) => expanded(compactJson(v)) === (/^[\x00-\x7f]*$/.test(canonicalJson(v)) ? canonicalJson(v) : null)), { numRuns: 2000 });
    expect(expanded("\u0002\u0002!")).toBe("\u0002\u0002!");
    expect(expanded("\u0002~x\u0002!")).toBe('\u0002~x"accepted_observation_count":');
    expect(expanded("end\u0002")).toBe("end\u0002");
    // Long runs between tokens are cut and written natively; tokens back to back leave empty runs.
    const long = "x".repeat(100);
    expect(expanded(`${long}\u0002!\u0002!${long}`)).toBe(`${long}"accepted_observation_count":"accepted_observation_count":${long}`);
  });
});
