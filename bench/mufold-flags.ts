/**
 * Benchmarks measure mufold as it runs: every `mufold` process starts Node with
 * WORKER_NODE_FLAGS (bin/mufold.js's shebang), so a bench that runs mufold code
 * in its own process re-executes itself under them first. Without them the
 * in-process fold spent ~10% more CPU per record and the embedded reducer up to
 * ~1.5× longer on a 1,000-delivery identity, in scavenges (docs/benchmarks.md).
 */
import { spawnSync } from "node:child_process";
import { WORKER_NODE_FLAGS } from "../consumers/fold-process.js";

export { WORKER_NODE_FLAGS };

/** Re-run this script under the flags (and exit with its status) unless it already has them. */
export function runUnderMufoldFlags(): void {
  if (WORKER_NODE_FLAGS.every((flag) => process.execArgv.includes(flag))) return;
  const again = spawnSync(process.execPath, [...process.execArgv, ...WORKER_NODE_FLAGS, ...process.argv.slice(1)], { stdio: "inherit" });
  process.exit(again.status ?? 1);
}
