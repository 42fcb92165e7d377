/**
 * A reducer identity and a stored context are written by their keys in
 * canonical order (identity.ts), not by the generic canonical writer: for
 * any strings, the bytes must be the generic writer's.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/core/canonical-json.js";
import { canonicalDigest } from "../../src/core/digest.js";
import { PROJECTION_SCHEMA_VERSION, contextJson, reducerIdentity, type ReducerContext } from "../../src/core/identity.js";

// Any text: quotes, backslashes, control characters, non-ASCII and lone surrogates.
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: "binary", maxLength: 12 }), fc.constantFrom('a"b', "a\\b", "\u0000\u001f", "é", "\ud800"));
const context = fc.record({
  scope: fc.record({ agent_id: text, project_id: text, corpus_id: text, surface_id: text }),
  retrieval_snapshot_ref: text,
  policy_snapshot_ref: text,
  reducer_version: text,
});

describe("a context written by its keys", () => {
  it("is canonicalJson of the context, and its identity canonicalDigest of the identity object", () => {
    fc.assert(
      fc.property(context, (c: ReducerContext) => {
        expect(contextJson(c)).toBe(canonicalJson({ ...c, scope: { ...c.scope } }));
        const expected = canonicalDigest(
          { schema_version: PROJECTION_SCHEMA_VERSION, scope: { ...c.scope }, retrieval_snapshot_ref: c.retrieval_snapshot_ref, policy_snapshot_ref: c.policy_snapshot_ref, reducer_version: c.reducer_version },
          "mur_",
        );
        expect(reducerIdentity(c)).toBe(expected);
      }),
      { numRuns: 1_000 },
    );
  });
});
