/**
 * One replay's connections, state and steps; runReplay (replay.ts) runs the
 * steps in order: plan, rebuild, hold the fleet, verify, promote, finish; or
 * abandon on a failure, which never drops a generation that went live.
 */
import { randomBytes } from "node:crypto";
import type { Admin, Kafka } from "kafkajs";
import type { Cluster, Redis } from "ioredis";
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
import { marksOfTopic, pastEndDetails, verifyCoverage, verifyTarget, type PartitionOffsets } from "../verify/coverage.js";
import { readPartitionOffsets } from "../verify/coverage-source.js";
import { coverageFailures, differingOrigins, failedReport, verifyGenerations, withFailures, type VerifyFailure } from "../verify/verify.js";
import { partitionField } from "../fold/partition-guard.js";
import { FleetPause } from "./fleet-pause.js";
import { LocalShadow, type ShadowReader } from "./replay-build.js";
import { SplitReader, WorkerPool, splitPartitions } from "./replay-workers.js";
import { AbortedError, sleepUnlessAborted, waitFor } from "./waiting.js";
import { DEFAULT_CHUNK_BYTES, type ReplayOptions, type ReplaySummary } from "./replay-summary.js";

/** What the replay found at its start: the live generation and what the rebuild must reach. */
export interface ReplayPlan {
  live: number | null;
  liveReducerVersion: string | null;
  /** The live generation can be compared with the rebuild (same reducer version). */
  comparable: boolean;
  toEnd: boolean;
  /** Each partition's end offset at the start. */
  startEnds: Map<number, bigint>;
  /** The log is shorter than what the live generation folded (truncated or recreated). */
  shorter: boolean;
  /** Each partition's offset the rebuild reads to first. */
  targets: Map<number, bigint>;
}

export class ReplayRun {
  private readonly kafka: Kafka;
  private readonly admin: Admin;
  private readonly redis: Redis | Cluster;
  private readonly identities: RedisIdentityStore;
  private readonly control: ControlStore;
  private readonly started = Date.now();
  private readonly groupId: string;
  private readonly token = randomBytes(8).toString("hex");
  private readonly stallSeconds: number;
  private reader: ShadowReader | undefined;
  /** The throwaway groups of this replay's readers (deleted at the end). */
  private readonly groups: string[] = [];
  private pause: FleetPause | undefined;
  private rebuilt: number | undefined;
  private promoted = false;
  private buildRenewal: NodeJS.Timeout | undefined;

  constructor(
    private readonly settings: Settings,
    private readonly options: ReplayOptions,
    private readonly log: Logger,
  ) {
    this.kafka = createKafka(kafkaClientSettings(settings, "-replay"));
    this.redis = connectRedis(redisClientSettings(settings));
    this.identities = new RedisIdentityStore(this.redis, settings.prefix);
    this.control = new RedisControlStore(this.redis, settings.prefix);
    this.admin = this.kafka.admin();
    this.stallSeconds = options.stallSeconds ?? Math.max(60, settings.outageToleranceSeconds);
    this.groupId = `${settings.group}.replay.${randomBytes(4).toString("hex")}`;
  }

  /** Refuse what cannot be replayed; read the live generation and what the rebuild must reach. */
  async plan(): Promise<ReplayPlan> {
    const { settings, options } = this;
    await this.admin.connect();
    if (!(await this.admin.listTopics()).includes(settings.topic)) {
      throw new MufoldError(`topic ${settings.topic} does not exist on ${settings.brokers.join(",")}: nothing to replay (check --topic / MUFOLD_TOPIC)`);
    }
    await assertInfiniteRetention(this.admin, settings.topic, settings.allowFiniteRetention);
    await assertFunctionsLoaded(this.redis);
    const control = await this.control.state();
    const live = control.generation;
    if (options.promote && live !== null && control.reducerVersion !== null && control.reducerVersion !== settings.reducerVersion && !options.changeReducerVersion) {
      throw new MufoldError(
        `the live generation ${live} holds reducer_version ${control.reducerVersion}; promoting ${settings.reducerVersion} would leave running folds ` +
          `on the old one. Stop the folds, run again with --change-reducer-version, then start the folds with MUFOLD_REDUCER_VERSION=${settings.reducerVersion} (docs/operations.md)`,
      );
    }
    const comparable = live !== null && (control.reducerVersion === null || control.reducerVersion === settings.reducerVersion);
    const toEnd = options.verify && options.toEnd === true;
    const atStart = await this.liveOffsets(live);
    return {
      live,
      liveReducerVersion: control.reducerVersion,
      comparable,
      toEnd,
      startEnds: new Map(atStart.map((p) => [p.partition, p.end])),
      // A log shorter than what the live generation folded was truncated or recreated: it cannot be compared,
      // and the live marks bound nothing a rebuild must hold.
      shorter: atStart.some((p) => (p.mark ?? 0n) > p.end),
      // Verify rebuilds everything the live fold sealed or the group committed (--to-end: the whole log), capped at
      // the log's end; a promote goes to the end of the log.
      targets: new Map(atStart.map((p) => [p.partition, options.verify && comparable ? verifyTarget(p, toEnd ? p.end : null) : p.end])),
    };
  }

  /** Allocate the shadow generation (under a lease this process renews) and read up to the plan's targets. */
  async rebuild(plan: ReplayPlan): Promise<ReplaySummary> {
    const { settings, options, log } = this;
    // The build holds a lease it renews: a killed replay's generation is dropped by a later promote.
    const buildLeaseMs = Math.max(60_000, settings.pauseLeaseSeconds * 1000);
    const generation = await this.control.allocateGeneration(settings.reducerVersion, this.token, buildLeaseMs);
    this.rebuilt = generation;
    this.buildRenewal = setInterval(() => {
      this.control.renewBuild(generation, this.token, buildLeaseMs).catch((error) => log.warn("could not renew the build lease", { generation, error: String(error) }));
    }, buildLeaseMs / 3);
    this.buildRenewal.unref();
    const summary = emptySummary(plan.live, generation, Math.max(1, Math.min(options.workers ?? 1, plan.targets.size)));
    log.info("replay started", { rebuilt: generation, live: plan.live, group: this.groupId, verify: options.verify, promote: options.promote, workers: summary.workers });
    this.reader = await this.startReaders(plan.targets, generation, summary.workers);
    await this.readAll("replay");
    summary.rebuildSeconds = (Date.now() - this.started) / 1000;
    return summary;
  }

  private async startReaders(targets: ReadonlyMap<number, bigint>, generation: number, workers: number): Promise<ShadowReader> {
    const { settings, log, groupId, token } = this;
    const chunkBytes = this.options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    const total = () => [...targets.values()].reduce((a, t) => a + Number(t), 0);
    const onAdvance = () => this.options.onProgress?.({ consumed: this.reader?.stats().records ?? 0, total: total(), elapsedSeconds: (Date.now() - this.started) / 1000 });
    if (workers === 1) {
      this.groups.push(groupId);
      return LocalShadow.start(this.kafka, { settings, generation, token, groupId, targets, chunkBytes, log, onAdvance });
    }
    // This process reads the first share itself (it is otherwise idle until the rebuild is done); workers the rest.
    const [own, ...others] = splitPartitions(targets, workers);
    for (let i = 1; i <= workers; i++) this.groups.push(`${groupId}.${i}`);
    const partitions = [...targets.keys()];
    const pool = WorkerPool.start({ settings, generation, token, groupPrefix: groupId, shares: others, partitions, firstIndex: 2, count: workers, chunkBytes, log, onAdvance });
    this.reader = pool; // stopped on a failure from here on
    const mine = { targets: own!, others: partitions.filter((p) => !own!.has(p)) };
    return new SplitReader([pool, await LocalShadow.start(this.kafka, { settings, generation, token, groupId: `${groupId}.1`, ...mine, chunkBytes, log, onAdvance })]);
  }

  private async readAll(what: string): Promise<void> {
    const r = this.reader!;
    await waitFor(what, () => r.reached(), { progress: () => r.progress(), failure: () => r.failure(), stallSeconds: this.stallSeconds, signal: this.options.signal });
  }

  /** Pause the live fold and wait until every worker acknowledged it. */
  async holdFleet(): Promise<void> {
    this.pause = await FleetPause.take(this.control, this.settings.pauseLeaseSeconds, this.log);
    await this.pause.awaitAcks(this.admin, this.settings.group, this.options.pauseTimeoutSeconds ?? 120, this.options.signal, () => this.reader?.failure());
  }

  async releaseFleet(): Promise<void> {
    await this.pause?.release();
    this.pause = undefined;
  }

  /** With the fleet still: rebuild up to what the live generation holds, then compare them identity by identity. */
  async verify(plan: ReplayPlan, summary: ReplaySummary): Promise<void> {
    const held = await this.liveOffsets(plan.live);
    const required = new Map(held.map((p) => [p.partition, verifyTarget(p, plan.toEnd ? (plan.startEnds.get(p.partition) ?? p.end) : null)]));
    const against = plan.toEnd ? "end" : "committed";
    if (!plan.comparable) {
      summary.coverage = verifyCoverage(held, required, against);
      summary.verify = failedReport(
        plan.live === null
          ? { reason: "no_live_generation", detail: "there is no live generation to compare with (nothing folded yet, or Redis lost it)" }
          : { reason: "reducer_version_differs", detail: `the live generation holds reducer_version ${plan.liveReducerVersion}, the rebuild ${this.settings.reducerVersion}` },
      );
    } else {
      const catchUp = new Map(held.map((p) => [p.partition, minOf(maxOf(plan.targets.get(p.partition), required.get(p.partition)), p.end)]));
      await this.reader!.raiseTargets(catchUp);
      await this.readAll("replay (catching up to the live fold)");
      summary.coverage = verifyCoverage(held, catchUp, against);
      const truncated = pastEndDetails(held).map((detail): VerifyFailure => ({ reason: "topic_origin_differs", detail }));
      const report = await verifyGenerations({ identities: this.identities, control: this.control }, plan.live!, summary.rebuiltGeneration, this.options.details);
      summary.verify = withFailures(report, [...truncated, ...coverageFailures(summary.coverage)]);
    }
    summary.verified = summary.verify.ok;
    summary.mismatches = summary.verify.mismatches + summary.verify.notComparable + (summary.verify.ok || summary.verify.identities > 0 ? 0 : 1);
  }

  /** With the fleet still: catch up to everything the live fold folded or committed, seal, and flip atomically. */
  async promote(plan: ReplayPlan, summary: ReplaySummary): Promise<void> {
    const { settings, log } = this;
    const generation = summary.rebuiltGeneration;
    // The live generation folded another log when its marks pass the log's end or its origins differ
    // (a recreated topic): then its marks do not bound what the rebuild must hold.
    const logChanged = plan.live !== null && (plan.shorter || (await differingOrigins(this.control, plan.live, generation)).length > 0);
    for (let attempt = 1; ; attempt++) {
      // Everything the live fold has folded or committed, capped at the log's end.
      const committed = await groupOffsets(this.admin, settings.group, settings.topic);
      const marks = marksOfTopic(plan.live === null ? new Map() : await this.control.generationFields(plan.live, "mark"), settings.topic);
      const catchUp = new Map<number, bigint>();
      for (const e of await partitionOffsets(this.admin, settings.topic)) {
        const want = maxOf(marks.get(e.partition), committed.get(e.partition), plan.targets.get(e.partition));
        catchUp.set(e.partition, want < e.high ? want : e.high);
      }
      await this.reader!.raiseTargets(catchUp);
      await this.readAll("replay (catching up to the live fold)");
      await this.control.seal(generation, this.token, sealMarks(settings.topic, this.reader!.positionsNow()));
      try {
        // Atomic: the token, the live generation still `live`, the pause, and no live mark past ours.
        await this.control.promote(generation, this.token, this.pause!.epoch, plan.live, logChanged);
        break;
      } catch (err) {
        // A worker sealed past us before it saw the pause (it cannot since): read that far, then again.
        if (!(err instanceof PromoteBehindError) || attempt >= 5) throw err;
        log.warn("the live fold sealed past the rebuild; catching up again", { attempt });
      }
    }
    this.promoted = summary.promoted = true;
    log.info("promoted", { generation, previous: plan.live });
  }

  /** Stop reading, count, and drop what is no longer needed: the old generations after a promote, else the shadow. */
  async finish(summary: ReplaySummary): Promise<ReplaySummary> {
    const generation = summary.rebuiltGeneration;
    await this.reader!.stop();
    Object.assign(summary, this.reader!.stats());
    this.reader = undefined;
    await this.admin.deleteGroups(this.groups).catch(() => undefined);
    summary.identities = (await this.identities.listIdentities(generation)).length;
    summary.seconds = (Date.now() - this.started) / 1000;
    summary.recordsPerSecond = summary.seconds > 0 ? Math.round(summary.records / summary.seconds) : summary.records;
    if (this.promoted) {
      await sleepUnlessAborted((this.options.dropAfterSeconds ?? 5) * 1000, this.options.signal).catch(() => undefined); // readers mid-read of the old generation finish first
      await dropOldGenerations(this.identities, this.control, generation, this.log);
    } else if (!this.options.keepShadow) {
      await dropGeneration(this.identities, this.control, generation);
    }
    this.log.info("replay finished", { ...summary, verify: undefined });
    return summary;
  }

  /**
   * After a failure: release the fleet and stop reading first (nothing may write into the shadow while it is
   * dropped), and never drop a generation that is live: a promote whose reply was lost may have flipped.
   * Returns the error to throw.
   */
  async abandon(err: unknown): Promise<unknown> {
    await this.releaseFleet();
    await this.reader?.stop().catch(() => undefined);
    this.reader = undefined;
    await this.admin.deleteGroups(this.groups).catch(() => undefined);
    const rebuilt = this.rebuilt;
    if (rebuilt !== undefined && !this.promoted) {
      const nowLive = await this.control.liveGeneration().catch(() => rebuilt);
      if (nowLive !== rebuilt) await dropGeneration(this.identities, this.control, rebuilt).catch((error) => this.log.warn("could not drop the shadow generation", { generation: rebuilt, error: String(error) }));
    }
    return err instanceof AbortedError || this.options.signal?.aborted ? new AbortedError("replay stopped by a signal: the fleet pause was released and the shadow generation dropped") : err;
  }

  async close(): Promise<void> {
    clearInterval(this.buildRenewal);
    await this.pause?.release();
    await this.reader?.stop().catch(() => undefined);
    await this.admin.disconnect().catch(() => undefined);
    await this.redis.quit().catch(() => undefined);
  }

  private liveOffsets(live: number | null): Promise<PartitionOffsets[]> {
    return readPartitionOffsets(this.admin, this.control, this.settings.topic, this.settings.group, live);
  }
}

function emptySummary(live: number | null, generation: number, workers: number): ReplaySummary {
  return {
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
    workers,
    rebuildSeconds: 0,
    verify: null,
    coverage: null,
    verified: null,
    mismatches: 0,
    promoted: false,
  };
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
