/**
 * Benchmarks measure mufold as it runs: every `mufold` process starts Node with
 * WORKER_NODE_FLAGS (bin/mufold.js's shebang), and in the image under jemalloc
 * (IMAGE_ALLOCATOR, preloaded). So a bench that runs mufold code in its own
 * process re-executes itself under both first (the processes it spawns inherit
 * the allocator) — unless the command line already sets the semi-space size
 * (to measure another one) and LD_PRELOAD is set or the allocator is not on
 * this machine. `MUFOLD_BENCH_ALLOCATOR=glibc` measures without it.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { machine } from "node:os";
import { IMAGE_ALLOCATOR, WORKER_NODE_FLAGS } from "../consumers/fold/fold-process.js";

/** Node's own options this process runs with (the tsx loader's --require/--import and their values left out). */
export function nodeFlagsInEffect(): string[] {
  const out: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--require" || arg === "--import" || arg === "-r") i++;
    else if (!arg.startsWith("--require=") && !arg.startsWith("--import=")) out.push(arg);
  }
  const env = (name: string) => (process.env[name] ? [`${name}=${process.env[name]}`] : []);
  return [...out, ...env("NODE_OPTIONS"), ...env("LD_PRELOAD")];
}

/** The image's allocator on this machine (Debian's multiarch directory, or where the image links it), else null. */
function imageAllocator(): string | null {
  if (process.env.MUFOLD_BENCH_ALLOCATOR === "glibc" || process.env.LD_PRELOAD) return null;
  for (const dir of [`/usr/lib/${machine()}-linux-gnu`, "/usr/local/lib"]) {
    if (existsSync(`${dir}/${IMAGE_ALLOCATOR}`)) return `${dir}/${IMAGE_ALLOCATOR}`;
  }
  return null;
}

const SEMI_SPACE = /^--max[-_]semi[-_]space[-_]size[= ]/;

/**
 * Re-run this script under the flags (unless it already has a semi-space size)
 * and the allocator (unless it has LD_PRELOAD or the machine lacks it); this
 * process then only relays SIGINT/SIGTERM to the child and exits as it
 * did (the child's signal re-raised here).
 */
export async function runUnderMufoldFlags(): Promise<void> {
  const flagged = process.execArgv.some((a) => SEMI_SPACE.test(a)) || SEMI_SPACE.test(process.env.NODE_OPTIONS ?? "");
  const allocator = imageAllocator();
  if (flagged && allocator === null) return;
  // Said once, by the process that decides (the child is flagged and finds no allocator either).
  if (allocator === null && process.env.MUFOLD_BENCH_ALLOCATOR !== "glibc" && !process.env.LD_PRELOAD) {
    process.stderr.write(`bench: ${IMAGE_ALLOCATOR} not found, measuring under glibc's malloc (the image preloads jemalloc)\n`);
  }
  const child = spawn(process.execPath, [...process.execArgv, ...(flagged ? [] : WORKER_NODE_FLAGS), ...process.argv.slice(1)], {
    stdio: "inherit",
    env: allocator === null ? process.env : { ...process.env, LD_PRELOAD: allocator },
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (c, s) => resolve([c, s]));
  });
  if (signal !== null) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  process.exit(code ?? 1);
}
