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
import { randomBytes } from "node:crypto";
import { createKafka, kafkaClientSettings } from "../../src/adapters/kafka/client.js";
import { assertInfiniteRetention, groupOffsets, partitionOffsets } from "../../src/adapters/kafka/topics.js";
import { connectRedis, redisClientSettings } from "../../src/adapters/redis/connect.js";
import { assertFunctionsLoaded } from "../../src/adapters/redis/functions.js";
import { RedisControlStore } from "../../src/adapters/redis/control-store.js";
import { RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import { PromoteBehindError, type ControlStore } from "../../src/fold/control-store.js";
import type { Settings } from "../../src/config/settings.js";
import { MufoldError } from "../../src/errors.js";
import type { Logger } from "../../src/observability/log.js";
import { marksOfTopic, pastEndDetails, verifyCoverage, verifyTarget, type VerifyCoverage } from "../verify/coverage.js";
import { readPartitionOffsets } from "../verify/coverage-source.js";
import { FleetPause } from "./fleet-pause.js";
import { partitionField } from "../fold/partition-guard.js";
import { LocalShadow, type ShadowReader } from "./replay-build.js";
import { SplitReader, WorkerPool, splitPartitions } from "./replay-workers.js";
import { coverageFailures, differingOrigins, failedReport, verifyGenerations, withFailures, type VerifyDetails, type VerifyFailure, type VerifyReport } from "../verify/verify.js";
import { AbortedError, sleepUnlessAborted, waitFor } from "./waiting.js";

export interface ReplayOptions {
  verify: boolean;
  promote: boolean;
  /** --verify: hold the live generation to the log's end (captured at start), not only to what the group committed. */
  toEnd?: boolean;
  /** Keep the shadow generation after a verify-only run. */
  keepShadow?: boolean;
  /** Seconds to keep the old generation readable after a promote. */
  dropAfterSeconds?: number;
  pauseTimeoutSeconds?: number;
  /** Seconds without progress after which a wait fails (default: the outage tolerance, at least 60). */
  stallSeconds?: number;
  /** Promote a generation whose reducer version differs from the live one's (an upgrade or a rollback). */
  changeReducerVersion?: boolean;
  /** Aborts the replay (SIGINT/SIGTERM): the pause is released and the shadow dropped. */
  signal?: AbortSignal;
  /** Processes that read the partitions (split across them); 1 reads in this process. */
  workers?: number;
  /** Bytes of records a reader gathers into one chunk before it stops fetching (bounds its memory). */
  chunkBytes?: number;
  onProgress?(p: { consumed: number; total: number; elapsedSeconds: number }): void;
  /** --verify: filled with the per-identity results (for `--report`); the summary stays as it is. */
  details?: VerifyDetails;
}

export interface ReplaySummary {
  liveGeneration: number | null;
  rebuiltGeneration: number;
  records: number;
  deliveries: number;
  duplicatesSkipped: number;
  dlq: number;
  dlqByReason: Record<string, number>;
  identities: number;
  seconds: number;
  recordsPerSecond: number;
  /** Processes that rebuilt (1: this one). */
  workers: number;
  /** Seconds until the rebuild reached its first targets (before any pause, verify or promote). */
  rebuildSeconds: number;
  verify: VerifyReport | null;
  /** --verify only: each partition's live mark against the offset the rebuild read to (behind_log), null otherwise. */
  coverage: VerifyCoverage | null;
  /** --verify only: true when every identity was compared and found byte-equal and no live mark is behind. */
  verified: boolean | null;
  /** Identities not proven equal by --verify: differing bytes, or not comparable. */
  mismatches: number;
  promoted: boolean;
}

/**
 * Record bytes a reader gathers per chunk: several fetches' worth. On the bench workload the CPU per record was
 * flat from 2 to 32 MiB (fewer applies per identity, more garbage collection of records held across fetches), so
 * the default keeps memory modest: at most two chunks (one applying, one filling) per reader.
 */
export const DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024;

export async function runReplay(settings: Settings, options: ReplayOptions, log: Logger): Promise<ReplaySummary> {
  const kafka = createKafka(kafkaClientSettings(settings, "-replay"));
  const redis = connectRedis(redisClientSettings(settings));
  const identities = new RedisIdentityStore(redis, settings.prefix);
  const controlStore = new RedisControlStore(redis, settings.prefix);
  const admin = kafka.admin();
  const started = Date.now();
  const signal = options.signal;
  const stallSeconds = options.stallSeconds ?? Math.max(60, settings.outageToleranceSeconds);
  const groupId = `${settings.group}.replay.${randomBytes(4).toString("hex")}`;
  const token = randomBytes(8).toString("hex");
  let reader: ShadowReader | undefined;
  /** The throwaway groups of this replay's readers (deleted at the end). */
  const groups: string[] = [];
  let pause: FleetPause | undefined;
  let rebuilt: number | undefined;
  let promoted = false;
  let buildRenewal: NodeJS.Timeout | undefined;
  try {
    await admin.connect();
    if (!(await admin.listTopics()).includes(settings.topic)) {
      throw new MufoldError(`topic ${settings.topic} does not exist on ${settings.brokers.join(",")}: nothing to replay (check --topic / MUFOLD_TOPIC)`);
    }
    await assertInfiniteRetention(admin, settings.topic, settings.allowFiniteRetention);
    await assertFunctionsLoaded(redis);
    const control = await controlStore.state();
    const live = control.generation;
    if (options.promote && live !== null && control.reducerVersion !== null && control.reducerVersion !== settings.reducerVersion && !options.changeReducerVersion) {
      throw new MufoldError(
        `the live generation ${live} holds reducer_version ${control.reducerVersion}; promoting ${settings.reducerVersion} would leave running folds ` +
          `on the old one. Stop the folds, run again with --change-reducer-version, then start the folds with MUFOLD_REDUCER_VERSION=${settings.reducerVersion} (docs/operations.md)`,
      );
    }
    const comparable = live !== null && (control.reducerVersion === null || control.reducerVersion === settings.reducerVersion);
    const toEnd = options.verify && options.toEnd === true;
    const liveOffsets = () => readPartitionOffsets(admin, controlStore, settings.topic, settings.group, live);
    const liveMarks = async () => marksOfTopic(live === null ? new Map() : await controlStore.generationFields(live, "mark"), settings.topic);
    const atStart = await liveOffsets();
    const startEnds = new Map(atStart.map((p) => [p.partition, p.end]));
    // A log shorter than what the live generation folded was truncated or recreated: it cannot be compared,
    // and the live marks bound nothing a rebuild must hold.
    const shorter = atStart.some((p) => (p.mark ?? 0n) > p.end);
    // Verify rebuilds everything the live fold sealed or the group committed (--to-end: the whole log), capped at
    // the log's end; a promote goes to the end of the log.
    const targets = new Map(atStart.map((p) => [p.partition, options.verify && comparable ? verifyTarget(p, toEnd ? p.end : null) : p.end]));

    // The build holds a lease it renews: a killed replay's generation is dropped by a later promote.
    const buildLeaseMs = Math.max(60_000, settings.pauseLeaseSeconds * 1000);
    rebuilt = await controlStore.allocateGeneration(settings.reducerVersion, token, buildLeaseMs);
    const generation = rebuilt;
    buildRenewal = setInterval(() => {
      controlStore.renewBuild(generation, token, buildLeaseMs).catch((error) => log.warn("could not renew the build lease", { generation, error: String(error) }));
    }, buildLeaseMs / 3);
    buildRenewal.unref();
    const total = () => [...targets.values()].reduce((a, t) => a + Number(t), 0);
    const summary: ReplaySummary = {
      liveGeneration: live,
      rebuiltGeneration: generation,
      records: 0,
      deliveries: 0,
      duplicatesSkipped: 0,
      dlq: 0,
      dlqByReason: {},
      identities: 0,
      seconds: 0,
      recordsPerSecond: 0,
      workers: Math.max(1, Math.min(options.workers ?? 1, targets.size)),
      rebuildSeconds: 0,
      verify: null,
      coverage: null,
      verified: null,
      mismatches: 0,
      promoted: false,
    };
    log.info("replay started", { rebuilt: generation, live, group: groupId, verify: options.verify, promote: options.promote, workers: summary.workers });

    const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    const onAdvance = () => options.onProgress?.({ consumed: reader?.stats().records ?? 0, total: total(), elapsedSeconds: (Date.now() - started) / 1000 });
    if (summary.workers > 1) {
      // This process reads the first share itself (it is otherwise idle until the rebuild is done); workers the rest.
      const [own, ...others] = splitPartitions(targets, summary.workers);
      for (let i = 1; i <= summary.workers; i++) groups.push(`${groupId}.${i}`);
      const partitions = [...targets.keys()];
      const pool = WorkerPool.start({ settings, generation, token, groupPrefix: groupId, shares: others, partitions, firstIndex: 2, count: summary.workers, chunkBytes, log, onAdvance });
      reader = pool; // stopped on a failure from here on
      const mine = { targets: own!, others: partitions.filter((p) => !own!.has(p)) };
      reader = new SplitReader([pool, await LocalShadow.start(kafka, { settings, generation, token, groupId: `${groupId}.1`, ...mine, chunkBytes, log, onAdvance })]);
    } else {
      groups.push(groupId);
      reader = await LocalShadow.start(kafka, { settings, generation, token, groupId, targets, chunkBytes, log, onAdvance });
    }
    const readAll = async (what: string) => {
      const r = reader!;
      await waitFor(what, () => r.reached(), { progress: () => r.progress(), failure: () => r.failure(), stallSeconds, signal });
    };
    await readAll("replay");
    summary.rebuildSeconds = (Date.now() - started) / 1000;

    if (options.verify || options.promote) {
      // Hold the live fold still (a lease: if this process dies, the folds resume by themselves).
      pause = await FleetPause.take(controlStore, settings.pauseLeaseSeconds, log);
      await pause.awaitAcks(admin, settings.group, options.pauseTimeoutSeconds ?? 120, signal, () => reader?.failure());
      if (options.verify) {
        // The fleet holds still now: the final marks and commits, and what the rebuild must hold of each partition.
        const held = await liveOffsets();
        const required = new Map(held.map((p) => [p.partition, verifyTarget(p, toEnd ? (startEnds.get(p.partition) ?? p.end) : null)]));
        if (!comparable) {
          summary.coverage = verifyCoverage(held, required, toEnd ? "end" : "committed");
          summary.verify = failedReport(
            live === null
              ? { reason: "no_live_generation", detail: "there is no live generation to compare with (nothing folded yet, or Redis lost it)" }
              : { reason: "reducer_version_differs", detail: `the live generation holds reducer_version ${control.reducerVersion}, the rebuild ${settings.reducerVersion}` },
          );
        } else {
          const catchUp = new Map(held.map((p) => [p.partition, minOf(maxOf(targets.get(p.partition), required.get(p.partition)), p.end)]));
          await reader.raiseTargets(catchUp);
          await readAll("replay (catching up to the live fold)");
          summary.coverage = verifyCoverage(held, catchUp, toEnd ? "end" : "committed");
          const truncated = pastEndDetails(held).map((detail): VerifyFailure => ({ reason: "topic_origin_differs", detail }));
          summary.verify = withFailures(await verifyGenerations({ identities, control: controlStore }, live!, generation, options.details), [...truncated, ...coverageFailures(summary.coverage)]);
        }
        summary.verified = summary.verify.ok;
        summary.mismatches = summary.verify.mismatches + summary.verify.notComparable + (summary.verify.ok || summary.verify.identities > 0 ? 0 : 1);
      }
      // A failed comparison with a live generation never promotes; with none, the promote is the restore.
      if (options.promote && (summary.verified !== false || live === null || !comparable)) {
        // The live generation folded another log when its marks pass the log's end or its origins differ
        // (a recreated topic): then its marks do not bound what the rebuild must hold.
        const logChanged = live !== null && (shorter || (await differingOrigins(controlStore, live, generation)).length > 0);
        for (let attempt = 1; ; attempt++) {
          // Everything the live fold has folded or committed, capped at the log's end.
          const committed = await groupOffsets(admin, settings.group, settings.topic);
          const marks = await liveMarks();
          const catchUp = new Map<number, bigint>();
          for (const e of await partitionOffsets(admin, settings.topic)) {
            const want = maxOf(marks.get(e.partition), committed.get(e.partition), targets.get(e.partition));
            catchUp.set(e.partition, want < e.high ? want : e.high);
          }
          await reader.raiseTargets(catchUp);
          await readAll("replay (catching up to the live fold)");
          await controlStore.seal(generation, token, sealMarks(settings.topic, reader.positionsNow()));
          try {
            // Atomic: the token, the live generation still `live`, the pause, and no live mark past ours.
            await controlStore.promote(generation, token, pause.epoch, live, logChanged);
            break;
          } catch (err) {
            // A worker sealed past us before it saw the pause (it cannot since): read that far, then again.
            if (!(err instanceof PromoteBehindError) || attempt >= 5) throw err;
            log.warn("the live fold sealed past the rebuild; catching up again", { attempt });
          }
        }
        promoted = summary.promoted = true;
        log.info("promoted", { generation, previous: live });
      }
      await pause.release();
      pause = undefined;
    }
    await reader.stop();
    Object.assign(summary, reader.stats());
    reader = undefined;
    await admin.deleteGroups(groups).catch(() => undefined);

    summary.identities = (await identities.listIdentities(generation)).length;
    summary.seconds = (Date.now() - started) / 1000;
    summary.recordsPerSecond = summary.seconds > 0 ? Math.round(summary.records / summary.seconds) : summary.records;
    if (promoted) {
      await sleepUnlessAborted((options.dropAfterSeconds ?? 5) * 1000, signal).catch(() => undefined); // readers mid-read of the old generation finish first
      await dropOldGenerations(identities, controlStore, generation, log);
    } else if (!options.keepShadow) {
      await dropGeneration(identities, controlStore, generation);
    }
    log.info("replay finished", { ...summary, verify: undefined });
    return summary;
  } catch (err) {
    // Release the fleet and stop reading first (nothing may write into the shadow while it is dropped),
    // and never drop a generation that is live: a promote whose reply was lost may have flipped.
    await pause?.release();
    pause = undefined;
    await reader?.stop().catch(() => undefined);
    reader = undefined;
    await admin.deleteGroups(groups).catch(() => undefined);
    if (rebuilt !== undefined && !promoted) {
      const nowLive = await controlStore.liveGeneration().catch(() => rebuilt);
      if (nowLive !== rebuilt) await dropGeneration(identities, controlStore, rebuilt).catch((error) => log.warn("could not drop the shadow generation", { generation: rebuilt, error: String(error) }));
    }
    throw err instanceof AbortedError || signal?.aborted ? new AbortedError("replay stopped by a signal: the fleet pause was released and the shadow generation dropped") : err;
  } finally {
    clearInterval(buildRenewal);
    await pause?.release();
    await reader?.stop().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    await redis.quit().catch(() => undefined);
  }
}

const minOf = (a: bigint, b: bigint): bigint => (a < b ? a : b);

function maxOf(...values: (bigint | undefined)[]): bigint {
  let out = 0n;
  for (const v of values) if (v !== undefined && v > out) out = v;
  return out;
}

function sealMarks(topic: string, positions: ReadonlyMap<number, bigint>): Map<string, bigint> {
  return new Map([...positions].map(([p, next]) => [partitionField(topic, p), next]));
}

/** Every key of a generation (identities, index, change feed) and its control fields. */
async function dropGeneration(identities: RedisIdentityStore, control: ControlStore, generation: number): Promise<void> {
  await identities.dropGeneration(generation);
  await control.forgetGeneration(generation);
  await identities.dropChanges(generation);
}

/**
 * After a promote: drop the generations older than the promoted one that are
 * not being built (the old live one, and any orphaned by a loss). Never the
 * live one, nor a newer one (another promote may have followed ours).
 */
async function dropOldGenerations(identities: RedisIdentityStore, control: ControlStore, keep: number, log: Logger): Promise<void> {
  const building = await control.buildingGenerations();
  for (const g of await identities.indexedGenerations()) {
    if (g >= keep || building.has(g) || g === (await control.liveGeneration())) continue;
    await dropGeneration(identities, control, g);
    log.info("dropped generation", { generation: g });
  }
}
