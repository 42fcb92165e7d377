import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { utilityProject } from "../../src/core/index.js";
import { conformanceCases } from "../support/conformance.js";
import { REPO_ROOT } from "../support/reference.js";

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "mufold-cli-"));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe("the mufold command (npx --no-install, as a user runs it)", () => {
  it("prints the whole packet through a pipe, however large", async () => {
    const biggest = conformanceCases()
      .map((c) => ({ c, text: JSON.stringify(c.input) }))
      .sort((a, b) => utilityProject(b.text).stdout.length - utilityProject(a.text).stdout.length)[0]!;
    const expected = utilityProject(biggest.text);
    expect(expected.stdout.length).toBeGreaterThan(100_000);
    const input = file("big.json", biggest.text);
    const { stdout } = await run("bash", ["-c", `npx --no-install mufold reward-memory utility-project --input ${input} --format json | cat`], {
      cwd: REPO_ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(stdout).toBe(expected.stdout + "\n");
  });

  it("reads stdin, and exits 2 with a JSON error for an unusable request", () => {
    const bad = spawnSync("npx", ["--no-install", "mufold", "reward-memory", "utility-project", "--input", "-", "--format", "json"], {
      cwd: REPO_ROOT,
      input: JSON.stringify({ observations: [], scope: {}, retrieval_snapshot_ref: "r", policy_snapshot_ref: "p", reducer_version: null }),
      encoding: "utf8",
    });
    expect(bad.status).toBe(2);
    expect(JSON.parse(bad.stdout)).toEqual({
      ok: false,
      schema_version: "reward_memory_error_v0",
      status: "invalid_request",
      error: "reducer_version must be a non-empty string when provided",
    });
    const missing = spawnSync("npx", ["--no-install", "mufold", "reward-memory", "utility-project", "--input", join(dir, "nope.json")], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(missing.status).toBe(2);
    expect(JSON.parse(missing.stdout).error).toMatch(/cannot read input JSON/);
  });

  it("validate: exit 0 for a packet the reducer made, 1 with the reason for a tampered one", () => {
    const c = conformanceCases().find((x) => utilityProject(JSON.stringify(x.input)).exitCode === 0)!;
    const packet = utilityProject(JSON.stringify(c.input)).stdout;
    const good = spawnSync("npx", ["--no-install", "mufold", "reward-memory", "validate", "--input", file("good.json", packet)], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(good.status).toBe(0);
    expect(JSON.parse(good.stdout).valid).toBe(true);
    const tampered = packet.replace('"read_only":true', '"read_only":false');
    const badRun = spawnSync("npx", ["--no-install", "mufold", "reward-memory", "validate", "--input", file("bad.json", tampered)], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(badRun.status).toBe(1);
    expect(JSON.parse(badRun.stdout)).toEqual({ valid: false, error: "projection.read_only must be true" });
  });
});
