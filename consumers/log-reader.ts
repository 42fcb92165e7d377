/**
 * Reads a topic from offset 0 up to per-partition targets with a throwaway
 * consumer group, handing each batch's records below the target to a handler.
 * Records fetched past a target are held (the partition paused) until the
 * target moves or the read ends, so raising a target never loses records.
 * Positions follow the batch's next offset, which counts transaction markers
 * and aborted records, so a transactional topic is read to its end.
 */
import type { Kafka } from "kafkajs";
import { GroupConsumer, type BatchContext } from "../src/adapters/kafka/consumer.js";
import { MufoldError } from "../src/errors.js";
import type { Logger } from "../src/log.js";
import type { SourceRecord } from "./dlq.js";

export type BatchHandler = (records: SourceRecord[], ctx: BatchContext) => Promise<void>;

interface Held {
  records: SourceRecord[];
  ctx: BatchContext;
}

export class LogReader {
  private readonly targets = new Map<number, bigint>();
  private readonly positions = new Map<number, bigint>();
  private readonly held = new Map<number, Held>();
  private consumer: GroupConsumer | undefined;
  private crash: unknown;

  private constructor(
    private readonly topic: string,
    private readonly handle: BatchHandler,
  ) {}

  static async start(kafka: Kafka, opts: { topic: string; groupId: string; targets: ReadonlyMap<number, bigint>; handle: BatchHandler; log: Logger }): Promise<LogReader> {
    const reader = new LogReader(opts.topic, opts.handle);
    for (const [p, t] of opts.targets) {
      reader.targets.set(p, t);
      reader.positions.set(p, 0n);
    }
    reader.consumer = await GroupConsumer.start(kafka, {
      groupId: opts.groupId,
      topic: opts.topic,
      fromBeginning: true,
      onBatch: (records, ctx) => reader.onBatch(records, ctx),
      onCrash: (error) => {
        // A replay has no supervisor to restart it: any crash ends it, with the cause.
        opts.log.error("replay consumer crashed", { error: error instanceof Error ? error.message : String(error) });
        reader.crash = error ?? new Error("replay consumer crashed");
      },
    });
    return reader;
  }

  /** The consumer's crash, or a partition parked on a batch it cannot decode: either ends the read. */
  failure(): unknown {
    if (this.crash !== undefined) return this.crash;
    // Parked at or past its target, a partition is read as far as it must be: only a park below it ends the read.
    const parked = (this.consumer?.parked() ?? []).filter((p) => BigInt(p.offset) < (this.targets.get(p.partition) ?? 0n));
    if (parked.length === 0) return undefined;
    const p = parked[0]!;
    return new MufoldError(`partition ${p.topic}[${p.partition}] has a record batch at offset ${p.offset} that cannot be decoded (${p.reason}): the log cannot be replayed past it`);
  }

  reached(): boolean {
    for (const [p, t] of this.targets) if ((this.positions.get(p) ?? 0n) < t) return false;
    return true;
  }

  /** A compact description of where the read is (it changes whenever a record is handled). */
  progress(): string {
    let done = 0n;
    let want = 0n;
    for (const [p, t] of this.targets) {
      done += (this.positions.get(p) ?? 0n) < t ? (this.positions.get(p) ?? 0n) : t;
      want += t;
    }
    return `${done} of ${want} offsets read`;
  }

  positionsNow(): Map<number, bigint> {
    return new Map(this.positions);
  }

  /** Raise targets (never lower them); held records now below a target are handled. */
  async raiseTargets(targets: ReadonlyMap<number, bigint>): Promise<void> {
    for (const [p, t] of targets) if (t > (this.targets.get(p) ?? 0n)) this.targets.set(p, t);
    for (const [p, held] of [...this.held]) {
      this.held.delete(p);
      await this.take(held.records, held.ctx, true);
    }
  }

  private async onBatch(records: SourceRecord[], ctx: BatchContext): Promise<void> {
    const earlier = this.held.get(ctx.partition);
    if (earlier !== undefined) {
      // Fetched before the pause took effect: keep it behind what is already held.
      this.held.set(ctx.partition, { records: [...earlier.records, ...records], ctx });
      return;
    }
    await this.take(records, ctx, false);
  }

  private async take(records: SourceRecord[], ctx: BatchContext, wasHeld: boolean): Promise<void> {
    const p = ctx.partition;
    const target = this.targets.get(p) ?? 0n;
    let cut = records.findIndex((r) => BigInt(r.offset) >= target);
    if (cut < 0) cut = records.length;
    const within = records.slice(0, cut);
    const beyond = records.slice(cut);
    const next = beyond.length > 0 ? BigInt(beyond[0]!.offset) : BigInt(ctx.nextOffset);
    if (within.length > 0) {
      await this.handle(within, { ...ctx, nextOffset: next.toString() });
    }
    if (next > (this.positions.get(p) ?? 0n)) this.positions.set(p, next);
    if (beyond.length > 0) {
      this.held.set(p, { records: beyond, ctx });
      if (!wasHeld) this.consumer?.pause(ctx.topic, p);
    } else if (wasHeld) {
      this.consumer?.resume(ctx.topic, p);
    }
  }

  async stop(): Promise<void> {
    this.held.clear();
    await this.consumer?.stop();
    this.consumer = undefined;
  }
}
