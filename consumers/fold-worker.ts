/**
 * The fold: a consumer-group member that decides every record, applies the
 * accepted ones to their identities in Redis (one version-checked call per
 * identity per batch), dead-letters the rest, and only then commits offsets.
 */
import { isBrokerUnreachable, isPermanentKafkaError, isRebalance, isRetriableKafkaError } from "../src/adapters/kafka/errors.js";
import { hostname } from "node:os";
import type { Cluster, Redis } from "ioredis";
import { createKafka, kafkaClientSettings, type Kafka } from "../src/adapters/kafka/client.js";
import { GroupConsumer, type BatchContext } from "../src/adapters/kafka/consumer.js";
import { ReliableProducer } from "../src/adapters/kafka/producer.js";
import { assertInfiniteRetention, ensureTopics, groupOffsets, topicSpec } from "../src/adapters/kafka/topics.js";
import { connectRedis, redisClientSettings } from "../src/adapters/redis/connect.js";
import { GenerationMovedError, PauseLostError, StateLostError } from "../src/adapters/redis/errors.js";
import { assertFunctionsLoaded } from "../src/adapters/redis/functions.js";
import { checkRedisServer } from "../src/adapters/redis/server-checks.js";
import { RedisStore, writerStore } from "../src/adapters/redis/store.js";
import type { Settings } from "../src/config/settings.js";
import { MufoldError } from "../src/errors.js";
import type { Logger } from "../src/observability/log.js";
import type { FoldMetrics } from "../src/observability/metrics.js";
import { inBatchOrder, keyWaves, routeRecords, type RoutedBatch } from "../src/fold/batch-router.js";
import { ChangeFeed, changeFeedSettings } from "./change-feed.js";
import { dlqMessage, dlqSendGroups, dlqTopic, type SourceRecord } from "../src/fold/dead-letter.js";
import type { DecisionOptions } from "../src/fold/record-decision.js";
import { dlqLimits } from "../src/adapters/kafka/topic-limits.js";
import { IdentityApplier } from "../src/fold/identity-applier.js";
import { OutageClock } from "./outage.js";
import { PartitionGuard } from "./partition-guard.js";
import { warmUpEngine } from "./warm-up.js";

export interface FoldCounters {
  consumed: number;
  applied: number;
  duplicatesSkipped: number;
  deadLettered: number;
  casRetries: number;
  batches: number;
  dlqByReason: Record<string, number>;
}

const POLL_MS = 250;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * Heartbeat while a batch is held (an outage, a pause). When the group is
 * rebalancing, give the batch up (uncommitted, it is redelivered) so this
 * member can rejoin instead of stalling the group; other heartbeat failures
 * (the broker itself is down) are the outage being ridden out.
 */
async function heartbeatOrYield(ctx: BatchContext): Promise<void> {
  try {
    await ctx.heartbeat();
  } catch (error) {
    // Rebalancing, or this member was expelled: rethrow kafkajs's own error, so its runner rejoins at once.
    if (isRebalance(error)) throw error;
  }
}
const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

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
  readonly counters: FoldCounters = { consumed: 0, applied: 0, duplicatesSkipped: 0, deadLettered: 0, casRetries: 0, batches: 0, dlqByReason: {} };
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
  /** A generation found to have lost state: written again only after a promote replaces it. */
  private lostGeneration: number | undefined;
  private restoreWait = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly applier: IdentityApplier;
  private readonly store: RedisStore;
  private readonly guard: PartitionGuard;
  /** Redis/Kafka outages being ridden out (held batch, not ready). */
  readonly outages: OutageClock;
  /** The change feed (stream entries and review proposals); undefined when MUFOLD_CHANGE_FEED=off. */
  private feed: ChangeFeed | undefined;
  /** Record bytes one dead-letter batch may carry (from the DLQ topic's max.message.bytes; set in prepare). */
  private dlqBudget = 0;
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
    this.store = writerStore(redis, settings.prefix);
    this.applier = new IdentityApplier(this.store, settings.cacheSize, { cacheMaxBytes: settings.cacheMaxBytes, inFlight: settings.identitiesInFlight, casAttempts: settings.casMaxAttempts });
    this.guard = new PartitionGuard(this.store, "live", (topic, partition) => this.endOffset(topic, partition));
    this.outages = new OutageClock(settings.outageToleranceSeconds);
  }

  /** A partition's end offset now (rare: only when a batch's high watermark is below the generation's mark). */
  private async endOffset(topic: string, partition: number): Promise<bigint> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets(topic);
      return BigInt(offsets.find((o) => o.partition === partition)?.high ?? "0");
    } finally {
      await admin.disconnect();
    }
  }

  /** True while this worker found its generation's state lost and waits for `mufold replay --promote`. */
  get waitingForRestore(): boolean {
    return this.restoreWait;
  }

  get cachedIdentities(): number {
    return this.applier.cached;
  }

  /** Readiness checks for /readyz: the broker answers heartbeats, and this worker is in its group. */
  readinessChecks(): Record<string, () => Promise<void>> {
    return {
      kafka: async () => {
        const age = Date.now() - (this.consumer?.lastHeartbeat ?? 0);
        if (age > 15_000) throw new Error(`no heartbeat accepted by the group coordinator for ${Math.round(age / 1000)}s`);
      },
      group: async () => {
        if (!this.consumer?.joined) throw new Error(`not a member of group ${this.settings.group} (joining, rebalancing or stopped)`);
      },
      outage: async () => {
        const ongoing = Object.entries(this.outages.ongoing());
        if (ongoing.length > 0) throw new Error(`riding out an outage: ${ongoing.map(([what, s]) => `${what} unreachable for ${s}s`).join(", ")}`);
      },
      parked: async () => {
        const parked = this.consumer?.parked() ?? [];
        if (parked.length > 0) throw new Error(`partitions parked at a batch that cannot be decoded: ${parked.map((p) => `${p.topic}[${p.partition}]@${p.offset} (${p.reason})`).join("; ")}`);
      },
    };
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
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      await ensureTopics(admin, [
        topicSpec(settings, settings.topic),
        topicSpec(settings, dlqTopic(settings.topic)),
        ...(proposalsTopic === null ? [] : [topicSpec(settings, proposalsTopic)]),
      ]);
      await assertInfiniteRetention(admin, settings.topic, settings.allowFiniteRetention);
      this.dlqBudget = (await dlqLimits(admin, dlqTopic(settings.topic))).budget;
      await assertFunctionsLoaded(this.redis);
      await checkRedisServer(this.redis, { allowEvictingPolicy: settings.allowEvictingPolicy }, this.log);
      const control = await this.store.control();
      if (control.generation === null) {
        const committed = await groupOffsets(admin, settings.group, settings.topic);
        if ([...committed.values()].some((o) => o >= 0n)) {
          throw new StateLostError(
            `Redis has no mufold generation under prefix "${settings.prefix}", but group ${settings.group} has committed offsets: the projections were lost`,
          );
        }
      }
      const live = await this.store.initGeneration(settings.reducerVersion);
      assertReducerVersion(live.generation, live.reducerVersion, settings.reducerVersion);
      this.generation = live.generation;
    } finally {
      await admin.disconnect();
    }
    if (settings.warmUpRecords > 0) {
      // Before joining: the group's records wait for no compilation (the latency of a start's first second).
      const t0 = Date.now();
      await warmUpEngine({ reducerVersion: settings.reducerVersion, maxValueBytes: settings.maxValueBytes }, settings.warmUpRecords);
      this.log.info("engine warmed up", { records: settings.warmUpRecords, ms: Date.now() - t0 });
    }
    this.producer = await ReliableProducer.connect(this.kafka);
    if (feedSettings.enabled) this.feed = new ChangeFeed(this.store, { ...feedSettings, proposalsTopic }, this.producer);
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
      onJoin: () => {
        const ms = this.outages.recovered("kafka");
        if (ms > 0) this.log.warn("Kafka reachable again; folding resumes", { outageSeconds: Math.round(ms / 1000) });
      },
    });
    // An idle worker gets no batches, yet a promote must hear that it holds still.
    this.idleTimer = setInterval(() => void this.ackIfIdle(), POLL_MS);
    this.idleTimer.unref();
    this.log.info("fold started", { worker: this.workerId, generation: this.generation, topic: settings.topic, group: settings.group, changeFeed: feedSettings.enabled, proposalsTopic });
  }

  /**
   * Wait while a promote has paused the fold or Redis has no usable generation;
   * returns the generation to write. Redis being unreachable is held for at
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
        control = await this.store.control();
        if (control.paused) await this.store.ackPause(this.workerId, control.epoch);
      } catch (error) {
        // Redis unreachable (restarting): hold the batch, uncommitted, and keep the group membership alive.
        if (!warned) this.log.warn("Redis unavailable; holding the batch", { error: errorText(error) });
        warned = true;
        this.outages.failed("redis", error);
        if (!ctx.stillOwned() || this.stopping) throw error;
        await heartbeatOrYield(ctx);
        await sleep(POLL_MS * 4);
        continue;
      }
      if (control.paused) {
        // acknowledged above; hold still
      } else if (control.generation === null || control.generation === this.lostGeneration) {
        this.restoreWait = true;
        if (!warned) {
          this.log.error("Redis has no usable mufold generation: projections were lost; run `mufold replay --promote` to restore them", { generation: control.generation });
          warned = true;
        }
      } else {
        assertReducerVersion(control.generation, control.reducerVersion, this.settings.reducerVersion);
        this.restoreWait = false;
        if (control.generation !== this.generation) {
          this.log.info("generation changed", { from: this.generation, to: control.generation });
          this.applier.clear();
          this.generation = control.generation;
        }
        return control.generation;
      }
      if (!ctx.stillOwned() || this.stopping) throw new MufoldError("batch abandoned while waiting", { retriable: true });
      await heartbeatOrYield(ctx);
      await sleep(POLL_MS);
    }
  }

  private redisAnswered(): void {
    const ms = this.outages.recovered("redis");
    if (ms > 0) this.log.warn("Redis reachable again; folding resumes", { outageSeconds: Math.round(ms / 1000) });
  }

  private async ackIfIdle(): Promise<void> {
    if (this.batchesInFlight > 0 || this.stopping) return;
    try {
      const control = await this.store.control();
      if (control.paused && this.batchesInFlight === 0) await this.store.ackPause(this.workerId, control.epoch);
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

  private async foldBatch(records: SourceRecord[], ctx: BatchContext): Promise<void> {
    const endBatch = this.metrics?.batchSeconds.startTimer();
    const decision = { reducerVersion: this.settings.reducerVersion, maxValueBytes: this.settings.maxValueBytes };
    // Decided wave by wave as they are applied (batch-router.ts, keyWaves): a retry decides again.
    const waves = keyWaves(records);
    let rejected: RoutedBatch["rejected"] = [];
    for (let attempt = 1; ; attempt++) {
      const generation = await this.awaitWritableGeneration(ctx);
      try {
        // Refuse a partition whose log is not the one this generation folded, before writing anything.
        await this.guard.check(generation, ctx.topic, ctx.partition, records, BigInt(ctx.highWatermark));
        const endApply = this.metrics?.applySeconds.startTimer();
        rejected = [];
        const stats = await this.applier.applyInWaves(generation, waves, (wave) => {
          const routed = decideWave(wave, decision);
          for (const r of routed.rejected) rejected.push(r);
          return routed.identities;
        });
        endApply?.();
        // Announced before the commit: a failure here retries the batch, which announces the skipped changes again.
        await this.feed?.publish(generation, stats.changes);
        // Last, before the commit: the generation written is still the live one (Redis may have been emptied
        // mid-batch: then nothing is committed, and the writes went to a number that is never reused).
        await this.guard.seal(generation, ctx.topic, ctx.partition, BigInt(ctx.nextOffset), ctx.fetchedOffset === undefined ? undefined : BigInt(ctx.fetchedOffset));
        if (generation === this.generation) this.sealedAt = Date.now();
        this.redisAnswered();
        this.counters.applied += stats.applied;
        this.counters.duplicatesSkipped += stats.duplicatesSkipped;
        this.counters.casRetries += stats.casRetries;
        this.metrics?.deliveriesApplied.inc(stats.applied);
        this.metrics?.duplicatesSkipped.inc(stats.duplicatesSkipped);
        this.metrics?.casRetries.inc(stats.casRetries);
        this.metrics?.conflictingDeliveries.inc(stats.conflicting);
        break;
      } catch (err) {
        this.sealedAt = 0; // read the control hash before the next attempt, of this batch or another
        this.applier.clear(); // whatever landed, the versions and watermarks in Redis tell on reload
        if (err instanceof StateLostError || (err instanceof GenerationMovedError && err.current === null)) {
          // Never rebuild on top of a partial loss: wait for a replay to be promoted.
          this.lostGeneration = generation;
          this.log.error("identity state missing in Redis; waiting for `mufold replay --promote`", { error: errorText(err), generation });
          continue;
        }
        if (err instanceof PauseLostError) {
          // A promote paused the fleet after this batch began: it is not sealed; apply it again after the pause.
          this.log.info("a promote paused the fold mid-batch; the batch waits", { generation });
          continue;
        }
        if (err instanceof GenerationMovedError) {
          this.log.warn("generation moved during the batch; applying it again to the live one", { generation, now: err.current });
          continue;
        }
        // Refusals for good (a key-layout bug, a missing grant: typed by the Redis adapter) are never retried.
        if (err instanceof MufoldError && !err.retriable) throw err;
        // Redis restarting or unreachable: the batch stays uncommitted; try again until the outage tolerance runs out.
        this.outages.failed("redis", err);
        this.log.warn("apply failed; retrying the batch", { error: errorText(err), attempt });
        if (!ctx.stillOwned() || this.stopping) throw err;
        await heartbeatOrYield(ctx);
        await sleep(Math.min(5_000, POLL_MS * attempt));
      }
    }
    if (rejected.length > 0) {
      rejected = inBatchOrder(rejected, records); // the waves went key by key
      const messages = dlqSendGroups(rejected.map((r) => dlqMessage(r.record, r.reason, r.detail, this.dlqBudget)), this.dlqBudget);
      for (let attempt = 1; ; attempt++) {
        try {
          for (const group of messages) await this.producer!.send(dlqTopic(this.settings.topic), group); // a retry may resend groups: DLQ delivery is at least once
          this.outages.recovered("kafka");
          break;
        } catch (error) {
          // The producer already retried; a broker outage can outlast that. The batch stays uncommitted meanwhile.
          // A record the broker refuses for good (too large, not authorized) is not an outage: give up at once.
          if (isPermanentKafkaError(error)) throw error;
          this.outages.failed("kafka", error);
          if (!ctx.stillOwned() || this.stopping) throw error;
          this.log.warn("dead-letter produce failed; retrying", { error: errorText(error), attempt });
          await heartbeatOrYield(ctx);
          await sleep(Math.min(5_000, 500 * attempt));
        }
      }
      for (const r of rejected) {
        this.counters.dlqByReason[r.reason] = (this.counters.dlqByReason[r.reason] ?? 0) + 1;
        this.metrics?.deadLetters.inc({ reason: r.reason });
      }
      this.counters.deadLettered += rejected.length;
    }
    this.counters.consumed += records.length;
    this.counters.batches++;
    if (this.metrics) {
      this.metrics.recordsConsumed.inc(records.length);
      this.metrics.identitiesCached.set(this.applier.cached);
      this.metrics.identityCacheBytes.set(this.applier.cachedBytes);
      this.metrics.consumerLag.set({ topic: ctx.topic, partition: String(ctx.partition) }, Math.max(0, Number(BigInt(ctx.highWatermark) - BigInt(ctx.nextOffset))));
      endBatch?.();
    }
  }

  /** Leave the group and close connections; an unfinished batch stays uncommitted and is redelivered. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.idleTimer);
    await this.consumer?.stop().catch((error) => this.log.warn("consumer stop failed", { error }));
    await this.producer?.disconnect().catch(() => undefined);
    await this.redis.quit().catch(() => undefined);
    this.log.info("fold stopped", { worker: this.workerId, ...this.counters });
  }
}
