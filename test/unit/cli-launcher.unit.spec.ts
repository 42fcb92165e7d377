/**
 * bin/mufold.js as a user's shell runs it: executed directly, so its shebang
 * (`env -S node` with a V8 flag) picks `node` from PATH, here the Node that
 * runs this tier (scripts/test.sh runs it on Node 20, 22 and 24). It runs the
 * compiled CLI in dist/ (built by scripts/test.sh).
 * cli-main.unit.spec.ts covers the command's behaviour in-process.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import * as nodeModule from "node:module";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { WORKER_NODE_FLAGS } from "../../consumers/fold/fold-process.js";

const BIN = fileURLToPath(new URL("../../bin/mufold.js", import.meta.url));
const PACKAGE = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

// The Node running this test first on PATH; no Kafka or Redis is reached by these commands.
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}` };
const launch = (...args: string[]) => spawnSync(BIN, args, { env, encoding: "utf8", timeout: 30_000 });

describe(`bin/mufold.js on ${process.version}`, () => {
  it("the shebang's node is the Node running this tier", () => {
    const r = spawnSync("sh", ["-c", "command -v node"], { env, encoding: "utf8" });
    expect(r.stdout.trim()).toBe(process.execPath);
  });

  it("the shebang starts Node with the worker flags every mufold process runs with (WORKER_NODE_FLAGS)", () => {
    const shebang = readFileSync(BIN, "utf8").split("\n")[0]!;
    expect(shebang).toBe(`#!/usr/bin/env -S node ${WORKER_NODE_FLAGS.join(" ")}`);
    expect(WORKER_NODE_FLAGS).toEqual(["--max-semi-space-size=32", "--no-allocation-site-pretenuring"]);
  });

  it("--version prints the version of package.json", () => {
    const r = launch("--version");
    expect({ status: r.status, stdout: r.stdout, stderr: r.stderr }).toEqual({ status: 0, stdout: `${PACKAGE.version}\n`, stderr: "" });
  });

  it("keeps V8's compiled code in the default compile cache where Node has one (22.8+), and not when told not to", () => {
    const hasCache = typeof (nodeModule as { enableCompileCache?: unknown }).enableCompileCache === "function";
    const files = (dir: string) => (existsSync(dir) ? readdirSync(dir, { recursive: true }).length : 0);
    // Node's default directory is under the OS's temporary one: a fresh one per run, and no NODE_COMPILE_CACHE (which
    // would turn the cache on in Node itself, whatever the launcher does).
    const run = (extra: Record<string, string>) => {
      const tmp = mkdtempSync(join(tmpdir(), "mufold-ncc-"));
      try {
        const own: NodeJS.ProcessEnv = { ...env, TMPDIR: tmp, ...extra };
        delete own.NODE_COMPILE_CACHE;
        const r = spawnSync(BIN, ["--version"], { env: own, encoding: "utf8", timeout: 30_000 });
        expect(r.status).toBe(0);
        return files(join(tmp, "node-compile-cache"));
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    };
    if (hasCache) expect(run({})).toBeGreaterThan(1); // its version directory, and the modules --version loaded
    else expect(run({})).toBe(0); // Node 20: the launcher runs without one
    expect(run({ NODE_DISABLE_COMPILE_CACHE: "1" })).toBe(0);
  });

  it("--help prints the usage on stdout", () => {
    const r = launch("--help");
    expect(r.status).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout.startsWith("usage: mufold <command>")).toBe(true);
    expect(r.stdout).toContain("mufold fold");
  });
});
