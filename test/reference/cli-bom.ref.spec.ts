/**
 * Byte order marks against the reference. A file that starts with a UTF-8
 * BOM is an invalid request for loopx (read_text keeps U+FEFF, json.loads
 * refuses it), so it must be for `mufold reward-memory utility-project` too;
 * and the fold must give a record value the verdict the reference gives to
 * the same JSON text.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalJson, parsePyJson, validateObservation, type PyValue } from "../../src/core/index.js";
import { utilityProjectOutput } from "../../src/cli/reward-memory.js";
import { decideRecord } from "../../src/fold/record-decision.js";
import { scopeKey } from "../../src/fold/scope-key.js";
import { observationCase, placeBom, streamInput, withBom, BOM_PLACEMENTS } from "../support/arbitraries.js";
import { diffRuns, diffSeed } from "../support/differential.js";
import { REFERENCE_VENV, REPO_ROOT, ReferenceOracle, type ProjectResponse } from "../support/reference.js";

let oracle: ReferenceOracle;
beforeAll(async () => {
  oracle = await ReferenceOracle.start();
});
afterAll(async () => {
  await oracle?.close();
});

const dir = mkdtempSync(join(tmpdir(), "mufold-bom-"));
const REQUEST = JSON.stringify({
  observations: [],
  scope: { agent_id: "agent-1", project_id: "project-1", corpus_id: "corpus-1", surface_id: "surface-1" },
  retrieval_snapshot_ref: "retrieval:1",
  policy_snapshot_ref: "policy:1",
});

/** Run a CLI on a file holding `bytes`. */
function runCli(command: string, args: string[], bytes: Buffer, name: string): { status: number | null; stdout: string; stderr: string } {
  const file = join(dir, name);
  writeFileSync(file, bytes);
  const r = spawnSync(command, [...args, "--input", file], { cwd: REPO_ROOT, encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("utility-project on a file with a BOM: the installed CLIs side by side", () => {
  for (const placement of BOM_PLACEMENTS) {
    it(`BOM placement "${placement}": same exit code, same payload`, () => {
      const bytes = placeBom(REQUEST, placement);
      const ref = runCli(join(REFERENCE_VENV, "bin", "loopx"), ["reward-memory", "utility-project", "--format", "json"], bytes, `ref-${placement}.json`);
      const ours = runCli(process.execPath, [join(REPO_ROOT, "bin", "mufold.js"), "reward-memory", "utility-project"], bytes, `ours-${placement}.json`);
      expect(ours.status).toBe(ref.status);
      expect(ours.stderr).toBe("");
      // The reference prints keys in insertion order, mufold sorted (docs/compatibility.md): compare sorted.
      expect(ours.stdout).toBe(canonicalJson(JSON.parse(ref.stdout) as PyValue) + "\n");
      if (placement !== "none") expect(ours.status).toBe(2);
      if (placement === "start") expect(JSON.parse(ours.stdout).error).toBe("Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)");
    });
  }
});

describe("differential with BOMs: the bytes of a request file", () => {
  it(`mufold and loopx agree on ${Math.max(200, Math.round(diffRuns() / 4))} request files with and without a BOM`, async () => {
    const seed = diffSeed();
    const tally: Record<string, number> = {};
    console.log(`[differential] BOM request files: seed=${seed} (rerun with MUFOLD_DIFF_SEED=${seed})`);
    await fc.assert(
      fc.asyncProperty(withBom(streamInput({ tierWeights: { small: 6, medium: 3, history: 0, subjects: 0, deliveries: 0 } }).map((s) => s.text)), async ({ placement, bytes }) => {
        const ref = await oracle.request<ProjectResponse>({ op: "project", input_b64: bytes.toString("base64") });
        const got = utilityProjectOutput(bytes);
        tally[`${placement}/exit${ref.exit}`] = (tally[`${placement}/exit${ref.exit}`] ?? 0) + 1;
        expect(got.exitCode).toBe(ref.exit);
        if (ref.crash !== undefined) {
          expect(got.stderr).not.toBe("");
          return;
        }
        expect(got.stdout.toString("latin1")).toBe(Buffer.from(ref.stdout + "\n").toString("latin1")); // byte for byte
      }),
      { numRuns: Math.max(200, Math.round(diffRuns() / 4)), seed },
    );
    console.log(`[differential] BOM request files by placement/outcome: ${JSON.stringify(tally)}`);
    // Both kinds of file ran, and a file with a BOM at the start was never accepted.
    expect(Object.keys(tally).some((k) => k.startsWith("none/"))).toBe(true);
    expect(Object.keys(tally).some((k) => k.startsWith("start/exit2"))).toBe(true);
    expect(Object.keys(tally).filter((k) => /^(start|twice|after_space|start_crlf)\/exit0$/.test(k))).toEqual([]);
  });
});

describe("differential with BOMs: a record value", () => {
  it("decideRecord gives a value the reference's verdict on the same JSON text", async () => {
    const tally: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(withBom(observationCase({ validRate: 0.7 }).map((c) => c.text)), async ({ placement, bytes }) => {
        const text = bytes.toString("utf8");
        const ref = await oracle.request<{ ok: boolean; error?: string; reason_code?: string | null; type?: string }>({ op: "observation", observation: text });
        // The scope key of the observation without its BOM, so only the value decides.
        let key = "agent:x/project:x/corpus:x/surface:x";
        try {
          key = scopeKey(validateObservation(parsePyJson(text.replace(/^[\s\ufeff]+/, ""))).scope);
        } catch {
          // a malformed observation: any key
        }
        const decision = decideRecord({ key: Buffer.from(key), value: bytes }, { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 1 << 20 });
        const verdict = decision.kind === "accept" ? "accept" : decision.reason;
        tally[`${placement}/${verdict}`] = (tally[`${placement}/${verdict}`] ?? 0) + 1;
        if (ref.ok) {
          expect(decision.kind, `reference accepted; mufold: ${JSON.stringify(decision)}`).toBe("accept");
          return;
        }
        expect(decision.kind).toBe("reject");
        if (decision.kind !== "reject") return;
        if (ref.type === "JSONDecodeError") {
          expect(decision.reason).toBe("value_not_json");
          expect(decision.detail).toBe(ref.error);
        } else if (ref.reason_code) {
          expect(decision.reason).toBe(ref.reason_code);
        }
      }),
      { numRuns: Math.max(300, Math.round(diffRuns() / 4)), seed: diffSeed() },
    );
    console.log(`[differential] BOM record values by placement/verdict: ${JSON.stringify(tally)}`);
    expect(tally["start/value_not_json"] ?? 0).toBeGreaterThan(0);
    expect(tally["none/accept"] ?? 0).toBeGreaterThan(0);
  });
});
