/**
 * Replay: rebuild every projection from offset 0 into a new (shadow)
 * generation with a throwaway consumer group, then verify it against the live
 * one and, with --promote, make it live (blue/green).
 *
 * - The shadow's number is new (never reused) and carries a build token; the
 *   promote flips only if the token is still in the control hash, so a Redis
 *   that lost everything mid-replay is never promoted from a partial rebuild.
 * - --verify proves coverage as well as equality: the rebuild reads up to
 *   everything the live generation folded (its marks) or the fold group
 *   committed (with --to-end, the log's end), under a fleet pause so they hold
 *   still. A live mark behind that target is `behind_log` (a Redis that went
 *   back in time, or group offsets moved past the marks): it never verifies.
 *   Anything it cannot compare fails.
 * - --promote pauses the fleet with a lease this process renews, catches up to
 *   the group's committed offsets and the live marks, and flips atomically.
 *   A crash lets the lease run out; SIGINT/SIGTERM release it at once.
 * - Every wait has a deadline; a crashed consumer ends the replay with its cause.
 * - The rebuild is bulk (consumers/replay/replay-build.ts): no loads for the fresh
 *   generation, no per-batch bookkeeping in Redis or Kafka (positions are kept
 *   in memory; the sealed marks are the progress record), records applied in
 *   chunks bounded by `chunkBytes`. With `workers` > 1 the partitions are split
 *   into that many shares: this process reads one, worker processes the others,
 *   all writing the same generation (replay-workers.ts); this process still
 *   does the sealing, verify and promote.
 */
import type { Settings } from "../../src/config/settings.js";
import type { Logger } from "../../src/observability/log.js";
import { ReplayRun } from "./replay-run.js";
import type { ReplayOptions, ReplaySummary } from "./replay-summary.js";

export async function runReplay(settings: Settings, options: ReplayOptions, log: Logger): Promise<ReplaySummary> {
  const run = new ReplayRun(settings, options, log);
  try {
    const plan = await run.plan();
    const summary = await run.rebuild(plan);
    if (options.verify || options.promote) {
      await run.holdFleet(); // the live fold holds still (a lease: if this process dies, the folds resume by themselves)
      if (options.verify) await run.verify(plan, summary);
      // A failed comparison with a live generation never promotes; with none, the promote is the restore.
      if (options.promote && (summary.verified !== false || plan.live === null || !plan.comparable)) await run.promote(plan, summary);
      await run.releaseFleet();
    }
    return await run.finish(summary);
  } catch (err) {
    throw await run.abandon(err);
  } finally {
    await run.close();
  }
}
