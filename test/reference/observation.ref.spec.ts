import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ObservationValidationError, canonicalJson, observationToPy, parsePyJson, validateObservation } from "../../src/core/index.js";
import { observationCase } from "../support/arbitraries.js";
import { diffRuns, diffSeed } from "../support/differential.js";
import { ReferenceOracle } from "../support/reference.js";

let oracle: ReferenceOracle;
beforeAll(async () => {
  oracle = await ReferenceOracle.start();
});
afterAll(async () => {
  await oracle?.close();
});

describe("observation v0 validator against the reference", () => {
  it("normalizes valid observations and rejects malformed ones with the same message and reason code", async () => {
    const malformations: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(observationCase({ validRate: 0.4 }), async (c) => {
        malformations[c.malformation ?? "valid"] = (malformations[c.malformation ?? "valid"] ?? 0) + 1;
        const ref = await oracle.request<{ ok: boolean; normalized?: string; error?: string; reason_code?: string | null }>({
          op: "observation",
          observation: c.text,
        });
        let parsed;
        try {
          parsed = parsePyJson(c.text);
        } catch (err) {
          expect(ref.ok, `mufold could not parse ${c.text}: ${(err as Error).message}`).toBe(false);
          return;
        }
        try {
          const obs = validateObservation(parsed);
          expect(ref.ok, `reference rejected: ${ref.error}`).toBe(true);
          expect(canonicalJson(observationToPy(obs))).toBe(ref.normalized);
        } catch (err) {
          if (!(err instanceof ObservationValidationError)) throw err;
          expect(ref.ok, `mufold rejected: ${err.message}`).toBe(false);
          expect(err.message).toBe(ref.error);
          expect(err.reasonCode).toBe(ref.reason_code);
        }
      }),
      { numRuns: Math.max(500, Math.round(diffRuns() / 2)), seed: diffSeed() },
    );
    console.log(`[differential] observations by malformation: ${JSON.stringify(malformations)}`);
  });
});
