/**
 * The write side of a replay: folds chunks of records into the shadow
 * generation. Records are grouped by Kafka key as they arrive and decided
 * only when their group's turn to apply comes (IdentityApplier.applyDeciding),
 * so a chunk holds the records as Kafka gave them, about the bytes the reader
 * counts, and only the groups in flight hold decided observations; each
 * identity of a chunk is applied once with all its records (a record is
 * accepted only under its scope's key, so an identity's records all share one
 * key; a key may hold several identities). The generation is new, so the applier
 * runs fresh: an identity it has not written is created without a load;
 * another writer of the same identity (a second replay worker) is caught by
 * the version check, and the identity reloaded.
 *
 * Before anything of a partition is written, the partition guard checks its
 * origin (the record at offset 0) against the build token. Dead letters are
 * counted, never produced: the live fold produced them already.
 *
 * The build writes through the live fold's kind of store (writerStore: its
 * writes leave in groups, write-coalescing.ts): written one by one, each apply was a
 * syscall here and a read in Redis, which costs most when replay processes
 * saturate the machine.
 */
import type { Kafka } from "kafkajs";
import type { BatchContext } from "../../src/adapters/kafka/consumer.js";
import type { RedisClient } from "../../src/adapters/redis/connect.js";
import { RedisControlStore } from "../../src/adapters/redis/control-store.js";
import { writerStore } from "../../src/adapters/redis/identity-store.js";
import type { ControlStore } from "../../src/fold/control-store.js";
import type { IdentityStore } from "../../src/fold/identity-store.js";
import type { Settings } from "../../src/config/settings.js";
import type { Logger } from "../../src/observability/log.js";
import { groupByKey, routeRecords } from "../../src/fold/batch-router.js";
import type { SourceRecord } from "../../src/fold/source-record.js";
import { IdentityApplier } from "../../src/fold/identity-applier.js";
import { LogReader, type ChunkBuilder } from "./log-reader.js";
import { PartitionGuard } from "../fold/partition-guard.js";
import { connectBuildRedis } from "./replay-redis.js";

export interface BuildStats {
  records: number;
  deliveries: number;
  duplicatesSkipped: number;
  dlq: number;
  dlqByReason: Record<string, number>;
}

export function emptyStats(): BuildStats {
  return { records: 0, deliveries: 0, duplicatesSkipped: 0, dlq: 0, dlqByReason: {} };
}

/** Add `from` into `into` (the coordinator sums its workers' stats). */
export function addStats(into: BuildStats, from: BuildStats): BuildStats {
  into.records += from.records;
  into.deliveries += from.deliveries;
  into.duplicatesSkipped += from.duplicatesSkipped;
  into.dlq += from.dlq;
  for (const [reason, n] of Object.entries(from.dlqByReason)) into.dlqByReason[reason] = (into.dlqByReason[reason] ?? 0) + n;
  return into;
}

interface Chunk {
  /** The chunk's records by Kafka key (latin1; "" for none): decided when their group's turn to apply comes. */
  groups: Map<string, SourceRecord[]>;
  /** Per partition: the first record the chunk holds (an offset 0 is checked for its origin) and the broker's end offset. */
  partitions: Map<number, { topic: string; first: SourceRecord | undefined; high: bigint }>;
  stats: BuildStats;
}

const newChunk = (): Chunk => ({ groups: new Map(), partitions: new Map(), stats: emptyStats() });

export class ShadowBuild implements ChunkBuilder {
  readonly stats = emptyStats();
  private readonly applier: IdentityApplier;
  private readonly guard: PartitionGuard;
  private open = newChunk();

  constructor(
    identities: IdentityStore,
    control: ControlStore,
    private readonly settings: Pick<Settings, "reducerVersion" | "maxValueBytes" | "cacheSize" | "cacheMaxBytes" | "changeFeed" | "casMaxAttempts" | "identitiesInFlight">,
    readonly generation: number,
    buildToken: string,
  ) {
    this.applier = new IdentityApplier(identities, settings.cacheSize, { cacheMaxBytes: settings.cacheMaxBytes, fresh: true, feed: settings.changeFeed, casAttempts: settings.casMaxAttempts, inFlight: settings.identitiesInFlight });
    this.guard = new PartitionGuard(control, buildToken);
  }

  add(records: SourceRecord[], ctx: BatchContext): void {
    const chunk = this.open;
    const part = chunk.partitions.get(ctx.partition);
    const high = BigInt(ctx.highWatermark);
    if (part === undefined) chunk.partitions.set(ctx.partition, { topic: ctx.topic, first: records[0], high });
    else if (high > part.high) part.high = high;
    groupByKey(records, chunk.groups); // per partition still in offset order
    chunk.stats.records += records.length;
  }

  async flush(): Promise<void> {
    const chunk = this.open;
    this.open = newChunk();
    // A log that is not the one this build started on is refused before anything of it is written.
    await Promise.all(
      [...chunk.partitions].map(([p, part]) => this.guard.check(this.generation, part.topic, p, part.first === undefined ? [] : [part.first], part.high)),
    );
    if (chunk.groups.size > 0) {
      const options = { reducerVersion: this.settings.reducerVersion, maxValueBytes: this.settings.maxValueBytes };
      const stats = chunk.stats;
      const applied = await this.applier.applyDeciding(this.generation, chunk.groups.values(), (records) => {
        const routed = routeRecords(records, options);
        stats.dlq += routed.rejected.length;
        for (const r of routed.rejected) stats.dlqByReason[r.reason] = (stats.dlqByReason[r.reason] ?? 0) + 1;
        return routed.identities;
      });
      chunk.stats.deliveries = applied.applied;
      chunk.stats.duplicatesSkipped = applied.duplicatesSkipped;
    }
    addStats(this.stats, chunk.stats);
  }
}

/** One reader and its build in this process: a replay's share of the partitions (all of them with one worker). */
export class LocalShadow {
  private constructor(
    private readonly reader: LogReader,
    private readonly build: ShadowBuild,
    private readonly redis: RedisClient,
  ) {}

  /** Start reading; the build writes through its own Redis connection (replay-redis.ts), closed by `stop`. */
  static async start(
    kafka: Kafka,
    opts: {
      settings: Settings;
      generation: number;
      token: string;
      groupId: string;
      targets: ReadonlyMap<number, bigint>;
      /** The topic's partitions that other readers read. */
      others?: readonly number[];
      chunkBytes: number;
      log: Logger;
      onAdvance?(): void;
    },
  ): Promise<LocalShadow> {
    const redis = connectBuildRedis(opts.settings);
    try {
      const build = new ShadowBuild(writerStore(redis, opts.settings.prefix), new RedisControlStore(redis, opts.settings.prefix), opts.settings, opts.generation, opts.token);
      const reader = await LogReader.start(kafka, {
        topic: opts.settings.topic,
        groupId: opts.groupId,
        targets: opts.targets,
        others: opts.others ?? [],
        builder: build,
        chunkBytes: opts.chunkBytes,
        fetchMaxBytes: opts.settings.fetchMaxBytes,
        partitionFetchMaxBytes: opts.settings.partitionFetchMaxBytes,
        log: opts.log,
        ...(opts.onAdvance ? { onAdvance: opts.onAdvance } : {}),
      });
      return new LocalShadow(reader, build, redis);
    } catch (err) {
      redis.disconnect();
      throw err;
    }
  }

  stats(): BuildStats {
    return this.build.stats;
  }

  failure(): unknown {
    return this.reader.failure();
  }

  reached(): boolean {
    return this.reader.reached();
  }

  progress(): string {
    return this.reader.progress();
  }

  positionsNow(): Map<number, bigint> {
    return this.reader.positionsNow();
  }

  raiseTargets(targets: ReadonlyMap<number, bigint>): Promise<void> {
    return this.reader.raiseTargets(targets);
  }

  async stop(): Promise<void> {
    await this.reader.stop();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

/** What the replay needs of its readers, in this process or in worker processes. */
export type ShadowReader = Pick<LocalShadow, "stats" | "failure" | "reached" | "progress" | "positionsNow" | "raiseTargets" | "stop">;
