/**
 * One worker process of `mufold replay --workers N` (started by the
 * coordinator as `mufold replay --internal-worker`, with an IPC channel):
 * it reads its share of the partitions from offset 0 into the coordinator's
 * generation, reports its applied positions after every chunk, raises its
 * targets when told, and stops when told. It never seals, verifies, promotes
 * or drops anything: the coordinator does, once every worker has stopped.
 *
 * It ends on its own only on a failure (reported, then it exits non-zero), on
 * SIGTERM, or when the coordinator is gone (the channel closes): a worker
 * never outlives its replay. SIGINT is left to the coordinator, which stops
 * its workers itself (a terminal sends it to the whole process group).
 */
import { createKafka, kafkaClientSettings } from "../../src/adapters/kafka/client.js";
import { MufoldError } from "../../src/errors.js";
import type { Logger } from "../../src/observability/log.js";
import { LocalShadow } from "./replay-build.js";
import { settingsFromWire, type FromWorker, type ToWorker, type WorkerJob } from "./replay-protocol.js";

type Ending = { kind: "stop" } | { kind: "failed"; error: unknown } | { kind: "signal" } | { kind: "orphaned" };

function post(message: FromWorker): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected || process.send === undefined) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

export async function runReplayWorker(log: Logger): Promise<number> {
  if (process.send === undefined || !process.connected) {
    throw new MufoldError("--internal-worker is internal: `mufold replay --workers N` starts its worker processes with it");
  }
  let shadow: LocalShadow | undefined;
  let end!: (why: Ending) => void;
  const ended = new Promise<Ending>((resolve) => (end = resolve));
  let started!: (job: WorkerJob) => void;
  const gotJob = new Promise<WorkerJob>((resolve) => (started = resolve));
  /** Targets raised before the reader started (a share of empty partitions is "reached" at once): applied once it has. */
  const early = new Map<number, bigint>();
  process.on("message", (m: ToWorker) => {
    if (m.type === "start") started(m.job);
    else if (m.type === "raise" && shadow !== undefined) void shadow.raiseTargets(m.targets);
    else if (m.type === "raise") for (const [p, t] of m.targets) early.set(p, t > (early.get(p) ?? 0n) ? t : early.get(p)!);
    else if (m.type === "stop") end({ kind: "stop" });
  });
  process.once("disconnect", () => end({ kind: "orphaned" }));
  process.once("SIGTERM", () => end({ kind: "signal" }));
  const ignoreSigint = () => undefined;
  process.on("SIGINT", ignoreSigint);
  await post({ type: "ready" });
  const job = await Promise.race([gotJob, ended.then(() => undefined)]);
  if (job === undefined) return 1;

  const settings = settingsFromWire(job.settings);
  const wlog = log.child({ worker: job.index, workers: job.count, generation: job.generation });
  const kafka = createKafka(kafkaClientSettings(settings, `-replay-${job.index}`));
  let poll: NodeJS.Timeout | undefined;
  const report = () => void post({ type: "progress", positions: shadow!.positionsNow(), stats: { ...shadow!.stats() } });
  try {
    shadow = await LocalShadow.start(kafka, {
      settings,
      generation: job.generation,
      token: job.token,
      groupId: job.groupId,
      targets: job.targets,
      others: job.others,
      chunkBytes: job.chunkBytes,
      log: wlog,
      onAdvance: report,
    });
    if (early.size > 0) await shadow.raiseTargets(early);
    wlog.debug("replay worker started", { partitions: [...job.targets.keys()] });
    poll = setInterval(() => {
      const failure = shadow!.failure();
      if (failure !== undefined) end({ kind: "failed", error: failure });
    }, 50);
    const why = await ended;
    clearInterval(poll);
    await shadow.stop(); // a chunk in flight lands before the coordinator may drop the generation
    if (why.kind === "stop") {
      await post({ type: "stopped", positions: shadow.positionsNow(), stats: { ...shadow.stats() } });
      return 0;
    }
    if (why.kind === "failed") throw why.error;
    wlog.warn(why.kind === "signal" ? "replay worker stopped by SIGTERM" : "the replay that started this worker is gone: stopping");
    return 1;
  } catch (err) {
    await post({ type: "failed", message: err instanceof Error ? err.message : String(err), mufold: err instanceof MufoldError });
    throw err;
  } finally {
    clearInterval(poll);
    await shadow?.stop().catch(() => undefined);
    process.off("SIGINT", ignoreSigint);
    if (process.connected) process.disconnect();
  }
}
