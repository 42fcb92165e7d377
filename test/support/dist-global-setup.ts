/**
 * No test runs a stale dist/ (vitest globalSetup of every project).
 *
 * Tests that spawn bin/mufold.js, pack the package or read the compiled
 * clients run dist/, which `tsc -p tsconfig.build.json && node
 * scripts/copy-assets.mjs` writes from src/, consumers/ and producers/. An
 * edit followed by a bare `npx vitest run` would test the code from before the
 * edit, so before any test this compares every build input with its output:
 * a source `X.ts` needs `dist/X.js` at least as new, a copied asset its copy at
 * least as new, and the tsconfigs must be older than both. If anything is
 * missing or older, it rebuilds over the old files (no `rm -rf dist`: a
 * shared tree's other test runs may be spawning dist/ at that moment; each
 * output replaces its old file by a rename, see build) and fails the run,
 * with the compiler's output, if the build fails or leaves an output stale (a
 * type error alone does not: tsc still writes the JavaScript, and it is
 * reported). scripts/test.sh builds first, so there this finds dist/ fresh
 * and does nothing.
 *
 * MUFOLD_DIST_CHECK=fail: do not rebuild, fail naming the stale output instead
 * (for a checkout where dist/ must not be written).
 *
 * A deleted source leaves its old output behind (a rebuild in place does not
 * remove it); only `npm run build`, which scripts/test.sh runs, empties dist/.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** tsconfig.build.json's `include`, relative to the root (outDir dist, rootDir .). */
const SOURCE_DIRS = ["src", "consumers", "producers"];
/** What scripts/copy-assets.mjs copies, byte for byte. */
const ASSET_DIR = "src/adapters/redis/functions";
const CONFIGS = ["tsconfig.json", "tsconfig.build.json"];
const LOCK = join(ROOT, "dist", ".build-lock");

function mtime(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

function* files(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.isFile()) yield path;
  }
}

/** The first build output that is missing or older than what it is built from, or null when dist/ is fresh. */
function staleOutput(): string | null {
  const configs = Math.max(...CONFIGS.map((c) => mtime(join(ROOT, c)) ?? 0));
  for (const dir of SOURCE_DIRS) {
    for (const source of files(join(ROOT, dir))) {
      const rel = relative(ROOT, source);
      let output: string;
      if (rel.endsWith(".d.ts")) continue;
      else if (rel.endsWith(".ts")) output = join(ROOT, "dist", rel.slice(0, -3) + ".js");
      else if (rel.startsWith(ASSET_DIR + "/")) output = join(ROOT, "dist", rel);
      else continue;
      const built = mtime(output);
      const input = Math.max(mtime(source) ?? 0, configs);
      if (built === undefined) return `${relative(ROOT, output)} is missing`;
      if (built < input) return `${relative(ROOT, output)} is older than ${input === configs ? "the tsconfigs" : rel}`;
    }
  }
  return null;
}

/** tsc's exit status when it found errors but wrote every output anyway (ExitStatus.DiagnosticsPresent_OutputsGenerated). */
const TSC_ERRORS_OUTPUTS_WRITTEN = 2;

/** Run one build step; a tsc run that found errors but wrote its outputs is reported, not fatal. */
function step(what: string, args: string[]): void {
  try {
    execFileSync(process.execPath, args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { status?: number | null; stdout?: string; stderr?: string };
    const output = `${e.stdout ?? ""}${e.stderr ?? ""}`.trimEnd();
    // A type error (someone's edit in progress) still compiles: the outputs are the current code, and the
    // typecheck of `npm test` is what fails on it. Say so, and test what was written.
    if (what.startsWith("tsc") && e.status === TSC_ERRORS_OUTPUTS_WRITTEN) {
      process.stderr.write(`tests: dist/ rebuilt, but tsc reported errors (\`npm test\` fails on them):\n${output}\n`);
      return;
    }
    throw new Error(`dist/ is stale and the rebuild failed at \`${what}\`; no test ran against it:\n${output}`);
  }
}

/**
 * tsc -p tsconfig.build.json into a staging directory beside dist/'s files, each output then renamed into
 * place: a process that loads dist/ meanwhile (another file's spawned CLI, another run in this tree) sees
 * each file whole, old or new, never half-written as tsc writing in place would leave it for a moment.
 */
function build(): void {
  const staging = mkdtempSync(join(ROOT, "dist", ".staging-"));
  try {
    step("tsc -p tsconfig.build.json", [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json", "--outDir", staging]);
    for (const file of [...files(staging)]) {
      const to = join(ROOT, "dist", relative(staging, file));
      mkdirSync(dirname(to), { recursive: true });
      renameSync(file, to);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  step("node scripts/copy-assets.mjs", [join(ROOT, "scripts", "copy-assets.mjs")]);
}

/** One rebuild at a time across vitest processes and projects: mkdir is atomic; the loser waits, then checks again. */
async function withLock<T>(fn: () => T): Promise<T> {
  mkdirSync(join(ROOT, "dist"), { recursive: true });
  const deadline = Date.now() + 300_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      // A lock older than any build is a crashed run's: take it over.
      if (Date.now() - (mtime(LOCK) ?? Date.now()) > 300_000) {
        rmSync(LOCK, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`waited 300 s for ${relative(ROOT, LOCK)} (another run's rebuild of dist/)`);
      await new Promise((r) => setTimeout(r, 200)); // polling another process's lock: there is no event to wait for
    }
  }
  try {
    return fn();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

export async function setup(): Promise<void> {
  const stale = staleOutput();
  if (stale === null) return;
  if (process.env.MUFOLD_DIST_CHECK === "fail") {
    throw new Error(`dist/ is stale (${stale}): run \`npm run build\` (or unset MUFOLD_DIST_CHECK to let the tests rebuild it)`);
  }
  await withLock(() => {
    // A source saved during the build (a shared tree) makes it stale again: build again, a few times at most.
    for (let attempt = 1; ; attempt++) {
      const still = staleOutput();
      if (still === null) return; // fresh: another run rebuilt it meanwhile, or this one did
      if (attempt > 3) throw new Error(`dist/ is still stale after 3 rebuilds (${still}): sources keep changing during the build`);
      process.stderr.write(`tests: dist/ is stale (${still}); rebuilding it (tsc -p tsconfig.build.json, node scripts/copy-assets.mjs)\n`);
      build();
    }
  });
}
