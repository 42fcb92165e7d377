import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { utilityProject, utilityProjectBytes } from "../../src/core/index.js";
import { streamInput } from "../support/arbitraries.js";
import { ReferenceOracle, type ProjectResponse } from "../support/reference.js";
import { diffRuns, diffSeed, firstDifference } from "../support/differential.js";

let oracle: ReferenceOracle;
beforeAll(async () => {
  oracle = await ReferenceOracle.start();
});
afterAll(async () => {
  await oracle?.close();
});

describe("differential: random observation streams against the reference", () => {
  it(`mufold and loopx agree byte for byte on ${diffRuns()} streams`, async () => {
    const seed = diffSeed();
    const tally: Record<string, number> = {};
    console.log(`[differential] streams: seed=${seed} runs=${diffRuns()} (rerun with MUFOLD_DIFF_SEED=${seed})`);
    await fc.assert(
      fc.asyncProperty(streamInput(), async (stream) => {
        const expected = (await oracle.project(stream.text)) as ProjectResponse;
        const got = utilityProject(stream.text);
        // The CLI's bytes (written from the parts, not encoded from the text): the reference's line, byte for byte.
        const line = utilityProjectBytes(stream.text);
        expect(line.exitCode).toBe(expected.exit);
        const kind = expected.crash !== undefined ? "crash" : `exit${expected.exit}`;
        tally[`${stream.meta.tier}/${kind}`] = (tally[`${stream.meta.tier}/${kind}`] ?? 0) + 1;
        if (expected.crash !== undefined) {
          expect(got.crash, `reference crashed (${expected.crash}); mufold answered ${got.stdout.slice(0, 200)}`).toBeDefined();
          expect(got.exitCode).toBe(expected.exit);
          expect(line.crash).toBeDefined();
          expect(line.stdout.length).toBe(0);
          return;
        }
        const want = Buffer.from(expected.stdout + "\n");
        if (!line.stdout.equals(want)) {
          throw new Error(`CLI bytes differ (tier ${stream.meta.tier}): ${firstDifference(line.stdout.toString("latin1"), want.toString("latin1"))}`);
        }
        if (got.stdout !== expected.stdout) {
          throw new Error(`packet differs (tier ${stream.meta.tier}, ${JSON.stringify(stream.meta.faultDetail)}): ${firstDifference(got.stdout, expected.stdout!)}`);
        }
        expect(got.exitCode).toBe(expected.exit);
      }),
      { numRuns: diffRuns(), seed, verbose: 1, endOnFailure: false },
    );
    console.log(`[differential] streams by tier/outcome: ${JSON.stringify(tally)}`);
    // The run must have exercised every tier and both accepted and rejected packets.
    for (const tier of ["small", "medium", "history", "subjects", "deliveries"]) {
      expect(Object.keys(tally).some((k) => k.startsWith(tier + "/")), `tier ${tier} exercised`).toBe(true);
    }
    expect(Object.keys(tally).some((k) => k.endsWith("/exit0"))).toBe(true);
    expect(Object.keys(tally).some((k) => k.endsWith("/exit2"))).toBe(true);
  });
});
