/**
 * Requests missing several fields at once, against the installed reference
 * CLI: loopx names the missing fields sorted, whatever is missing.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { canonicalJson, type PyValue } from "../../src/core/index.js";
import { REFERENCE_VENV, REPO_ROOT } from "../support/reference.js";

const dir = mkdtempSync(join(tmpdir(), "mufold-request-"));
const FULL: Record<string, unknown> = {
  observations: [],
  scope: { agent_id: "agent-1", project_id: "project-1", corpus_id: "corpus-1", surface_id: "surface-1" },
  retrieval_snapshot_ref: "retrieval:1",
  policy_snapshot_ref: "policy:1",
};
const FIELDS = Object.keys(FULL);

function run(command: string, args: string[], text: string, name: string): { status: number | null; stdout: string } {
  const file = join(dir, name);
  writeFileSync(file, text);
  const r = spawnSync(command, [...args, "--input", file], { cwd: REPO_ROOT, encoding: "utf8" });
  return { status: r.status, stdout: r.stdout };
}

describe("utility-project with fields missing: same answer as loopx", () => {
  // Every subset of the four required fields left out (15 non-empty subsets).
  for (let mask = 1; mask < 1 << FIELDS.length; mask++) {
    const left = FIELDS.filter((_, i) => (mask & (1 << i)) === 0);
    it(`keeps only [${left.join(", ")}]`, () => {
      const text = JSON.stringify(Object.fromEntries(left.map((k) => [k, FULL[k]])));
      const ref = run(join(REFERENCE_VENV, "bin", "loopx"), ["reward-memory", "utility-project", "--format", "json"], text, `ref-${mask}.json`);
      const ours = run(process.execPath, [join(REPO_ROOT, "bin", "mufold.js"), "reward-memory", "utility-project"], text, `ours-${mask}.json`);
      expect(ours.status).toBe(ref.status);
      expect(ours.stdout).toBe(canonicalJson(JSON.parse(ref.stdout) as PyValue) + "\n");
    });
  }
});
