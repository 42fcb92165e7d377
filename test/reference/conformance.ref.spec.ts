import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { utilityProject, utilityProjectBytes } from "../../src/core/index.js";
import { conformanceCases, conformanceDivergences } from "../support/conformance.js";
import { ReferenceOracle, type ProjectResponse } from "../support/reference.js";
import { firstDifference } from "../support/differential.js";

let oracle: ReferenceOracle;
beforeAll(async () => {
  oracle = await ReferenceOracle.start();
});
afterAll(async () => {
  await oracle?.close();
});

describe("conformance inputs against the installed reference (all fields, including later ones)", () => {
  const cases = conformanceCases();
  it.each(cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const text = JSON.stringify(c.input);
    const expected = (await oracle.project(text)) as ProjectResponse;
    const got = utilityProject(text);
    if (got.stdout !== expected.stdout) throw new Error(firstDifference(got.stdout, expected.stdout ?? ""));
    expect(got.exitCode).toBe(expected.exit);
    // The CLI's bytes, written from the parts: the reference's line, byte for byte.
    const line = utilityProjectBytes(text);
    const want = Buffer.from((expected.stdout ?? "") + "\n");
    if (!line.stdout.equals(want)) throw new Error(firstDifference(line.stdout.toString("latin1"), want.toString("latin1")));
    expect(line.exitCode).toBe(expected.exit);
  });

  it("the recorded divergences of the stored cases are exactly the installed reference's behaviour", async () => {
    const divergences = conformanceDivergences();
    for (const c of cases.filter((x) => divergences[x.name] !== undefined)) {
      const expected = (await oracle.project(JSON.stringify(c.input))) as ProjectResponse;
      const packet = JSON.parse(expected.stdout!);
      expect(packet.rejections[0].reason_codes).toEqual(divergences[c.name]!.installed_reason_codes);
    }
  });
});
