/**
 * The README's readback snippets (docs/examples/) run against a real fold:
 * Python with redis-py, Node with ioredis, Go with go-redis (vetted, built,
 * run). Each reads by identity and by scope and must print exactly the bytes
 * `mufold read` prints, and exit 3 for an unknown identity as it does; a
 * malformed identity is a usage error (exit 2, as `mufold read` says too), and
 * a prefix where nothing was folded is one line on stderr and exit 2, as `mufold read` does.
 *
 * Prerequisites, set up here from a clean clone: a CPython 3.11 with venv
 * (MUFOLD_EXAMPLES_PYTHON overrides) for `.cache/examples-venv` with redis-py
 * from PyPI, and the Go toolchain on PATH (go-redis from the Go module proxy).
 * A missing one fails the test with a message naming it.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { settingsEnv } from "../../consumers/fold/fold-process.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { BIN, dropPrefix, expectedPackets, quietLog, testSettings, waitCaughtUp } from "../support/pipeline.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const EXAMPLES = join(ROOT, "docs", "examples");
const REDIS_PY = "redis==6.4.0";
const UNKNOWN = "mur_" + "0".repeat(64);
const work = mkdtempSync(join(tmpdir(), "mufold-snippets-"));

interface Ran {
  status: number | null;
  stdout: Buffer;
  stderr: string;
}

function exec(command: string, args: string[], env: NodeJS.ProcessEnv = process.env, cwd = ROOT): Ran {
  const r = spawnSync(command, args, { cwd, env, timeout: 240_000, maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw new Error(`${command} ${args.join(" ")}: ${r.error.message}`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.toString("utf8") };
}

function ok(command: string, args: string[], env?: NodeJS.ProcessEnv, cwd?: string): Buffer {
  const r = exec(command, args, env, cwd);
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${String(r.status)}:\n${r.stdout.toString("utf8")}\n${r.stderr}`);
  return r.stdout;
}

/** `.cache/examples-venv` with redis-py pinned (stamped, like scripts/setup-reference.sh's venv). */
function examplesPython(): string {
  const venv = join(ROOT, ".cache", "examples-venv");
  const python = join(venv, "bin", "python");
  const stamp = join(venv, ".mufold-examples-stamp");
  if (existsSync(python) && existsSync(stamp) && readFileSync(stamp, "utf8").trim() === REDIS_PY) return python;
  const base = process.env.MUFOLD_EXAMPLES_PYTHON ?? "python3.11";
  const probe = spawnSync(base, ["-c", "import sys, venv, ensurepip; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)"], { encoding: "utf8" });
  if (probe.status !== 0) {
    throw new Error(`docs/examples/read.py is run with a CPython 3.11 that has venv and ensurepip: '${base}' is not one (${probe.error?.message ?? probe.stderr.trim()}); install python3.11 and python3.11-venv or set MUFOLD_EXAMPLES_PYTHON`);
  }
  rmSync(venv, { recursive: true, force: true });
  ok(base, ["-m", "venv", venv]);
  ok(python, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", REDIS_PY]);
  writeFileSync(stamp, `${REDIS_PY}\n`);
  return python;
}

/** The Go snippet vetted and built; the path of the binary. */
function goBinary(): string {
  const version = spawnSync("go", ["version"], { encoding: "utf8" });
  if (version.error !== undefined || version.status !== 0) {
    throw new Error(`docs/examples/read.go is built with the Go toolchain: 'go' is not on PATH (${version.error?.message ?? version.stderr.trim()})`);
  }
  ok("go", ["vet", "."], process.env, EXAMPLES);
  const out = join(work, "read-go");
  ok("go", ["build", "-o", out, "."], process.env, EXAMPLES);
  return out;
}

const settings = testSettings();
const env = { ...process.env, ...settingsEnv(settings), MUFOLD_LOG_LEVEL: "error" };
let packets = new Map<string, string>();

const cliRuns = new Map<string, Ran>();

/** What `mufold read` prints (and its exit status) for these arguments (run once, shared by the three snippets). */
function cliRead(args: string[]): Ran {
  const key = args.join("\0");
  let ran = cliRuns.get(key);
  if (ran === undefined) cliRuns.set(key, (ran = exec(process.execPath, [BIN, "read", ...args], env)));
  return ran;
}

function scopeArgs(packet: string): string[] {
  const p = JSON.parse(packet) as { scope: Record<string, string>; retrieval_snapshot_ref: string; policy_snapshot_ref: string };
  return [p.scope.agent_id!, p.scope.project_id!, p.scope.corpus_id!, p.scope.surface_id!, p.retrieval_snapshot_ref, p.policy_snapshot_ref];
}

/** Malformed identities (none reaches Redis) and a prefix with no generation, each refused with one line. */
function checkRefusals(run: (args: string[], runEnv?: NodeJS.ProcessEnv) => Ran): void {
  for (const bad of ["mur_" + "0".repeat(63), "mur_" + "A".repeat(64), "MUR_" + "0".repeat(64), "0".repeat(64), "mur_" + "0".repeat(64) + " "]) {
    expect(cliRead(["--identity", bad]).status, bad).toBe(2);
    const r = run([bad]);
    expect([r.status, r.stdout.length, r.stderr], bad).toEqual([2, 0, `invalid identity ${JSON.stringify(bad)}: must be mur_ followed by 64 lowercase hex digits\n`]);
  }
  const [identity] = [...packets.keys()];
  const prefix = `${settings.prefix}-nothing-folded`;
  for (const args of [[identity!], scopeArgs(packets.get(identity!)!)]) {
    const r = run(args, { ...env, MUFOLD_PREFIX: prefix });
    expect([r.status, r.stdout.length, r.stderr]).toEqual([2, 0, `no mufold generation in Redis under prefix ${prefix}: nothing has been folded yet\n`]);
  }
}

/** Run a snippet for every identity, by identity and by scope, and for an unknown identity. */
function checkSnippet(run: (args: string[]) => Ran): void {
  expect(packets.size).toBeGreaterThanOrEqual(3);
  for (const [identity, packet] of packets) {
    const cli = cliRead(["--identity", identity]);
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout.toString("utf8")).toBe(`${packet}\n`);
    const byIdentity = run([identity]);
    expect(byIdentity.stderr).toBe("");
    expect([byIdentity.status, byIdentity.stdout.equals(cli.stdout)]).toEqual([0, true]);
    const [agent, project, corpus, surface, retrieval, policy] = scopeArgs(packet);
    const cliByScope = cliRead(["--agent", agent!, "--project", project!, "--corpus", corpus!, "--surface", surface!, "--retrieval", retrieval!, "--policy", policy!]);
    expect(cliByScope.stdout.equals(cli.stdout)).toBe(true);
    const byScope = run(scopeArgs(packet));
    expect([byScope.status, byScope.stdout.equals(cli.stdout)]).toEqual([0, true]);
  }
  expect(cliRead(["--identity", UNKNOWN]).status).toBe(3);
  const unknown = run([UNKNOWN]);
  expect([unknown.status, unknown.stdout.length]).toEqual([3, 0]);
}

beforeAll(async () => {
  const observations = [...simulate({ agents: 3, observationsPerAgent: 8, snapshotEvery: 4, duplicateRate: 0.1, conflictRate: 0.1, memories: 4, seed: 41 })].map((d) => d.observation);
  const worker = await FoldWorker.start(settings, quietLog);
  try {
    await produce(settings, observations.map(observationRecord));
    await waitCaughtUp(settings);
  } finally {
    await worker.stop();
  }
  packets = expectedPackets(observations);
});

afterAll(async () => {
  await dropPrefix(settings);
  rmSync(work, { recursive: true, force: true });
});

describe("readback snippets in docs/examples print exactly what `mufold read` prints", () => {
  it("Python (redis-py): docs/examples/read.py", () => {
    const python = examplesPython();
    checkSnippet((args) => exec(python, [join(EXAMPLES, "read.py"), ...args], env));
    checkRefusals((args, runEnv = env) => exec(python, [join(EXAMPLES, "read.py"), ...args], runEnv));
  });

  it("Node (ioredis): docs/examples/read.mjs", () => {
    checkSnippet((args) => exec(process.execPath, [join(EXAMPLES, "read.mjs"), ...args], env));
    checkRefusals((args, runEnv = env) => exec(process.execPath, [join(EXAMPLES, "read.mjs"), ...args], runEnv));
  });

  // Built with the Go toolchain when it is on the machine (CI's is): without it this test is reported
  // skipped — never passed — and the Python and Node snippets still run.
  const hasGo = spawnSync("go", ["version"], { encoding: "utf8" }).status === 0;
  it.skipIf(!hasGo)("Go (go-redis): docs/examples/read.go, vetted and built", () => {
    const binary = goBinary();
    checkSnippet((args) => exec(binary, args, env));
    checkRefusals((args, runEnv = env) => exec(binary, args, runEnv));
  });
});
