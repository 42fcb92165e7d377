/**
 * Docs that cannot drift: every fenced code block of README.md and docs/*.md
 * is checked against what it shows.
 *
 * - ```ts / ```typescript: each block is its own module in a project where
 *   the packed package is installed (`npm pack`, `npm install --omit=dev`),
 *   typechecked by this repository's tsc: strict, NodeNext, ES2022. "mufold"
 *   and "mufold/core" resolve to the package's real declarations.
 * - ```sh / ```bash / ```shell / ```console: every command must be
 *   - the CLI (`mufold …`, `npx [--no-install] mufold …`, `node bin/mufold.js …`,
 *     `docker run … mufold:TAG …`): its command path answers `--help` with exit 0
 *     (the installed package's bin), and every `--flag` the line uses is in that help;
 *   - `npm run X` / `npm test` …: the script is in package.json; or one of the
 *     npm commands in NPM_COMMANDS;
 *   - a program of NOT_RUN (not run: kcat, curl, docker, node on another script, …).
 *   Any other program fails, so that a new kind of command gets a decision.
 * - ```json: parses as JSON.
 * - a fence without a language fails: say `text` (or the language) so that
 *   a command in it cannot escape these checks.
 *
 * README.md must hold at least one ts block and one checked command line: a
 * check with nothing to compare fails.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { docBlocks, SHELL_LANGS, TS_LANGS, where, type FencedBlock } from "../support/markdown-blocks.js";
import { packAndInstall, REPO_ROOT, repoPackage, runResult, tsc, writeStrictTsconfig, type PackedInstall } from "../support/packed-install.js";
import { longFlags, shellCommands } from "../support/shell-commands.js";

/** Programs the docs show but this test does not run. */
const NOT_RUN = new Set(["curl", "docker", "java", "kafka-configs.sh", "kcat", "kubectl", "node", "redis-cli"]);
/** Tools run through npx (other than the CLI) that are not run. */
const NPX_NOT_RUN = new Set(["tsx", "vitest"]);
/** npm's own commands the docs may show (not run); `npm run X` and npm's script shorthands are checked. */
const NPM_COMMANDS = new Set(["ci", "install", "pack"]);
/** npm commands that run a script of package.json. */
const NPM_SCRIPT_SHORTHANDS = new Set(["test", "start", "stop", "restart"]);

const SCRIPTS = repoPackage().scripts;
const BLOCKS = docBlocks(REPO_ROOT);
const work = mkdtempSync(join(tmpdir(), "mufold-docs-"));
let installed: PackedInstall;

beforeAll(() => {
  installed = packAndInstall(work);
}, 600_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

type Invocation = { kind: "cli"; args: string[] } | { kind: "script"; name: string } | { kind: "npm"; command: string } | { kind: "not-run"; program: string } | { kind: "unknown"; program: string };

/** What one command of a shell block runs. */
function classify(words: readonly string[]): Invocation {
  const [program, ...rest] = words as [string, ...string[]];
  if (program === "mufold") return { kind: "cli", args: rest };
  if (program === "node" && /(^|\/)bin\/mufold\.js$/.test(rest[0] ?? "")) return { kind: "cli", args: rest.slice(1) };
  if (program === "npx") {
    const at = rest.findIndex((w) => !w.startsWith("-"));
    const tool = rest[at] ?? "";
    if (tool === "mufold") return { kind: "cli", args: rest.slice(at + 1) };
    return NPX_NOT_RUN.has(tool) ? { kind: "not-run", program: `npx ${tool}` } : { kind: "unknown", program: `npx ${tool}` };
  }
  if (program === "npm") {
    const [command = "", script = ""] = rest;
    if (command === "run" || command === "run-script") return { kind: "script", name: script };
    if (NPM_SCRIPT_SHORTHANDS.has(command)) return { kind: "script", name: command };
    return NPM_COMMANDS.has(command) ? { kind: "npm", command } : { kind: "unknown", program: `npm ${command}` };
  }
  if (program === "docker" && rest[0] === "run") {
    const image = rest.findIndex((w) => /^mufold(:[\w.-]+)?$/.test(w));
    if (image >= 0) return { kind: "cli", args: rest.slice(image + 1) };
  }
  return NOT_RUN.has(program) ? { kind: "not-run", program } : { kind: "unknown", program };
}

/** The CLI's help texts, by command path (" "-joined; "" is `mufold --help`), each run once. */
const helps = new Map<string, { status: number | null; text: string; describe: string }>();
function help(path: readonly string[]): { status: number | null; text: string; describe: string } {
  const key = path.join(" ");
  let known = helps.get(key);
  if (known === undefined) {
    const result = runResult(process.execPath, [installed.binScript, ...path, "--help"], { cwd: installed.app, timeoutMs: 60_000 });
    helps.set(key, (known = { status: result.status, text: result.stdout, describe: result.describe }));
  }
  return known;
}

/** The command paths `mufold --help` lists (`replay`, `reward-memory utility-project`, `config explain`), longest first. */
function commandPaths(): string[][] {
  const main = help([]);
  if (main.status !== 0) throw new Error(`mufold --help failed\n${main.describe}`);
  const paths = main.text
    .split("\n")
    .flatMap((line) => {
      const m = /^\s+mufold\s+(.*)$/.exec(line);
      if (m === null) return [];
      const usage = m[1]!.split(/\s{2,}/)[0]!.split(/\s+/);
      const end = usage.findIndex((w) => !/^[a-z][a-z0-9-]*$/.test(w));
      const path = end < 0 ? usage : usage.slice(0, end);
      return path.length > 0 ? [path] : [];
    })
    .sort((a, b) => b.length - a.length);
  if (paths.length === 0) throw new Error(`mufold --help lists no commands\n${main.text}`);
  return paths;
}

/** What is wrong with one CLI invocation: an unknown command, a help that fails, a flag its help does not have. */
function checkCli(args: readonly string[]): string[] {
  const path = args.length === 0 || args[0]!.startsWith("-") ? [] : commandPaths().find((p) => p.every((w, i) => args[i] === w));
  if (path === undefined) return [`\`mufold ${args.join(" ")}\`: not a command \`mufold --help\` lists`];
  const shown = help(path);
  const name = `mufold ${[...path, "--help"].join(" ")}`;
  if (shown.status !== 0) return [`\`${name}\` failed\n${shown.describe}`];
  return longFlags(args.slice(path.length))
    .filter((flag) => !new RegExp(`(^|[^\\w-])${flag}(?![\\w-])`).test(shown.text))
    .map((flag) => `\`mufold ${args.join(" ")}\`: ${flag} is not in \`${name}\``);
}

/** What is wrong with the commands of one shell block; counts what it checked. */
function checkShellBlock(block: FencedBlock, counted: { cli: number; scripts: number }): string[] {
  let commands;
  try {
    commands = shellCommands(block.body, block.lang);
  } catch (err) {
    return [`${where(block)}: ${(err as Error).message}`];
  }
  if (commands.length === 0) return [`${where(block)}: a \`\`\`${block.lang} block without a command (say \`\`\`text)`];
  return commands.flatMap(({ line, words }) => {
    const at = where(block, line);
    const invocation = classify(words);
    switch (invocation.kind) {
      case "cli":
        counted.cli++;
        return checkCli(invocation.args).map((problem) => `${at}: ${problem}`);
      case "script":
        counted.scripts++;
        return Object.hasOwn(SCRIPTS, invocation.name) ? [] : [`${at}: \`npm run ${invocation.name}\`: package.json has no script "${invocation.name}"`];
      case "npm":
      case "not-run":
        return [];
      case "unknown":
        return [`${at}: \`${words.join(" ")}\`: ${invocation.program} is neither the CLI, an npm script, nor a program this test knows not to run (NOT_RUN)`];
    }
  });
}

describe("the code blocks of README.md and docs/*.md", () => {
  const readme = BLOCKS.filter((b) => b.file === "README.md");

  it("README.md shows TypeScript and commands, so there is something to check", () => {
    expect(readme.filter((b) => TS_LANGS.has(b.lang)).length, "README.md has no ```ts block").toBeGreaterThan(0);
    const counted = { cli: 0, scripts: 0 };
    readme.filter((b) => SHELL_LANGS.has(b.lang)).forEach((b) => checkShellBlock(b, counted));
    expect(counted.cli + counted.scripts, "README.md has no shell block with a command of the CLI or an npm script").toBeGreaterThan(0);
  });

  it("every fence says what it holds", () => {
    expect(BLOCKS.filter((b) => b.lang === "").map((b) => `${where(b)}: a fence without a language (\`\`\`text, \`\`\`sh, …)`)).toEqual([]);
  });

  it("every ts block typechecks, strict, against the packed package", () => {
    const blocks = BLOCKS.filter((b) => TS_LANGS.has(b.lang));
    expect(blocks.length).toBeGreaterThan(0);
    const names = blocks.map((b) => `${b.file.replace(/[^A-Za-z0-9]+/g, "_")}_L${b.line}.ts`);
    blocks.forEach((b, i) => writeFileSync(join(installed.app, names[i]!), b.body));
    const checked = tsc(writeStrictTsconfig(installed.app, "tsconfig.docs.json", names), installed.app);
    // Diagnostics name the block's file and line: map them to the Markdown.
    const problems = checked.stdout
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => {
        const m = /^(.+?)\((\d+),(\d+)\): (.*)$/.exec(line);
        const index = m === null ? -1 : names.indexOf(m[1]!);
        return index < 0 ? line : `${where(blocks[index]!, Number(m![2]) - 1)}:${m![3]}: ${m![4]}`;
      });
    expect(problems).toEqual([]);
    expect(checked.status, checked.describe).toBe(0);
  });

  it("every shell command is the CLI with flags its help shows, an npm script of package.json, or a program known not to run", () => {
    const blocks = BLOCKS.filter((b) => SHELL_LANGS.has(b.lang));
    expect(blocks.length).toBeGreaterThan(0);
    const counted = { cli: 0, scripts: 0 };
    const problems = blocks.flatMap((b) => checkShellBlock(b, counted));
    expect(problems).toEqual([]);
    expect(counted.cli, "no shell block of the docs runs the CLI").toBeGreaterThan(0);
    expect(counted.scripts, "no shell block of the docs runs an npm script").toBeGreaterThan(0);
  });

  it("every json block is JSON", () => {
    const problems = BLOCKS.filter((b) => b.lang === "json").flatMap((b) => {
      try {
        JSON.parse(b.body);
        return [];
      } catch (err) {
        return [`${where(b)}: ${(err as Error).message}`];
      }
    });
    expect(problems).toEqual([]);
  });
});
