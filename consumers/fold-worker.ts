/**
 * The fold: a consumer-group member that decides every record, applies the
 * accepted ones to their identities in Redis (one version-checked call per
 * identity per batch), dead-letters the rest, and only then commits offsets.
 */
import { hostname } from "node:os";
import type { Cluster, Redis } from "ioredis";
import { createKafka, kafkaClientSettings, type Kafka } from "../src/adapters/kafka/client.js";
import { GroupConsumer, type BatchContext } from "../src/adapters/kafka/consumer.js";
import { ReliableProducer } from "../src/adapters/kafka/producer.js";
import { assertInfiniteRetention, ensureTopics, groupOffsets } from "../src/adapters/kafka/topics.js";
import { connectRedis, redisClientSettings } from "../src/adapters/redis/connect.js";
import { StateLostError } from "../src/adapters/redis/errors.js";
import { loadFunctions } from "../src/adapters/redis/functions.js";
import { RedisStore } from "../src/adapters/redis/store.js";
import type { Settings } from "../src/config.js";
import { MufoldError } from "../src/errors.js";
import type { Logger } from "../src/log.js";
import type { FoldMetrics } from "../src/metrics.js";
import { routeRecords } from "./batch-router.js";
import { ChangeFeed, changeFeedSettings } from "./change-feed.js";
import { dlqMessage, dlqTopic, type SourceRecord } from "./dlq.js";
import { IdentityApplier } from "./identity-applier.js";

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
const MAX_TRANSIENT_ATTEMPTS = 120;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class FoldWorker {
  readonly counters: FoldCounters = { consumed: 0, applied: 0, duplicatesSkipped: 0, deadLettered: 0, casRetries: 0, batches: 0, dlqByReason: {} };
  readonly workerId = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  private consumer: GroupConsumer | undefined;
  private producer: ReliableProducer | undefined;
  private generation: number | undefined;
  private stopping = false;
  private inBatch = false;
  /** A generation found to have lost state: written again only after a promote replaces it. */
  private lostGeneration: number | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly applier: IdentityApplier;
  private readonly store: RedisStore;
  /** The change feed (stream entries and review proposals); undefined when MUFOLD_CHANGE_FEED=off. */
  private feed: ChangeFeed | undefined;
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
    this.store = new RedisStore(redis, settings.prefix);
    this.applier = new IdentityApplier(this.store, settings.cacheSize);
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
    };
  }

  static async start(settings: Settings, log: Logger, metrics?: FoldMetrics): Promise<FoldWorker> {
    const kafka = createKafka(kafkaClientSettings(settings, "-fold"));
    const redis = connectRedis(redisClientSettings(settings));
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
    const feedSettings = changeFeedSettings();
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
        { topic: settings.topic, partitions: settings.partitions },
        { topic: dlqTopic(settings.topic), partitions: settings.partitions },
        ...(proposalsTopic === null ? [] : [{ topic: proposalsTopic, partitions: settings.partitions }]),
      ]);
      await assertInfiniteRetention(admin, settings.topic, settings.allowFiniteRetention);
      await loadFunctions(this.redis);
      const control = await this.store.control();
      if (control.generation === null) {
        const committed = await groupOffsets(admin, settings.group, settings.topic);
        if ([...committed.values()].some((o) => o >= 0n)) {
          throw new StateLostError(
            `Redis has no mufold generation under prefix "${settings.prefix}", but group ${settings.group} has committed offsets: the projections were lost`,
          );
        }
        this.generation = await this.store.initGeneration();
      } else {
        this.generation = control.generation;
      }
    } finally {
      await admin.disconnect();
    }
    this.producer = await ReliableProducer.connect(this.kafka);
    if (feedSettings.enabled) this.feed = new ChangeFeed(this.store, { ...feedSettings, proposalsTopic }, this.producer);
    this.consumer = await GroupConsumer.start(this.kafka, {
      groupId: settings.group,
      topic: settings.topic,
      fromBeginning: true,
      onBatch: (records, ctx) => this.onBatch(records, ctx),
      onCrash: (error) => {
        if ((error as { retriable?: boolean }).retriable) {
          this.log.warn("consumer restarting after a retriable error", { error });
          return;
        }
        this.log.error("consumer crashed", { error });
        this.crashedWith?.(error);
      },
    });
    // An idle worker gets no batches, yet a promote must hear that it holds still.
    this.idleTimer = setInterval(() => void this.ackIfIdle(), POLL_MS);
    this.idleTimer.unref();
    this.log.info("fold started", { worker: this.workerId, generation: this.generation, topic: settings.topic, group: settings.group, changeFeed: feedSettings.enabled, proposalsTopic });
  }

  /** Wait while a promote has paused the fold or Redis has no generation; returns the generation to write. */
  private async awaitWritableGeneration(ctx: BatchContext): Promise<number> {
    let warned = false;
    for (;;) {
      let control;
      try {
        control = await this.store.control();
      } catch (error) {
        // Redis unreachable (restarting): hold the batch, uncommitted, and keep the group membership alive.
        if (!warned) this.log.warn("Redis unavailable; holding the batch", { error });
        warned = true;
        if (!ctx.stillOwned() || this.stopping) throw error;
        await ctx.heartbeat().catch(() => undefined);
        await sleep(POLL_MS * 4);
        continue;
      }
      if (control.paused) {
        await this.store.ackPause(this.workerId, control.epoch);
      } else if (control.generation === null || control.generation === this.lostGeneration) {
        if (!warned) {
          this.log.error("Redis has no mufold generation: projections were lost; run `mufold replay --promote` to restore them");
          warned = true;
        }
      } else {
        if (control.generation !== this.generation) {
          this.log.info("generation changed", { from: this.generation, to: control.generation });
          this.applier.clear();
          this.generation = control.generation;
        }
        return control.generation;
      }
      if (!ctx.stillOwned() || this.stopping) throw new MufoldError("batch abandoned while waiting", { retriable: true });
      await ctx.heartbeat();
      await sleep(POLL_MS);
    }
  }

  private async ackIfIdle(): Promise<void> {
    if (this.inBatch || this.stopping) return;
    try {
      const control = await this.store.control();
      if (control.paused && !this.inBatch) await this.store.ackPause(this.workerId, control.epoch);
    } catch {
      /* Redis unavailable: the next batch reports it */
    }
  }

  private async onBatch(records: SourceRecord[], ctx: BatchContext): Promise<void> {
    this.inBatch = true;
    try {
      await this.foldBatch(records, ctx);
    } finally {
      this.inBatch = false;
    }
  }

  private async foldBatch(records: SourceRecord[], ctx: BatchContext): Promise<void> {
    const endBatch = this.metrics?.batchSeconds.startTimer();
    const routed = routeRecords(records, { reducerVersion: this.settings.reducerVersion, maxValueBytes: this.settings.maxValueBytes });
    for (let attempt = 1; ; attempt++) {
      const generation = await this.awaitWritableGeneration(ctx);
      try {
        const endApply = this.metrics?.applySeconds.startTimer();
        const stats = await this.applier.applyAll(generation, routed.identities);
        endApply?.();
        // Announced before the commit: a failure here retries the batch, which announces the skipped changes again.
        await this.feed?.publish(generation, stats.changes);
        this.counters.applied += stats.applied;
        this.counters.duplicatesSkipped += stats.duplicatesSkipped;
        this.counters.casRetries += stats.casRetries;
        this.metrics?.deliveriesApplied.inc(stats.applied);
        this.metrics?.duplicatesSkipped.inc(stats.duplicatesSkipped);
        this.metrics?.casRetries.inc(stats.casRetries);
        this.metrics?.conflictingDeliveries.inc(stats.conflicting);
        break;
      } catch (err) {
        this.applier.clear(); // whatever landed, the versions and watermarks in Redis tell on reload
        if (err instanceof StateLostError) {
          // Never rebuild on top of a partial loss: wait for a replay to be promoted.
          this.lostGeneration = generation;
          this.log.error("identity state missing in Redis; waiting for `mufold replay --promote`", { error: err, generation });
          continue;
        }
        // A CROSSSLOT reply is a key-layout bug, not a passing fault: never retry it.
        const fatal = (err instanceof MufoldError && !err.retriable) || (err instanceof Error && err.message.startsWith("CROSSSLOT"));
        if (fatal || attempt >= MAX_TRANSIENT_ATTEMPTS) throw err;
        // Redis restarting or unreachable: the batch stays uncommitted; try again.
        this.log.warn("apply failed; retrying the batch", { error: err, attempt });
        if (!ctx.stillOwned() || this.stopping) throw err;
        await ctx.heartbeat().catch(() => undefined);
        await sleep(Math.min(5_000, POLL_MS * attempt));
      }
    }
    if (routed.rejected.length > 0) {
      const messages = routed.rejected.map((r) => dlqMessage(r.record, r.reason, r.detail));
      for (let attempt = 1; ; attempt++) {
        try {
          await this.producer!.send(dlqTopic(this.settings.topic), messages);
          break;
        } catch (error) {
          // The producer already retried; a broker restart can outlast that. The batch stays uncommitted meanwhile.
          if (attempt >= 10 || !ctx.stillOwned() || this.stopping) throw error;
          this.log.warn("dead-letter produce failed; retrying", { error, attempt });
          await ctx.heartbeat().catch(() => undefined);
          await sleep(1_000 * attempt);
        }
      }
      for (const r of routed.rejected) {
        this.counters.dlqByReason[r.reason] = (this.counters.dlqByReason[r.reason] ?? 0) + 1;
        this.metrics?.deadLetters.inc({ reason: r.reason });
      }
      this.counters.deadLettered += routed.rejected.length;
    }
    this.counters.consumed += records.length;
    this.counters.batches++;
    if (this.metrics) {
      this.metrics.recordsConsumed.inc(records.length);
      this.metrics.identitiesCached.set(this.applier.cached);
      const last = BigInt(records[records.length - 1]!.offset);
      this.metrics.consumerLag.set({ partition: String(ctx.partition) }, Math.max(0, Number(BigInt(ctx.highWatermark) - last - 1n)));
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
