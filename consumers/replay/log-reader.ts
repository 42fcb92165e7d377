/**
 * Reads a topic from offset 0 up to per-partition targets with a throwaway
 * consumer group and hands the records below the targets to a chunk builder
 * in bulk: records accumulate across fetches into an open chunk while the
 * previous chunk is applied, and the reader waits (stops fetching) once the
 * open chunk holds `chunkBytes`, so memory is bounded by that setting, never
 * by the log. One chunk is applied at a time, in order.
 *
 * Positions (the next offset per partition) advance only once a chunk is
 * applied: they are the replay's progress record, kept in memory (the build's
 * marks are sealed from them); the throwaway group's commits, which the
 * consumer adapter always makes, go in the background and are never read. Records fetched past a target are held (the
 * partition paused) until the target moves or the read ends, so raising a
 * target never loses records. Positions follow the batch's next offset, which
 * counts transaction markers and aborted records, so a transactional topic is
 * read to its end. Partitions without a target are not this reader's share:
 * they are paused and their records dropped.
 */
import type { Kafka } from "kafkajs";
import { GroupConsumer, type BatchContext } from "../../src/adapters/kafka/consumer.js";
import { MufoldError } from "../../src/errors.js";
import type { Logger } from "../../src/observability/log.js";
import type { SourceRecord } from "../../src/fold/source-record.js";

/** Where chunks go. */
export interface ChunkBuilder {
  /** Take records below their partition's target (in offset order per partition) into the open chunk. */
  add(records: SourceRecord[], ctx: BatchContext): void;
  /** Seal the open chunk synchronously (later adds go into the next one), then apply it. */
  flush(): Promise<void>;
}

export interface LogReaderOptions {
  topic: string;
  groupId: string;
  targets: ReadonlyMap<number, bigint>;
  builder: ChunkBuilder;
  /** Partitions of the topic that are another reader's share: paused at once, so that they are not even fetched. */
  others?: readonly number[];
  /** The open chunk's budget: past it the reader stops fetching until the chunk in flight is applied. */
  chunkBytes: number;
  /**
   * Compressed record bytes one fetch brings, of all the reader's partitions and of one (the fold's
   * MUFOLD_FETCH_MAX_BYTES and MUFOLD_PARTITION_FETCH_MAX_BYTES): kafkajs decodes a whole fetch before it
   * hands out a batch, so this, not only the chunks, is what the reader holds.
   */
  fetchMaxBytes: number;
  partitionFetchMaxBytes: number;
  log: Logger;
  /** Positions advanced (a chunk was applied). */
  onAdvance?(): void;
}

interface Held {
  records: SourceRecord[];
  ctx: BatchContext;
}

/** Bytes a record holds while it waits in a chunk (payload plus a rough per-record overhead). */
function recordBytes(r: SourceRecord): number {
  return (r.value?.length ?? 0) + (r.key?.length ?? 0) + 64;
}

/** "N of M offsets read" over per-partition positions and targets (it changes whenever a record is applied). */
export function describeProgress(positions: ReadonlyMap<number, bigint>, targets: ReadonlyMap<number, bigint>): string {
  let done = 0n;
  let want = 0n;
  for (const [p, t] of targets) {
    const at = positions.get(p) ?? 0n;
    done += at < t ? at : t;
    want += t;
  }
  return `${done} of ${want} offsets read`;
}

export function targetsReached(positions: ReadonlyMap<number, bigint>, targets: ReadonlyMap<number, bigint>): boolean {
  for (const [p, t] of targets) if ((positions.get(p) ?? 0n) < t) return false;
  return true;
}

export class LogReader {
  private readonly targets = new Map<number, bigint>();
  /** Applied: every record below is in the build. */
  private readonly positions = new Map<number, bigint>();
  private readonly held = new Map<number, Held>();
  /** The open chunk: its size and the positions it reaches once applied. */
  private open = { bytes: 0, next: new Map<number, bigint>() };
  private applying: Promise<void> | undefined;
  private stopping = false;
  private consumer: GroupConsumer | undefined;
  private crash: unknown;

  private constructor(private readonly options: LogReaderOptions) {}

  static async start(kafka: Kafka, options: LogReaderOptions): Promise<LogReader> {
    const reader = new LogReader(options);
    for (const [p, t] of options.targets) {
      reader.targets.set(p, t);
      reader.positions.set(p, 0n);
    }
    reader.consumer = await GroupConsumer.start(kafka, {
      groupId: options.groupId,
      topic: options.topic,
      fromBeginning: true,
      // The group is thrown away and never resumed from: its commits need not hold up the next batch.
      commitInBackground: true,
      maxBytes: options.fetchMaxBytes,
      maxBytesPerPartition: options.partitionFetchMaxBytes,
      onCommitError: () => undefined,
      onBatch: (records, ctx) => reader.onBatch(records, ctx),
      onCrash: (error) => {
        // A replay has no supervisor to restart it: any crash ends it, with the cause.
        options.log.error("replay consumer crashed", { error: error instanceof Error ? error.message : String(error) });
        reader.crash ??= error ?? new Error("replay consumer crashed");
      },
    });
    // Before the first fetch, as a rule (it starts after the join): kafkajs decodes whatever a fetch returns.
    for (const p of options.others ?? []) reader.consumer.pause(options.topic, p);
    return reader;
  }

  /** The consumer's crash, a chunk that failed to apply, or a partition parked on a batch it cannot decode: each ends the read. */
  failure(): unknown {
    if (this.crash !== undefined) return this.crash;
    // Parked at or past its target, a partition is read as far as it must be: only a park below it ends the read.
    const parked = (this.consumer?.parked() ?? []).filter((p) => BigInt(p.offset) < (this.targets.get(p.partition) ?? 0n));
    if (parked.length === 0) return undefined;
    const p = parked[0]!;
    return new MufoldError(`partition ${p.topic}[${p.partition}] has a record batch at offset ${p.offset} that cannot be decoded (${p.reason}): the log cannot be replayed past it`);
  }

  reached(): boolean {
    return targetsReached(this.positions, this.targets);
  }

  progress(): string {
    return describeProgress(this.positions, this.targets);
  }

  positionsNow(): Map<number, bigint> {
    return new Map(this.positions);
  }

  /** Raise targets (never lower them, never add a partition); held records now below a target go into the open chunk. */
  async raiseTargets(targets: ReadonlyMap<number, bigint>): Promise<void> {
    for (const [p, t] of targets) if (this.targets.has(p) && t > this.targets.get(p)!) this.targets.set(p, t);
    for (const [p, held] of [...this.held]) {
      this.held.delete(p);
      this.take(held.records, held.ctx, true);
    }
  }

  private async onBatch(records: SourceRecord[], ctx: BatchContext): Promise<void> {
    if (!this.targets.has(ctx.partition)) {
      this.consumer?.pause(ctx.topic, ctx.partition); // another reader's share
      return;
    }
    if (this.stopping || this.crash !== undefined) return;
    const earlier = this.held.get(ctx.partition);
    if (earlier !== undefined) {
      // Fetched before the pause took effect: keep it behind what is already held.
      this.held.set(ctx.partition, { records: [...earlier.records, ...records], ctx });
      return;
    }
    this.take(records, ctx, false);
    // Backpressure: a full open chunk waits for the chunk in flight (which then seals this one).
    while (this.open.bytes >= this.options.chunkBytes && this.applying !== undefined && !this.stopping) await this.applying;
  }

  private take(records: SourceRecord[], ctx: BatchContext, wasHeld: boolean): void {
    const p = ctx.partition;
    const target = this.targets.get(p) ?? 0n;
    let cut = records.findIndex((r) => BigInt(r.offset) >= target);
    if (cut < 0) cut = records.length;
    const within = records.slice(0, cut);
    const beyond = records.slice(cut);
    const next = beyond.length > 0 ? BigInt(beyond[0]!.offset) : BigInt(ctx.nextOffset);
    if (within.length > 0) {
      this.options.builder.add(within, { ...ctx, nextOffset: next.toString() });
      for (const r of within) this.open.bytes += recordBytes(r);
    }
    if (next > (this.open.next.get(p) ?? this.positions.get(p) ?? 0n)) this.open.next.set(p, next);
    if (beyond.length > 0) {
      this.held.set(p, { records: beyond, ctx });
      if (!wasHeld) this.consumer?.pause(ctx.topic, p);
    } else if (wasHeld) {
      this.consumer?.resume(ctx.topic, p);
    }
    this.schedule();
  }

  /** Apply the open chunk unless one is in flight (that one's end applies the next). */
  private schedule(): void {
    if (this.applying !== undefined || this.stopping || this.crash !== undefined || this.open.next.size === 0) return;
    const chunk = this.open;
    this.open = { bytes: 0, next: new Map() };
    this.applying = (async () => {
      try {
        await this.options.builder.flush();
        for (const [p, next] of chunk.next) if (next > (this.positions.get(p) ?? 0n)) this.positions.set(p, next);
        this.options.onAdvance?.();
      } catch (err) {
        this.crash ??= err; // nothing later may be applied past a chunk that did not land
      } finally {
        this.applying = undefined;
      }
      this.schedule();
    })();
  }

  /** Stop reading; a chunk in flight lands first (nothing writes into the build once this resolves). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.held.clear();
    await this.consumer?.stop();
    this.consumer = undefined;
    await this.applying;
  }
}
