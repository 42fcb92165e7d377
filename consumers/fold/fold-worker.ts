/**
 * The fold: a consumer-group member that decides every record, applies the
 * accepted ones to their identities in Redis (one version-checked call per
 * identity per batch), dead-letters the rest, and only then commits offsets.
 * This class keeps the generation and the positions against the marks; its
 * parts: FoldPositions, PartitionGuard, SetupWatch, DeadLetterSender, the
 * readiness checks and the counters.
 */
import { isBrokerUnreachable, isRetriableKafkaError } from "../../src/adapters/kafka/errors.js";
import { hostname } from "node:os";
import type { Cluster, Redis } from "ioredis";
import { createKafka, kafkaClientSettings, type Kafka } from "../../src/adapters/kafka/client.js";
import { GroupConsumer, type BatchContext } from "../../src/adapters/kafka/consumer.js";
import { ReliableProducer } from "../../src/adapters/kafka/producer.js";
import { assertInfiniteRetention, ensureTopics, groupOffsets, topicSpec } from "../../src/adapters/kafka/topics.js";
import { FunctionsMissingError } from "../../src/adapters/redis/errors.js";
import { connectRedis, redisClientSettings } from "../../src/adapters/redis/connect.js";
import { GenerationMovedError, PauseLostError, type ControlStore } from "../../src/fold/control-store.js";
import { PositionContradictedError, StateLostError } from "../../src/fold/identity-store.js";
import { checkRedisServer } from "../../src/adapters/redis/server-checks.js";
import { RedisControlStore } from "../../src/adapters/redis/control-store.js";
import { writerStore, type RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import type { Settings } from "../../src/config/settings.js";
import { MufoldError } from "../../src/errors.js";
import type { Logger } from "../../src/observability/log.js";
import type { FoldMetrics } from "../../src/observability/metrics.js";
import { keyWaves, routeRecords, type RoutedBatch } from "../../src/fold/batch-router.js";
import { ChangeFeed, changeFeedSettings } from "../feed/change-feed.js";
import { dlqTopic } from "../../src/fold/dead-letter.js";
import type { SourceRecord } from "../../src/fold/source-record.js";
import type { DecisionOptions } from "../../src/fold/record-decision.js";
import { dlqLimits } from "../../src/adapters/kafka/topic-limits.js";
import { KeptAdmin } from "./kept-admin.js";
import { IdentityApplier } from "../../src/fold/identity-applier.js";
import { OutageClock } from "./outage.js";
import { PartitionGuard, partitionField } from "./partition-guard.js";
import { FoldPositions, type Healing } from "./fold-positions.js";
import { warmUpEngine } from "./warm-up.js";
import { errorText, heartbeatOrYield, POLL_MS, sleep } from "./batch-hold.js";
import { countBatch, countDeadLetters, emptyCounters, type BatchStats, type FoldCounters } from "./fold-counters.js";
import { DeadLetterSender } from "./dead-letter-sender.js";
import { SetupWatch } from "./setup-watch.js";
import { foldReadinessChecks } from "./readiness.js";

/** A fetched batch: where it starts and ends on its partition, and its records by identity key. */
interface Batch {
  records: SourceRecord[];
  from: bigint;
  next: bigint;
  waves: ReturnType<typeof keyWaves>;
}

/** What applying a batch gave: the applier's counts and the records decided to the DLQ. */
interface Folded {
  stats: BatchStats;
  /** The reasons of the records dead-lettered, in the batch's order. */
  deadLettered: string[];
}

/** The dead letters could not be sent: not a Redis failure, so not retried as one (DeadLetterSender retried already). */
class DeadLetterFailure extends Error {
  constructor(readonly failure: unknown) {
    super("dead-letter send failed", { cause: failure });
  }
}

/**
 * routeRecords of one wave. Deciding turns every bad record into a DLQ record, so a throw here is a bug, not an
 * outage: it ends the batch as it did when a batch was decided before anything was written, instead of being retried
 * as Redis failing.
 */
function decideWave(wave: readonly SourceRecord[], decision: DecisionOptions): RoutedBatch {
  try {
    return routeRecords(wave, decision);
  } catch (error) {
    throw new MufoldError(`deciding a batch's records failed: ${errorText(error)}`, { cause: error });
  }
}

/** One reducer version per generation: a worker configured for another one refuses to write. */
function assertReducerVersion(generation: number, stored: string | null, configured: string): void {
  if (stored === null || stored === configured) return;
  throw new MufoldError(
    `the live generation ${generation} holds reducer_version ${stored}, this worker is configured for ${configured}: ` +
      `run every fold with MUFOLD_REDUCER_VERSION=${stored}, or upgrade as docs/operations.md says (stop the folds, ` +
      `\`mufold replay --promote --reducer-version ${configured} --change-reducer-version\`, start the folds with ${configured})`,
  );
}

export class FoldWorker {
  readonly counters: FoldCounters = emptyCounters();
  readonly workerId = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  private consumer: GroupConsumer | undefined;
  private producer: ReliableProducer | undefined;
  private generation: number | undefined;
  private stopping = false;
  /** Batches being folded now (several partitions at once). */
  private batchesInFlight = 0;
  /**
   * When the last seal succeeded (0: something failed since). A seal proves
   * the generation live and unpaused, so for POLL_MS after it a batch starts
   * without reading the control hash; its own seal checks both again before
   * the commit. (A promote's pause is then seen by the batches already
   * started, as by a batch in flight: their seals fail, then they acknowledge.)
   */
  private sealedAt = 0;
  /** Where this worker stands on its partitions against the marks (the fold's position). */
  private readonly positions = new FoldPositions();
  /** The resync under way (one at a time): reading the marks and seeking to them. */
  private resyncing: Promise<void> | undefined;
  /** Whether Redis has mufold's function libraries (`mufold setup` has run on it). */
  private readonly setup: SetupWatch;
  private idleTimer: NodeJS.Timeout | undefined;
  private positionTimer: NodeJS.Timeout | undefined;
  /** Partitions to fetch from offset 0 once, for the origin check, before they go on from their marks. */
  private readonly originUnchecked = new Set<number>();
  /** Redis had no generation at start while the group had committed offsets: the first join reports a rebuild. */
  private rebuildingFromStart = false;
  private readonly applier: IdentityApplier;
  private readonly identities: RedisIdentityStore;
  private readonly control: ControlStore;
  private readonly guard: PartitionGuard;
  /** Redis/Kafka outages being ridden out (held batch, not ready). */
  readonly outages: OutageClock;
  /** The change feed (stream entries and review proposals); undefined when MUFOLD_CHANGE_FEED=off. */
  private feed: ChangeFeed | undefined;
  /** Connected at start and kept: a join's resync asks it for the group's committed offsets (kept-admin.ts). */
  private readonly admin: KeptAdmin;
  /** Set in prepare, once the producer is connected and the DLQ topic's limits are read. */
  private deadLetters: DeadLetterSender | undefined;
  private crashedWith: ((error: unknown) => void) | undefined;
  /** Settles if the consumer stops on a non-retriable error (the process should exit and be restarted). */
  readonly crashed = new Promise<unknown>((resolve) => (this.crashedWith = resolve));

  private constructor(
    private readonly settings: Settings,
    private readonly kafka: Kafka,
    private readonly redis: Redis | Cluster,
    private readonly log: Logger,
    private readonly metrics: FoldMetrics | undefined,
  ) {
    this.identities = writerStore(redis, settings.prefix);
    this.control = new RedisControlStore(redis, settings.prefix);
    this.applier = new IdentityApplier(this.identities, settings.cacheSize, { cacheMaxBytes: settings.cacheMaxBytes, inFlight: settings.identitiesInFlight, casAttempts: settings.casMaxAttempts });
    this.guard = new PartitionGuard(this.control, "live", async (topic, partition) => (await this.partitionOffsets(topic, partition)).high);
    this.outages = new OutageClock(settings.outageToleranceSeconds);
    this.setup = new SetupWatch(redis, this.outages, settings.outageToleranceSeconds, this.log, () => this.publishPosition());
    this.admin = new KeptAdmin(() => kafka.admin());
  }

  /** A partition's log start and end offsets now (rare: a batch's high watermark below the mark, an origin to check). */
  private async partitionOffsets(topic: string, partition: number): Promise<{ low: bigint; high: bigint }> {
    const found = (await this.admin.ask((admin) => admin.fetchTopicOffsets(topic))).find((o) => o.partition === partition);
    return { low: BigInt(found?.low ?? "0"), high: BigInt(found?.high ?? "0") };
  }

  /**
   * What the worker is doing: folding; refolding partitions whose marks went back (`behind_log`) or a
   * generation made anew after Redis lost it (`rebuilding`); or waiting for `mufold setup`.
   */
  get state(): "folding" | Healing | "waiting_for_setup" {
    if (this.setup.missing !== undefined) return "waiting_for_setup";
    const healing = this.positions.healing();
    if (healing.some((h) => h.why === "rebuilding")) return "rebuilding";
    return healing.length > 0 ? "behind_log" : "folding";
  }

  /** Partitions still refolding, with the records each has left. */
  healing(): { partition: number; records: bigint; why: Healing }[] {
    return this.positions.healing();
  }

  get cachedIdentities(): number {
    return this.applier.cached;
  }

  /** Readiness checks for /readyz (readiness.ts). */
  readinessChecks(): Record<string, () => Promise<void>> {
    return foldReadinessChecks({
      consumer: () => this.consumer,
      group: this.settings.group,
      topic: this.settings.topic,
      outages: this.outages,
      setupMissing: () => this.setup.missing,
      state: () => this.state,
      healing: () => this.positions.healing(),
    });
  }

  static async start(settings: Settings, log: Logger, metrics?: FoldMetrics): Promise<FoldWorker> {
    const kafka = createKafka(kafkaClientSettings(settings, "-fold"));
    // Not auto-pipelined: the store groups its loads' and applies' writes itself (src/adapters/redis/write-coalescing.ts).
    const redis = connectRedis({ ...redisClientSettings(settings), maxRetriesPerRequest: settings.foldRedisMaxRetriesPerRequest, commandTimeoutMs: settings.foldRedisCommandTimeoutMs, autoPipelining: false });
    const worker = new FoldWorker(settings, kafka, redis, log.child({ component: "fold" }), metrics);
    try {
      await worker.prepare();
    } catch (err) {
      await redis.quit().catch(() => undefined);
      throw err;
    }
    return worker;
  }

  private async prepare(): Promise<void> {
    const { settings } = this;
    const feedSettings = changeFeedSettings(settings);
    const proposalsTopic = feedSettings.enabled ? feedSettings.proposalsTopic : null;
    if (proposalsTopic === settings.topic || proposalsTopic === dlqTopic(settings.topic)) {
      throw new MufoldError(`MUFOLD_PROPOSALS_TOPIC must differ from the observation topic and its DLQ (${proposalsTopic})`);
    }
    if (!feedSettings.enabled && feedSettings.proposalsTopic !== null) this.log.warn("MUFOLD_PROPOSALS_TOPIC is ignored: MUFOLD_CHANGE_FEED is off");
    this.applier.feed = feedSettings.enabled;
    const admin = await this.admin.connected();
    let dlqBudget: number;
    try {
      await ensureTopics(admin, [
        topicSpec(settings, settings.topic),
        topicSpec(settings, dlqTopic(settings.topic)),
        ...(proposalsTopic === null ? [] : [topicSpec(settings, proposalsTopic)]),
      ]);
      await assertInfiniteRetention(admin, settings.topic, settings.allowFiniteRetention);
      dlqBudget = (await dlqLimits(admin, dlqTopic(settings.topic))).budget;
      await this.setup.untilSetUp();
      await checkRedisServer(this.redis, { allowEvictingPolicy: settings.allowEvictingPolicy }, this.log);
      const control = await this.control.state();
      const live = await this.control.initGeneration(settings.reducerVersion);
      assertReducerVersion(live.generation, live.reducerVersion, settings.reducerVersion);
      if (control.generation === null && [...(await groupOffsets(admin, settings.group, settings.topic)).values()].some((o) => o > 0n)) {
        // Lost, not new: the join compares the group's offsets with the (absent) marks and reports the rebuild.
        this.log.warn(`Redis has no mufold generation under prefix "${settings.prefix}", but group ${settings.group} has committed offsets: the projections were lost; they are rebuilt from the log start`, { generation: live.generation });
        this.rebuildingFromStart = true;
      }
      this.generation = live.generation;
    } catch (error) {
      await this.admin.close();
      throw error;
    }
    if (settings.warmUpRecords > 0) {
      // Before joining: the group's records wait for no compilation (the latency of a start's first second).
      const t0 = Date.now();
      await warmUpEngine({ reducerVersion: settings.reducerVersion, maxValueBytes: settings.maxValueBytes }, settings.warmUpRecords);
      this.log.info("engine warmed up", { records: settings.warmUpRecords, ms: Date.now() - t0 });
    }
    this.producer = await ReliableProducer.connect(this.kafka);
    this.deadLetters = new DeadLetterSender(this.producer, settings.topic, dlqBudget, this.outages, this.log, () => this.stopping);
    if (feedSettings.enabled) this.feed = new ChangeFeed({ ...feedSettings, proposalsTopic }, this.producer);
    this.consumer = await GroupConsumer.start(this.kafka, {
      groupId: settings.group,
      topic: settings.topic,
      fromBeginning: true,
      sessionTimeout: settings.sessionTimeoutMs,
      heartbeatInterval: settings.heartbeatIntervalMs,
      maxBytes: settings.fetchMaxBytes,
      maxBytesPerPartition: settings.partitionFetchMaxBytes,
      partitionsConsumedConcurrently: settings.partitionsConcurrency,
      retries: settings.kafkaConsumerRetries,
      commitInBackground: true,
      onCommitError: (error, topic, partition) => this.log.warn("offset commit failed; the next one covers it (a redelivery is skipped by the watermarks)", { topic, partition, error: errorText(error) }),
      onBatch: (records, ctx) => this.onBatch(records, ctx),
      onPark: (p) => {
        this.log.error("partition parked: a batch cannot be decoded; the committed offset stays before it", { ...p });
        this.metrics?.partitionsParked.set({ topic: p.topic, partition: String(p.partition) }, 1);
      },
      onUnpark: (p) => this.metrics?.partitionsParked.remove({ topic: p.topic, partition: String(p.partition) }),
      // A broker outage ends kafkajs's own retries with a crash: restart the consumer while the outage is
      // within the tolerance (not ready meanwhile), and give up with one clear error past it.
      restartOnFailure: async (error) => {
        if (!isBrokerUnreachable(error)) return isRetriableKafkaError(error);
        try {
          this.outages.failed("kafka", error);
          return !this.stopping;
        } catch (exceeded) {
          this.log.error("Kafka unreachable past the outage tolerance; the fold stops", { error: errorText(exceeded) });
          this.crashedWith?.(exceeded);
          return false;
        }
      },
      onCrash: (error, restarting) => {
        if (restarting) {
          this.log.warn("consumer restarting after an error", { error: errorText(error) });
          return;
        }
        this.log.error("consumer crashed", { error });
        this.crashedWith?.(error);
      },
      onJoin: (partitions) => {
        const ms = this.outages.recovered("kafka");
        if (ms > 0) this.log.warn("Kafka reachable again; folding resumes", { outageSeconds: Math.round(ms / 1000) });
        // Each partition is fetched from its mark, whatever the group committed (the position lives with the state).
        this.positions.assign(partitions);
        this.originUnchecked.clear();
        void this.resync({ committed: true }).catch((error: unknown) => this.log.warn("reading the marks after a join failed; the first batch reads them again", { error: errorText(error) }));
      },
    });
    // An idle worker gets no batches, yet a promote must hear that it holds still.
    this.idleTimer = setInterval(() => void this.ackIfIdle(), POLL_MS);
    this.idleTimer.unref();
    this.positionTimer = setInterval(() => void this.checkPosition(), settings.positionCheckMs);
    this.positionTimer.unref();
    this.log.info("fold started", { worker: this.workerId, generation: this.generation, topic: settings.topic, group: settings.group, changeFeed: feedSettings.enabled, proposalsTopic });
  }

  /**
   * Wait while a promote has paused the fold or Redis lacks the function libraries; returns the generation
   * to write (a Redis that lost it gets a new one from the resync). Redis being unreachable is held for at
   * most the outage tolerance (the batch stays uncommitted meanwhile).
   */
  private async awaitWritableGeneration(ctx: BatchContext): Promise<number> {
    if (this.generation !== undefined && Date.now() - this.sealedAt < POLL_MS) return this.generation;
    let warned = false;
    for (;;) {
      let control;
      try {
        // (A read is not a recovery: only a successful seal ends a Redis outage, so a Redis that reads but
        // refuses writes still runs out the tolerance.)
        control = await this.control.state();
        this.setup.found();
        if (control.paused) await this.control.ackPause(this.workerId, control.epoch);
      } catch (error) {
        if (error instanceof FunctionsMissingError) {
          this.setup.lacking(error);
        } else {
          // Redis unreachable (restarting): hold the batch, uncommitted, and keep the group membership alive.
          if (!warned) this.log.warn("Redis unavailable; holding the batch", { error: errorText(error) });
          warned = true;
          this.outages.failed("redis", error);
        }
        if (!ctx.stillOwned() || this.stopping) throw error;
        await heartbeatOrYield(ctx);
        await sleep(POLL_MS * 4);
        continue;
      }
      if (!control.paused) {
        if (control.generation === null || control.generation !== this.generation) await this.resync();
        else assertReducerVersion(control.generation, control.reducerVersion, this.settings.reducerVersion);
        return this.generation!;
      }
      // paused: acknowledged above; hold still
      if (!ctx.stillOwned() || this.stopping) throw new MufoldError("batch abandoned while waiting", { retriable: true });
      await heartbeatOrYield(ctx);
      await sleep(POLL_MS);
    }
  }

  /** Read the live generation and the marks, and seek every assigned partition that stands elsewhere (one at a time). */
  private resync(options: { committed?: boolean } = {}): Promise<void> {
    const run = (this.resyncing ?? Promise.resolve()).catch(() => undefined).then(() => this.resyncNow(options));
    this.resyncing = run;
    void run.finally(() => {
      if (this.resyncing === run) this.resyncing = undefined;
    }).catch(() => undefined);
    return run;
  }

  private async resyncNow(options: { committed?: boolean }): Promise<void> {
    const { topic, reducerVersion } = this.settings;
    const seqs = this.positions.seqs();
    let control;
    try {
      control = await this.control.state();
    } catch (error) {
      if (error instanceof FunctionsMissingError) this.setup.lacking(error);
      throw error;
    }
    this.setup.found();
    let generation = control.generation;
    if (generation === null) {
      // Redis lost everything (emptied, a new server): the log rebuilds it, as a changelog restores a lost store.
      const live = await this.control.initGeneration(reducerVersion);
      assertReducerVersion(live.generation, live.reducerVersion, reducerVersion);
      generation = live.generation;
      this.log.warn("Redis has no mufold generation: the projections were lost; the partitions are refolded from the log start into a new generation", { generation });
    } else {
      assertReducerVersion(generation, control.reducerVersion, reducerVersion);
    }
    const moved = generation !== this.generation;
    if (moved) {
      if (this.generation !== undefined) this.log.info("generation changed", { from: this.generation, to: generation });
      this.applier.clear();
      this.generation = generation;
      this.sealedAt = 0;
    }
    const fields = await this.control.generationFields(generation, "mark");
    const marks = new Map<number, bigint>();
    for (const p of this.positions.partitions()) {
      const mark = fields.get(partitionField(topic, p));
      if (mark !== undefined) marks.set(p, BigInt(mark));
    }
    // A new generation whose marks stand below this worker's positions was made after a loss: a rebuild.
    const why: Healing = moved || this.rebuildingFromStart ? "rebuilding" : "behind_log";
    const moves = this.positions.reconcile(marks, seqs, why);
    if (moves.some((m) => m.back)) this.applier.clear();
    for (const m of moves) {
      this.consumer?.seek(topic, m.partition, m.to);
      if (m.back) {
        this.consumer?.holdCommitsAt(topic, m.partition, m.from!); // a restart before the refold is done still sees how far it must come
        const what = why === "rebuilding" ? "the generation was made anew" : "Redis went back in time (a restore, a promoted replica)";
        this.log.warn(`${what}: the partition is refolded from its mark`, { topic, partition: m.partition, folded: m.from?.toString(), mark: m.to.toString(), generation });
      }
    }
    if (options.committed) {
      await this.compareCommitted(why);
      this.rebuildingFromStart = false;
    }
    this.publishPosition();
  }

  /**
   * After a join: the group's committed offsets are progress, the marks are what is folded. A committed offset
   * past the mark (Redis went back while the fold was stopped, or an operator moved the offsets) must be
   * refolded before the partition is whole; one below it (offsets reset to earliest) changes nothing.
   */
  private async compareCommitted(why: Healing): Promise<void> {
    const committed = await this.admin.ask((admin) => groupOffsets(admin, this.settings.group, this.settings.topic));
    const away: string[] = [];
    for (const a of this.positions.compareCommitted(committed, why)) {
      const { topic } = this.settings;
      if (a.kind === "check_origin") {
        // The first batch must come from offset 0, where the guard compares the record with the generation's
        // origin, before the partition goes on from its mark.
        this.originUnchecked.add(a.partition);
        this.consumer?.seek(topic, a.partition, 0n);
        continue;
      }
      away.push(`${topic}[${a.partition}] committed ${a.committed}, mark ${a.mark}`);
      if (a.kind === "refold_to") this.consumer?.holdCommitsAt(topic, a.partition, a.committed);
      else this.consumer?.commit(topic, a.partition, a.mark);
    }
    if (away.length > 0) {
      this.log.warn("the group's committed offsets differ from the marks in Redis; the fold goes by the marks (what Redis holds is what is folded: an operator's offset reset changes nothing, a Redis that went back in time is refolded)", { partitions: away });
    }
  }

  /** Readiness gauges from the positions. */
  private publishPosition(): void {
    if (this.metrics === undefined) return;
    const state = this.state;
    for (const s of ["folding", "behind_log", "rebuilding", "waiting_for_setup"]) this.metrics.foldState.set({ state: s }, s === state ? 1 : 0);
    this.metrics.behindLog.reset();
    for (const h of this.positions.healing()) this.metrics.behindLog.set({ topic: this.settings.topic, partition: String(h.partition), cause: h.why }, Number(h.records));
  }

  /** Every few seconds, idle too: a Redis that went back in time is seen and refolded without waiting for a record. */
  private async checkPosition(): Promise<void> {
    if (this.stopping || this.resyncing !== undefined || this.positions.partitions().length === 0) return;
    try {
      await this.resync();
    } catch (error) {
      if (error instanceof MufoldError && !error.retriable) {
        this.crashedWith?.(error); // the fold command writes the one fatal line
        return;
      }
      // Redis unreachable or the libraries missing: the next batch, or the next check, tells.
    }
  }

  private redisAnswered(): void {
    const ms = this.outages.recovered("redis");
    if (ms > 0) this.log.warn("Redis reachable again; folding resumes", { outageSeconds: Math.round(ms / 1000) });
  }

  private async ackIfIdle(): Promise<void> {
    if (this.batchesInFlight > 0 || this.stopping) return;
    try {
      const control = await this.control.state();
      if (control.paused && this.batchesInFlight === 0) await this.control.ackPause(this.workerId, control.epoch);
    } catch {
      /* Redis unavailable: the next batch reports it */
    }
  }

  private async onBatch(records: SourceRecord[], ctx: BatchContext): Promise<void> {
    this.batchesInFlight++;
    try {
      await this.foldBatch(records, ctx);
    } finally {
      this.batchesInFlight--;
    }
  }

  /**
   * One batch: place it at its partition's mark, apply it wave by wave, seal
   * the mark past it, dead-letter what was rejected; then kafkajs commits. A
   * batch that does not start at the mark is not folded here: the consumer is
   * sought to the mark instead.
   */
  private async foldBatch(records: SourceRecord[], ctx: BatchContext): Promise<void> {
    const endBatch = this.metrics?.batchSeconds.startTimer();
    if (this.resyncing !== undefined) await this.resyncing.catch(() => undefined); // a join's seeks come first
    const batch: Batch = {
      records,
      from: BigInt(ctx.fetchedOffset ?? records[0]?.offset ?? ctx.nextOffset),
      next: BigInt(ctx.nextOffset),
      waves: keyWaves(records), // decided wave by wave as they are applied (batch-router.ts): a retry decides again
    };
    let folded: Folded | undefined;
    for (let attempt = 1; folded === undefined; attempt++) {
      const generation = await this.awaitWritableGeneration(ctx);
      try {
        if (!(await this.placeBatch(generation, batch, ctx))) return;
        folded = await this.applyAndSeal(generation, batch, ctx);
      } catch (err) {
        if (err instanceof DeadLetterFailure) throw err.failure;
        if ((await this.recoverFrom(err, generation, batch, ctx, attempt)) === "elsewhere") return;
      }
    }
    countDeadLetters(this.counters, this.metrics, folded.deadLettered);
    countBatch(this.counters, this.metrics, this.applier, records.length, folded.stats, ctx);
    endBatch?.();
  }

  /**
   * Whether the batch can be folded where it starts: its partition's log is
   * the one this generation folded, and it starts at the mark. Otherwise the
   * consumer is sought (to offset 0 for the origin check, or to the mark).
   */
  private async placeBatch(generation: number, batch: Batch, ctx: BatchContext): Promise<boolean> {
    const { topic, partition } = ctx;
    let position = this.positions.offset(partition);
    if (position === undefined) {
      await this.resync(); // the join's resync failed or has not run: this batch cannot be placed without the mark
      position = this.positions.offset(partition);
      if (position === undefined) throw new MufoldError(`partition ${topic}[${partition}] is not assigned to this worker`, { retriable: true });
    }
    // Refuse a partition whose log is not the one this generation folded, before writing anything.
    await this.guard.check(generation, topic, partition, batch.records, BigInt(ctx.highWatermark), position);
    if (this.originUnchecked.has(partition)) {
      if (batch.from === 0n && batch.records.length > 0) {
        this.originUnchecked.delete(partition); // the guard found the record at offset 0 to be the origin
      } else if ((await this.partitionOffsets(topic, partition)).low > 0n) {
        this.originUnchecked.delete(partition);
        this.log.warn("the partition's log no longer starts at offset 0 (retention): its origin cannot be checked", { topic, partition });
      } else {
        this.consumer?.seek(topic, partition, 0n); // (a batch fetched before the join's seek to 0)
        return false;
      }
    }
    if (batch.from !== position) {
      // The fetch did not start at the mark (the group's offset, a reset by kafkajs): fetch from the mark. What
      // lies below the mark is folded: the group's offset moves up to it, as progress for lag tools.
      this.consumer?.seek(topic, partition, position);
      if (batch.from < position) this.consumer?.commit(topic, partition, position);
      return false;
    }
    return true;
  }

  /** Apply the batch's waves, announce the changes, dead-letter what was rejected, and seal the mark past the batch. */
  private async applyAndSeal(generation: number, batch: Batch, ctx: BatchContext): Promise<Folded> {
    const { topic, partition } = ctx;
    const decision = { reducerVersion: this.settings.reducerVersion, maxValueBytes: this.settings.maxValueBytes };
    const rejected: RoutedBatch["rejected"] = [];
    this.positions.begin(partition);
    let stats;
    let deadLettered: string[];
    try {
      const endApply = this.metrics?.applySeconds.startTimer();
      const guard = { partition: partitionField(topic, partition), from: batch.from };
      stats = await this.applier.applyInWaves(
        generation,
        batch.waves,
        (wave) => {
          const routed = decideWave(wave, decision);
          for (const r of routed.rejected) rejected.push(r);
          return routed.identities;
        },
        guard,
      );
      endApply?.();
      // Proposals and dead letters before the seal: once the mark is past the batch, no restart reads it again, so
      // a worker killed in between lost them. Killed after the sends and before the seal, the batch is folded and
      // sent again (a failure here retries the batch, which announces the skipped changes again).
      await this.feed?.propose(generation, stats.changes);
      deadLettered = await this.deadLetters!.send(rejected, batch.records, ctx).catch((error: unknown) => {
        throw new DeadLetterFailure(error);
      });
      // Last, before the commit, with the change entries: the generation written is still the live one, its mark
      // still where the batch started (Redis may have been emptied or gone back in time mid-batch); then the mark
      // moves past the batch.
      await this.guard.seal(generation, topic, partition, batch.next, batch.from, this.feed?.entries(stats.changes));
    } finally {
      this.positions.end(partition);
    }
    if (this.positions.sealed(partition, batch.next)) this.log.info("partition whole again: refolded up to where it stood", { topic, partition, offset: batch.next.toString() });
    this.publishPosition();
    if (generation === this.generation) this.sealedAt = Date.now();
    this.redisAnswered();
    return { stats, deadLettered };
  }

  /**
   * After a failed attempt: "again" to apply the batch once more, "elsewhere"
   * when the consumer was sought away from it; throws what is not retried.
   */
  private async recoverFrom(err: unknown, generation: number, batch: Batch, ctx: BatchContext, attempt: number): Promise<"again" | "elsewhere"> {
    this.sealedAt = 0; // read the control hash before the next attempt, of this batch or another
    this.applier.clear(); // whatever landed, the versions and watermarks in Redis tell on reload
    const soughtAway = () => (this.positions.offset(ctx.partition) !== batch.from ? "elsewhere" : "again");
    if (err instanceof PositionContradictedError || err instanceof GenerationMovedError) {
      // Redis went back in time, lost the generation, or a promote replaced it: go by what it holds now.
      this.log.warn("the batch does not fit what Redis holds; reading the marks again", { error: errorText(err), generation });
      this.redisAnswered();
      await this.resync();
      return soughtAway();
    }
    if (err instanceof StateLostError) {
      // An identity the marks say was folded has no state (keys deleted or evicted): fold the whole log into the
      // generation again; every other identity skips what it holds by its watermarks.
      this.log.error("Redis lost an identity that the marks say was folded; the generation is refolded from the log start", { error: errorText(err), generation });
      this.redisAnswered();
      await this.control.rewind(generation).catch((error: unknown) => this.log.warn("rewinding the marks failed; the generation moved meanwhile", { error: errorText(error) }));
      await this.resync();
      return soughtAway();
    }
    if (err instanceof PauseLostError) {
      // A promote paused the fleet after this batch began: it is not sealed; apply it again after the pause.
      this.log.info("a promote paused the fold mid-batch; the batch waits", { generation });
      return "again";
    }
    // Refusals for good (a key-layout bug, a missing grant, another topic: typed by the adapters) are never retried.
    if (err instanceof MufoldError && !err.retriable) throw err;
    // Redis restarting or unreachable: the batch stays uncommitted; try again until the outage tolerance runs out.
    if (err instanceof FunctionsMissingError) this.setup.lacking(err);
    else this.outages.failed("redis", err);
    this.log.warn("apply failed; retrying the batch", { error: errorText(err), attempt });
    if (!ctx.stillOwned() || this.stopping) throw err;
    await heartbeatOrYield(ctx);
    await sleep(Math.min(5_000, POLL_MS * attempt));
    return "again";
  }

  /** Leave the group and close connections; an unfinished batch stays uncommitted and is redelivered. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.idleTimer);
    clearInterval(this.positionTimer);
    await this.consumer?.stop().catch((error) => this.log.warn("consumer stop failed", { error }));
    await this.producer?.disconnect().catch(() => undefined);
    await this.admin.close();
    await this.redis.quit().catch(() => undefined);
    this.log.info("fold stopped", { worker: this.workerId, ...this.counters });
  }
}
