/**
 * The container image without a Docker engine: read the Dockerfile, rebuild its
 * runtime stage's file layout in a temporary directory from exactly the paths
 * it copies (a path the Dockerfile names that does not exist fails here, as it
 * would fail `docker build`), run its production install there the way its RUN
 * does, and run the CLI the way its ENTRYPOINT does.
 *
 * The build stage's output (`/app/dist`) is taken from this checkout's dist/,
 * which `npx tsc -p tsconfig.build.json && node scripts/copy-assets.mjs` (what
 * the build stage's `npm run build` does, after emptying dist) leaves there.
 */
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dockerIgnored, last, parseDockerfile, type Dockerfile, type Instruction, type Stage } from "../support/dockerfile.js";
import { IMAGE_ALLOCATOR, WORKER_NODE_FLAGS } from "../../consumers/fold/fold-process.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string; dependencies: Record<string, string>; devDependencies: Record<string, string> };
const ignore = readFileSync(join(ROOT, ".dockerignore"), "utf8").split("\n");

let docker: Dockerfile;
let build: Stage;
let runtime: Stage;
let layout: string;
let entrypoint: string[];
/** The runtime stage's system-package RUNs (the allocator's only), as written. */
const aptRuns: string[] = [];

/** `node` in ENTRYPOINT becomes this Node; the rest (flags, script) is the Dockerfile's. */
async function mufold(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  expect(entrypoint[0]).toBe("node");
  try {
    const { stdout, stderr } = await run(process.execPath, [...entrypoint.slice(1), ...args], { cwd: layout, env: { PATH: process.env.PATH ?? "", HOME: layout } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

function workdir(stage: Stage): string {
  const w = last(stage, "WORKDIR");
  if (w === undefined) throw new Error(`stage ${stage.name} has no WORKDIR`);
  return w.args[0]!;
}

/** A COPY from the build context: each source must exist in the checkout and not be excluded by .dockerignore. */
function contextSource(source: string): string {
  const rel = posix.normalize(source).replace(/^\.\//, "").replace(/\/$/, "");
  expect(existsSync(join(ROOT, rel)), `COPY ${source}: no such path in the repository`).toBe(true);
  expect(dockerIgnored(ignore, rel), `COPY ${source}: excluded by .dockerignore`).toBe(false);
  return join(ROOT, rel);
}

/** Where the build stage leaves `path` (absolute in the build stage) in this checkout: `<WORKDIR>/x` is `x`. */
function buildSource(source: string): string {
  const base = workdir(build).replace(/\/$/, "") + "/";
  expect(source.startsWith(base), `COPY --from=${build.name} ${source}: outside the build stage's WORKDIR ${base}`).toBe(true);
  const rel = source.slice(base.length).replace(/\/$/, "");
  expect(existsSync(join(ROOT, rel)), `COPY --from=${build.name} ${source}: ${rel} is not in this checkout (compile first)`).toBe(true);
  return join(ROOT, rel);
}

/** Docker's COPY: a directory's contents go into the destination; files go into it when it ends with "/" or there are several. */
function copy(instruction: Instruction, into: string): void {
  const parts = instruction.args;
  const dest = parts.at(-1)!;
  const sources = parts.slice(0, -1);
  expect(sources.length).toBeGreaterThan(0);
  const from = instruction.flags.from;
  if (from !== undefined) expect(from, "runtime COPY --from must name the build stage").toBe(build.name);
  const destPath = join(into, dest);
  for (const source of sources) {
    const path = from === undefined ? contextSource(source) : buildSource(source);
    if (statSync(path).isDirectory()) cpSync(path, destPath, { recursive: true });
    else cpSync(path, dest.endsWith("/") || sources.length > 1 ? join(destPath, basename(path)) : destPath);
  }
}

beforeAll(async () => {
  docker = parseDockerfile(join(ROOT, "Dockerfile"));
  expect(docker.stages.map((s) => s.name)).toEqual(["build", "runtime"]);
  [build, runtime] = docker.stages as [Stage, Stage];
  layout = mkdtempSync(join(tmpdir(), "mufold-image-"));
  // The runtime stage in order: COPY lays files down, RUN's npm ci installs.
  for (const instruction of runtime.instructions) {
    if (instruction.keyword === "COPY") copy(instruction, layout);
    if (instruction.keyword === "RUN" && instruction.text.startsWith("apt-get ")) {
      aptRuns.push(instruction.text); // a system package: checked below, not installed here
    } else if (instruction.keyword === "RUN") {
      const commands = instruction.text.split("&&").map((c) => c.trim());
      const others = commands.filter((c) => !c.startsWith("npm ci "));
      // The only other command is the cache clean, which would empty this machine's npm cache: not run here.
      expect(others).toEqual(["npm cache clean --force"]);
      for (const c of commands.filter((c) => c.startsWith("npm ci "))) {
        const args = c.split(/\s+/).slice(1);
        expect(args).toEqual(expect.arrayContaining(["--omit=dev", "--ignore-scripts"]));
        await run("npm", [...args, "--prefer-offline"], { cwd: layout, env: { ...process.env, npm_config_loglevel: "error" } });
      }
    }
  }
  entrypoint = last(runtime, "ENTRYPOINT")!.args;
}, 300_000);

afterAll(() => {
  if (layout !== undefined) rmSync(layout, { recursive: true, force: true });
});

describe("the Dockerfile", () => {
  it("builds from the Node version the other tiers test (scripts/node-versions.sh), slim, in both stages", () => {
    const pinned = readFileSync(join(ROOT, "scripts/node-versions.sh"), "utf8").match(/^\s*"(24\.\d+\.\d+) sha512-/m);
    expect(pinned, "scripts/node-versions.sh has no Node 24 entry").not.toBeNull();
    expect(docker.globalArgs.NODE_VERSION).toBe(pinned![1]);
    for (const stage of docker.stages) expect(stage.from).toBe(`node:${pinned![1]}-slim`);
  });

  it("the build stage installs without scripts, copies sources that exist and are in the context, and compiles with npm run build", () => {
    const runs = build.instructions.filter((i) => i.keyword === "RUN").map((i) => i.text);
    expect(runs[0]).toMatch(/^npm ci --ignore-scripts\b/);
    expect(runs.at(-1)).toBe("npm run build");
    const copies = build.instructions.filter((i) => i.keyword === "COPY");
    for (const c of copies) for (const source of c.args.slice(0, -1)) contextSource(source);
    // tsconfig.build.json compiles these, and copy-assets.mjs copies the Lua next to them.
    const sources = copies.flatMap((c) => c.args.slice(0, -1));
    for (const needed of ["package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json", "scripts/copy-assets.mjs", "src", "consumers", "producers"]) {
      expect(sources).toContain(needed);
    }
  });

  it("the runtime stage runs as a non-root user, starts the fold with HTTP by default, and checks /healthz on that port", () => {
    const user = last(runtime, "USER")!.args[0]!;
    expect(user.split(":")[0]).not.toMatch(/^(0|root)$/);
    expect(Number(user.split(":")[0])).toBeGreaterThan(0);
    expect(entrypoint).toEqual(["node", ...WORKER_NODE_FLAGS, "bin/mufold.js"]);
    const cmd = last(runtime, "CMD")!.args;
    expect(cmd[0]).toBe("fold");
    const port = cmd[cmd.indexOf("--http-port") + 1];
    expect(cmd[cmd.indexOf("--http-host") + 1]).toBe("0.0.0.0");
    const health = last(runtime, "HEALTHCHECK")!;
    expect(health.args[0]).toBe("CMD");
    expect(health.args[1]).toBe("node");
    expect(health.args.join(" ")).toContain(`http://127.0.0.1:${port}/healthz`);
  });
});

describe("the image's allocator", () => {
  it("is jemalloc (IMAGE_ALLOCATOR), from Debian's package, preloaded for every process from one path", async () => {
    const env = runtime.instructions.filter((i) => i.keyword === "ENV").map((i) => i.text);
    expect(env).toContain(`LD_PRELOAD=/usr/local/lib/${IMAGE_ALLOCATOR}`);
    expect(aptRuns).toHaveLength(1);
    expect(aptRuns[0]!.split("&&").map((c) => c.trim())).toEqual([
      "apt-get update",
      "apt-get install -y --no-install-recommends libjemalloc2",
      "rm -rf /var/lib/apt/lists/*",
      `ln -s "/usr/lib/$(uname -m)-linux-gnu/${IMAGE_ALLOCATOR}" /usr/local/lib/${IMAGE_ALLOCATOR}`,
    ]);
    // The link's target as the RUN line expands it here (Debian's multiarch directory: redis-tools, which the
    // services install, depends on libjemalloc2), and Node runs with it preloaded.
    const target = `/usr/lib/${(await run("uname", ["-m"])).stdout.trim()}-linux-gnu/${IMAGE_ALLOCATOR}`;
    expect(existsSync(target), `${target}: Debian's libjemalloc2 is not installed here`).toBe(true);
    const maps = await run(process.execPath, ["-e", "process.stdout.write(require('fs').readFileSync('/proc/self/maps', 'utf8'))"], { env: { ...process.env, LD_PRELOAD: target } });
    expect(maps.stdout).toContain(target);
  });
});

describe("the runtime layout, installed as the Dockerfile installs it", () => {
  it("holds what the runtime stage copies, the production dependencies and no development ones", () => {
    expect(readdirSync(layout).sort()).toEqual(["bin", "dist", "node_modules", "package-lock.json", "package.json"]);
    expect(existsSync(join(layout, "dist/src/cli/main.js"))).toBe(true);
    expect(existsSync(join(layout, "dist/src/adapters/redis/functions/mufold_v1.lua"))).toBe(true);
    for (const dep of Object.keys(pkg.dependencies)) expect(existsSync(join(layout, "node_modules", dep, "package.json")), dep).toBe(true);
    for (const dev of Object.keys(pkg.devDependencies)) expect(existsSync(join(layout, "node_modules", dev)), dev).toBe(false);
  });

  it("`mufold --version` prints package.json's version", async () => {
    const r = await mufold(["--version"]);
    expect(r).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
  });

  it("`mufold serve --help`, `setup --help` and the default command with --help answer with their usage", async () => {
    const serve = await mufold(["serve", "--help"]);
    expect(serve.code).toBe(0);
    expect(serve.stdout).toMatch(/^usage: mufold serve /);
    const setup = await mufold(["setup", "--help"]);
    expect(setup.code).toBe(0);
    expect(setup.stdout).toMatch(/^usage: mufold setup /);
    const fold = await mufold([...last(runtime, "CMD")!.args, "--help"]);
    expect(fold.code).toBe(0);
    expect(fold.stdout).toMatch(/^usage: mufold fold /);
  });

  it("the package resolves itself (how replay --workers finds bin/mufold.js) and its public API loads", async () => {
    const script = [
      `import { createRequire } from "node:module";`,
      `const self = createRequire(process.cwd() + "/").resolve("mufold/package.json");`,
      `const api = await import("mufold");`,
      `console.log(JSON.stringify({ self, exports: Object.keys(api).length }));`,
    ].join("\n");
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: layout });
    const out = JSON.parse(stdout) as { self: string; exports: number };
    expect(out.self).toBe(join(layout, "package.json"));
    expect(out.exports).toBeGreaterThan(0);
  });
});
