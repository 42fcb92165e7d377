/**
 * Running fold workers as processes and waiting for them: shared by the demo,
 * the tests and the benchmarks, so every harness starts workers the same way.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { createKafka, kafkaClientSettings } from "../../src/adapters/kafka/client.js";
import { groupOffsets, partitionOffsets } from "../../src/adapters/kafka/topics.js";
import { settingsEnv, type Settings } from "../../src/config/settings.js";
import { MufoldError } from "../../src/errors.js";

/** The CLI entry, bin/mufold.js, found through the package's own name (the same from source and from dist/). */
export function mufoldBin(): string {
  return join(dirname(createRequire(import.meta.url).resolve("mufold/package.json")), "bin", "mufold.js");
}

/**
 * V8 flags for every mufold process (bin/mufold.js's shebang, the Dockerfile's
 * ENTRYPOINT and the k8s manifest carry the same list; tests hold them equal):
 * - a 32 MiB young generation (semi-space): most of a record's garbage dies
 *   before a scavenge, so less is copied;
 * - no allocation-site pretenuring: V8 otherwise allocates some of the fold's
 *   sites straight into the old generation, a decision that differs from
 *   process to process and promotes more per record.
 */
export const WORKER_NODE_FLAGS = ["--max-semi-space-size=32", "--no-allocation-site-pretenuring"];

/**
 * The allocator the image preloads for every process (the Dockerfile's
 * LD_PRELOAD; benchmarks run mufold under it too, bench/mufold-flags.ts).
 * glibc's malloc gives each thread that decompresses a batch its own heap and
 * keeps what the batches freed there: a worker's memory outside the V8 heap
 * grew with the records it had read (82-85 MiB after 10,000 identities,
 * 170-173 after 300,000), and jemalloc returns it (docs/benchmarks.md, memory).
 */
export const IMAGE_ALLOCATOR = "libjemalloc.so.2";

/**
 * Start `mufold fold` in its own process with these settings (in its environment).
 * Run `ensureSetup(settings)` (what `mufold setup` does for Redis) once before:
 * the worker only checks for the Redis functions and exits 2 without them.
 */
export function spawnFoldWorker(settings: Settings, extraEnv: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [...WORKER_NODE_FLAGS, mufoldBin(), "fold"], {
    env: { ...process.env, ...settingsEnv(settings), MUFOLD_LOG_LEVEL: process.env.MUFOLD_LOG_LEVEL ?? "error", ...extraEnv },
    stdio: ["ignore", "ignore", "inherit"],
  });
}

/** The environment that gives a spawned `mufold` command these settings (all of the registry's). */
export { settingsEnv };

/** Wait until the group has committed every partition's end offset (Redis has every record). */
export async function waitForGroup(
  settings: Settings,
  timeoutMs: number,
  onProgress?: (done: number, total: number) => void,
): Promise<void> {
  const admin = createKafka(kafkaClientSettings(settings, "-watch")).admin();
  await admin.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ends = await partitionOffsets(admin, settings.topic);
      const committed = await groupOffsets(admin, settings.group, settings.topic);
      if (onProgress) {
        const total = ends.reduce((a, e) => a + Number(e.high), 0);
        const done = ends.reduce((a, e) => a + Math.max(0, Number(committed.get(e.partition) ?? 0n)), 0);
        onProgress(done, total);
      }
      if (ends.every((e) => e.high === 0n || (committed.get(e.partition) ?? -1n) >= e.high)) return;
      if (Date.now() > deadline) {
        throw new MufoldError(`group ${settings.group} did not catch up in ${timeoutMs} ms: ends ${JSON.stringify(ends.map((e) => String(e.high)))}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await admin.disconnect();
  }
}
