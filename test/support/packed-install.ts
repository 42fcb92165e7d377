/**
 * The package as a user gets it: `npm pack` of this repository (npm runs the
 * `prepare` compile), `npm install --omit=dev` of the tarball into an empty
 * ESM project, and strict TypeScript compiled there with this repository's
 * tsc and @types/node (the install has no devDependencies).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const TSC = join(REPO_ROOT, "node_modules", ".bin", "tsc");

export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
  /** `command args: exit N (signal, error)` and the output, for a failure message. */
  describe: string;
}

export interface RunOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/** Run a command to completion and return what it did. */
export function runResult(command: string, args: readonly string[], options: RunOptions): RunResult {
  const result = spawnSync(command, args, { cwd: options.cwd, env: options.env ?? process.env, encoding: "utf8", timeout: options.timeoutMs ?? 240_000, maxBuffer: 64 * 1024 * 1024 });
  const stdout = result.stdout ?? "";
  const stderr = result.stderr ?? "";
  const how = `${String(result.status ?? result.signal)}${result.error ? ` (${result.error.message})` : ""}`;
  return { status: result.status, stdout, stderr, describe: `${command} ${args.join(" ")} exited ${how}\n${stdout}\n${stderr}` };
}

/** Run a command to completion; fail with its output unless it exits 0. */
export function run(command: string, args: readonly string[], options: RunOptions): string {
  const result = runResult(command, args, options);
  if (result.status !== 0) throw new Error(result.describe);
  return result.stdout;
}

export interface PackedInstall {
  /** The tarball's file name in the work directory, and the paths it holds. */
  tarball: string;
  files: string[];
  /** The project the tarball is installed into (`type: module`). */
  app: string;
  /** The installed package's bin script: run it with `process.execPath`. */
  binScript: string;
}

/** Pack the repository into `work` and install the tarball, production dependencies only, into `work/app`. */
export function packAndInstall(work: string): PackedInstall {
  const out = run("npm", ["pack", "--json", "--pack-destination", work], { cwd: REPO_ROOT, timeoutMs: 300_000 });
  const packed = JSON.parse(out.replace(/^[^[]*/, "")) as { filename: string; files: { path: string }[] }[];
  const tarball = packed[0]!.filename;
  const app = join(work, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "mufold-package-test", version: "0.0.0", private: true, type: "module" }, null, 2));
  run("npm", ["install", "--omit=dev", "--no-audit", "--no-fund", join(work, tarball)], { cwd: app, timeoutMs: 300_000 });
  return { tarball, files: packed[0]!.files.map((f) => f.path), app, binScript: join(app, "node_modules", "mufold", "bin", "mufold.js") };
}

/**
 * Write `<app>/<name>` compiling `files` as a user would: target ES2022, module
 * and resolution NodeNext, strict, Node's types, every file a module, the
 * declarations of the installed packages checked too (no skipLibCheck).
 * Without `outDir` it only typechecks.
 */
export function writeStrictTsconfig(app: string, name: string, files: readonly string[], options: { outDir?: string; compilerOptions?: Record<string, unknown> } = {}): string {
  const path = join(app, name);
  const emit = options.outDir === undefined ? { noEmit: true } : { outDir: options.outDir, rootDir: "." };
  writeFileSync(
    path,
    JSON.stringify({
      compilerOptions: {
        target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", moduleDetection: "force", strict: true, skipLibCheck: false,
        types: ["node"], typeRoots: [join(REPO_ROOT, "node_modules", "@types")], ...emit, ...options.compilerOptions,
      },
      files,
    }),
  );
  return path;
}

/** Compile a project with this repository's tsc; the result (diagnostics on stdout with `--pretty false`). */
export function tsc(tsconfig: string, cwd: string): RunResult {
  return runResult(TSC, ["-p", tsconfig, "--pretty", "false"], { cwd });
}

/** The repository's package.json. */
export function repoPackage(): { version: string; scripts: Record<string, string>; devDependencies: Record<string, string> } {
  return JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as never;
}
