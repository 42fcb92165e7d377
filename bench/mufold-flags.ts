/**
 * Benchmarks measure mufold as it runs: every `mufold` process starts Node with
 * WORKER_NODE_FLAGS (bin/mufold.js's shebang), so a bench that runs mufold code
 * in its own process re-executes itself under them first — unless the command
 * line already sets the semi-space size (to measure another one): measured
 * in the same process as the fold, the flags matter.
 */
import { spawn } from "node:child_process";
import { WORKER_NODE_FLAGS } from "../consumers/fold/fold-process.js";

/** Node's own options this process runs with (the tsx loader's --require/--import and their values left out). */
export function nodeFlagsInEffect(): string[] {
  const out: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--require" || arg === "--import" || arg === "-r") i++;
    else if (!arg.startsWith("--require=") && !arg.startsWith("--import=")) out.push(arg);
  }
  return [...out, ...(process.env.NODE_OPTIONS ? [`NODE_OPTIONS=${process.env.NODE_OPTIONS}`] : [])];
}

const SEMI_SPACE = /^--max[-_]semi[-_]space[-_]size[= ]/;

/**
 * Re-run this script under the flags unless it already has a semi-space size;
 * this process then only relays SIGINT/SIGTERM to the child and exits as it
 * did (the child's signal re-raised here).
 */
export async function runUnderMufoldFlags(): Promise<void> {
  if (process.execArgv.some((a) => SEMI_SPACE.test(a)) || SEMI_SPACE.test(process.env.NODE_OPTIONS ?? "")) return;
  const child = spawn(process.execPath, [...process.execArgv, ...WORKER_NODE_FLAGS, ...process.argv.slice(1)], { stdio: "inherit" });
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
