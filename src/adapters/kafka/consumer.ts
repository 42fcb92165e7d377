/**
 * A consumer-group loop that hands each fetched batch to a handler and commits
 * the batch's offsets only after the handler resolves (after Redis has it).
 * A handler that throws leaves the offsets uncommitted: the batch is redelivered.
 * With `commitInBackground`, the commit is sent without holding up the next
 * batch, one request at a time with every partition's latest offset
 * (commit-coalescer.ts; in order per partition; a lost commit only means a
 * redelivery, which the fold skips by its watermarks), and `stop` waits for
 * the ones in flight.
 * A batch that cannot be decoded parks its partition (see codecs.ts): paused,
 * its committed offset left at that batch, reported by `parked()` and `onPark`.
 */
import { createRequire } from "node:module";
import type { Batch, Consumer, EachBatchPayload, Kafka } from "kafkajs";
import { settingDefault } from "../../config/settings.js";
import type { SourceRecord } from "../../fold/source-record.js";
import { undecodableReason } from "./codecs.js";
import { CommitCoalescer } from "./commit-coalescer.js";
import { isBrokerUnreachable } from "./errors.js";
import { installBatchDecoder } from "./batch-decoder.js";
import { installRecordDecoder } from "./record-decoder.js";

// Before any consumer fetches: kafkajs's batch decoder takes its record decoder when first loaded.
installRecordDecoder(); // first: the batch decoder's install loads kafkajs's, which takes the record decoder
installBatchDecoder();

/**
 * How long a consumer that kafkajs gave up on waits before it is started again
 * (see GroupConsumer.crashed): about kafkajs's own restart delay after retries.
 */
const RELAUNCH_DELAY_MS = 1_000;
/** How long a stop waits for a relaunch under way (its connect may be retrying through an outage). */
const RELAUNCH_STOP_WAIT_MS = 5_000;

export interface BatchContext {
  topic: string;
  partition: number;
  /** The partition's high watermark when the batch was fetched (for lag). */
  highWatermark: string;
  /**
   * The offset after the batch, control records (transaction markers) and
   * aborted records included: what is committed once the handler resolves.
   * A batch may hold only such records; the handler then gets no records.
   */
  nextOffset: string;
  /** The offset the fetch asked for: where this member resumed (records before it were committed). */
  fetchedOffset?: string;
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping or the partition was revoked. */
  stillOwned(): boolean;
}

/** A partition held at a batch that cannot be decoded (corrupt payload, unknown codec). */
export interface ParkedPartition {
  topic: string;
  partition: number;
  /** Where the undecodable batch starts: the group's committed offset stays at or before it. */
  offset: string;
  reason: string;
}

export interface GroupConsumerOptions {
  groupId: string;
  topic: string;
  fromBeginning: boolean;
  onBatch(records: SourceRecord[], ctx: BatchContext): Promise<void>;
  /** The consumer stopped on an error; `restarting` when it is started again (see restartOnFailure). */
  onCrash?(error: unknown, restarting: boolean): void;
  /**
   * Whether the consumer should be started again after this error (default:
   * kafkajs's way, retriable errors only). Asked by kafkajs for the errors it
   * deems retriable, and by GroupConsumer for a broker that cannot be reached
   * behind an error kafkajs deems final (a group coordinator not found on any
   * broker: kafkajs swallows each broker's connection error in that lookup).
   */
  restartOnFailure?(error: Error): Promise<boolean>;
  /**
   * The consumer joined the group (after a start, a rebalance or a restart), with the partitions of `topic`
   * it was assigned: where each starts is the handler's to say (`seek`), before or after its first batch.
   */
  onJoin?(partitions: readonly number[]): void;
  /** A partition was parked (once per parking; the other partitions keep going). */
  onPark?(parked: ParkedPartition): void;
  /** A parked partition was revoked by a rebalance: no longer this member's to report. */
  onUnpark?(parked: ParkedPartition): void;
  maxWaitTimeInMs?: number;
  sessionTimeout?: number;
  heartbeatInterval?: number;
  /** Most bytes one fetch brings (all partitions), and of one partition (one batch). */
  maxBytes?: number;
  maxBytesPerPartition?: number;
  /** Batches of different partitions handled at once (default 1). */
  partitionsConsumedConcurrently?: number;
  /** kafkajs consumer retry.retries (default: the kafkaConsumerRetries setting's). */
  retries?: number;
  /** Commit without awaiting it before the next batch (see the header). */
  commitInBackground?: boolean;
  /** A background commit failed (the next commit of the partition, or a redelivery, covers it). */
  onCommitError?(error: unknown, topic: string, partition: number): void;
}

/** What the patch and nextOffset read of kafkajs's Batch and Runner (2.2.4; not in its typings). */
interface BatchInternals {
  fetchedOffset: string;
  rawMessages: { offset: string; batchContext?: { firstOffset?: string; lastOffsetDelta?: number } }[];
  isEmptyDueToFiltering(): boolean;
}
interface RunnerInternals {
  eachBatch?: { [DELIVER_FILTERED]?: true };
  running: boolean;
  handleBatch(batch: BatchInternals): Promise<void>;
  processEachBatch(batch: BatchInternals): Promise<void>;
  heartbeat(): Promise<void>;
}

const DELIVER_FILTERED = Symbol("mufold.deliverFilteredBatches");
let runnerPatched = false;

/**
 * kafkajs never calls eachBatch for a fetched batch that holds only control
 * records (the marker a transaction's commit or abort leaves) or aborted
 * records: it advances its fetch position in memory only, so with autoCommit
 * off the group's offset never passes them (a replay waiting for the end
 * offset hangs). Runner.handleBatch is patched to hand such batches to an
 * eachBatch flagged with DELIVER_FILTERED; other consumers keep kafkajs's way.
 */
function deliverFilteredBatches(): void {
  if (runnerPatched) return;
  const Runner = createRequire(import.meta.url)("kafkajs/src/consumer/runner.js") as { prototype: RunnerInternals };
  const proto = Runner.prototype;
  const original = proto.handleBatch;
  if (typeof original !== "function" || typeof proto.processEachBatch !== "function") {
    throw new Error("kafkajs internals changed (consumer/runner.js): review src/adapters/kafka/consumer.ts");
  }
  proto.handleBatch = async function (this: RunnerInternals, batch: BatchInternals): Promise<void> {
    if (this.eachBatch?.[DELIVER_FILTERED] && this.running && batch.isEmptyDueToFiltering()) {
      await this.processEachBatch(batch);
      await this.heartbeat();
      return;
    }
    return original.call(this, batch);
  };
  runnerPatched = true;
}

/** The offset after every record batch kafkajs decoded for this fetch (their last offsets, whatever was filtered). */
function batchEnd(batch: Batch): bigint {
  const { fetchedOffset, rawMessages } = batch as unknown as BatchInternals;
  const last = rawMessages[rawMessages.length - 1];
  const context = last?.batchContext;
  let end = BigInt(fetchedOffset);
  if (context?.firstOffset !== undefined && context.lastOffsetDelta !== undefined) {
    const after = BigInt(context.firstOffset) + BigInt(context.lastOffsetDelta) + 1n;
    if (after > end) end = after;
  } else if (last !== undefined && BigInt(last.offset) + 1n > end) {
    end = BigInt(last.offset) + 1n;
  }
  return end;
}

export class GroupConsumer {
  /** In the group with an assignment (false while rebalancing, crashed or stopped). */
  joined = false;
  /** When the coordinator last accepted a heartbeat (ms since epoch; 0 = never). */
  lastHeartbeat = 0;
  private readonly parkedPartitions = new Map<string, ParkedPartition>();
  /** Background commits: one request at a time, each partition's latest offset (commits of one partition in order). */
  private readonly commits: CommitCoalescer;
  /** Seeks asked per partition: a batch that saw the count move under it is neither resolved nor committed. */
  private readonly seeks = new Map<string, number>();
  /** Per partition, the least offset a commit may carry until the next join (see holdCommitsAt). */
  private readonly commitFloors = new Map<string, bigint>();
  /** Errors restartOnFailure already judged for kafkajs (its verdict stands). */
  private readonly judged = new WeakSet<Error>();
  private runArgs: Parameters<Consumer["run"]>[0];
  private relaunchTimer: NodeJS.Timeout | undefined;
  private relaunching: Promise<void> | undefined;
  private stopping = false;

  private constructor(
    private readonly consumer: Consumer,
    readonly groupId: string,
    private readonly options: GroupConsumerOptions,
  ) {
    this.commits = new CommitCoalescer(
      (commits) => consumer.commitOffsets(commits),
      (error, topic, partition) => options.onCommitError?.(error, topic, partition),
    );
    const { GROUP_JOIN, REBALANCING, CRASH, STOP, DISCONNECT, HEARTBEAT } = consumer.events;
    consumer.on(GROUP_JOIN, (e) => {
      this.joined = true;
      this.lastHeartbeat = Date.now();
      this.releaseRevoked(e.payload.memberAssignment);
      this.commitFloors.clear();
      this.options.onJoin?.([...(e.payload.memberAssignment[options.topic] ?? [])].sort((a, b) => a - b));
    });
    consumer.on(HEARTBEAT, () => {
      this.lastHeartbeat = Date.now();
    });
    for (const event of [REBALANCING, CRASH, STOP, DISCONNECT]) {
      consumer.on(event, () => {
        this.joined = false;
      });
    }
  }

  /**
   * Fetch `partition` from `offset` next. A batch of it being handled now is stale: when its handler returns,
   * its offsets are neither resolved nor committed (they would undo the seek).
   */
  seek(topic: string, partition: number, offset: bigint): void {
    const key = `${topic}:${partition}`;
    this.seeks.set(key, (this.seeks.get(key) ?? 0) + 1);
    this.consumer.seek({ topic, partition, offset: offset.toString() });
  }

  /** Commit `offset` for a partition now, in order with the batches' commits (the group's offsets as progress). */
  commit(topic: string, partition: number, offset: bigint): void {
    this.commits.commit({ topic, partition, offset: offset.toString() });
  }

  /**
   * Until the next join, never commit less than `offset` for the partition: a handler refolding records
   * before it (seeking back) leaves the group's offset where the log had been folded to, so that whoever
   * reads it later (a restart, an operator's tool) still sees how far the fold must come.
   */
  holdCommitsAt(topic: string, partition: number, offset: bigint): void {
    const key = `${topic}:${partition}`;
    if (offset > (this.commitFloors.get(key) ?? -1n)) this.commitFloors.set(key, offset);
  }

  /** Partitions this member holds at an undecodable batch. */
  parked(): ParkedPartition[] {
    return [...this.parkedPartitions.values()].map((p) => ({ ...p }));
  }

  static async start(kafka: Kafka, options: GroupConsumerOptions): Promise<GroupConsumer> {
    deliverFilteredBatches();
    const consumer = kafka.consumer({
      groupId: options.groupId,
      maxWaitTimeInMs: options.maxWaitTimeInMs ?? 100,
      sessionTimeout: options.sessionTimeout ?? 30_000,
      heartbeatInterval: options.heartbeatInterval ?? 3_000,
      ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
      ...(options.maxBytesPerPartition === undefined ? {} : { maxBytesPerPartition: options.maxBytesPerPartition }),
      allowAutoTopicCreation: false,
      retry: {
        retries: options.retries ?? settingDefault("kafkaConsumerRetries"),
        ...(options.restartOnFailure ? { restartOnFailure: (error: Error) => handle.judge(error) } : {}),
      },
    });
    const handle: GroupConsumer = new GroupConsumer(consumer, options.groupId, options);
    consumer.on(consumer.events.CRASH, (e) => void handle.crashed(e.payload.error, e.payload.restart));
    await consumer.connect();
    await consumer.subscribe({ topics: [options.topic], fromBeginning: options.fromBeginning });
    const eachBatch = Object.assign((payload: EachBatchPayload) => handle.eachBatch(payload), { [DELIVER_FILTERED]: true as const });
    handle.runArgs = { autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1, eachBatch };
    await consumer.run(handle.runArgs);
    return handle;
  }

  /** restartOnFailure as kafkajs asks it; the verdict is remembered so that the crash that follows is not judged twice. */
  private async judge(error: Error): Promise<boolean> {
    this.judged.add(error);
    return this.options.restartOnFailure!(error);
  }

  /**
   * kafkajs stopped the consumer (it has disconnected it). When kafkajs will
   * not restart it but the error is a broker that cannot be reached, ask
   * restartOnFailure and, if it says so, connect and run the same consumer
   * again; a failed relaunch is judged the same way.
   */
  private async crashed(error: Error, restarting: boolean): Promise<void> {
    let again = restarting;
    if (!restarting && !this.stopping && this.options.restartOnFailure && !this.judged.has(error) && isBrokerUnreachable(error)) {
      again = await this.options.restartOnFailure(error).catch(() => false);
      if (again && !this.stopping) this.relaunchTimer = setTimeout(() => (this.relaunching = this.relaunch()), RELAUNCH_DELAY_MS);
    }
    if (this.stopping && !restarting) return; // a stop is under way: its caller ends the consumer anyway
    this.options.onCrash?.(error, again);
  }

  /**
   * Connect and run again. A stop that arrives meanwhile waits for this a
   * little (RELAUNCH_STOP_WAIT_MS: a connect during an outage can retry for
   * minutes); whatever this starts after the stop, it stops itself.
   */
  private async relaunch(): Promise<void> {
    this.relaunchTimer = undefined;
    if (this.stopping) return;
    try {
      await this.consumer.connect();
      if (!this.stopping) await this.consumer.run(this.runArgs); // a join that fails again arrives as a crash event
      if (this.stopping) {
        await this.consumer.stop();
        await this.consumer.disconnect();
      }
    } catch (error) {
      await this.consumer.disconnect().catch(() => undefined);
      await this.crashed(error instanceof Error ? error : new Error(String(error)), false);
    } finally {
      this.relaunching = undefined;
    }
  }

  private get heartbeatMs(): number {
    return this.options.heartbeatInterval ?? 3_000;
  }

  private async eachBatch({ batch, heartbeat, isRunning, isStale, pause, resolveOffset }: EachBatchPayload): Promise<void> {
    const { topic, partition } = batch;
    if (this.parkedPartitions.has(`${topic}:${partition}`)) {
      // Fetched before the pause took effect, or after a consumer restart forgot it: pause (again), never fold past.
      pause();
      return;
    }
    // Stand-ins for an undecodable batch: fold what precedes them, then park at the first.
    const standIn = batch.messages.findIndex((m) => undecodableReason(m.value) !== undefined);
    const messages = standIn < 0 ? batch.messages : batch.messages.slice(0, standIn);
    const next = standIn < 0 ? batchEnd(batch) : BigInt(batch.messages[standIn]!.offset);
    if (messages.length > 0 || next > BigInt((batch as unknown as BatchInternals).fetchedOffset)) {
      const records: SourceRecord[] = messages.map((m) => ({ topic, partition, offset: m.offset, key: m.key, value: m.value, headers: m.headers, timestamp: m.timestamp }));
      // A batch held through an outage must not cost the group membership: heartbeat while it is handled.
      const keepAlive = setInterval(() => void heartbeat().catch(() => undefined), this.heartbeatMs);
      const seeksBefore = this.seeks.get(`${topic}:${partition}`) ?? 0;
      try {
        await this.options.onBatch(records, {
          topic,
          partition,
          highWatermark: batch.highWatermark,
          nextOffset: next.toString(),
          fetchedOffset: (batch as unknown as BatchInternals).fetchedOffset,
          heartbeat,
          stillOwned: () => isRunning() && !isStale(),
        });
      } finally {
        clearInterval(keepAlive);
      }
      // Sought meanwhile (by the handler or anyone): the seek says where the partition goes on, not this batch.
      if ((this.seeks.get(`${topic}:${partition}`) ?? 0) !== seeksBefore) return;
      resolveOffset((next - 1n).toString());
      const floor = this.commitFloors.get(`${topic}:${partition}`);
      const commit = { topic, partition, offset: (floor !== undefined && floor > next ? floor : next).toString() };
      if (this.options.commitInBackground) this.commits.commit(commit);
      else await this.consumer.commitOffsets([commit]);
    }
    if (standIn >= 0) {
      pause(); // this partition only: the fetches of the others go on
      const parked = { topic, partition, offset: next.toString(), reason: undecodableReason(batch.messages[standIn]!.value)! };
      this.parkedPartitions.set(`${topic}:${partition}`, parked);
      this.options.onPark?.({ ...parked });
    }
    await heartbeat();
  }

  /** Wait for the background commits in flight. */
  async flushCommits(): Promise<void> {
    await this.commits.flush();
  }

  /** A parked partition assigned elsewhere now: stop reporting it, and unpause it so that a later assignment fetches (and parks) again. */
  private releaseRevoked(assignment: Record<string, number[]>): void {
    for (const [key, parked] of this.parkedPartitions) {
      if (assignment[parked.topic]?.includes(parked.partition)) continue;
      this.parkedPartitions.delete(key);
      this.consumer.resume([{ topic: parked.topic, partitions: [parked.partition] }]);
      this.options.onUnpark?.({ ...parked });
    }
  }

  /** Stop fetching a partition until `resume` (the replay holds records fetched past its target; batches already fetched still arrive). */
  pause(topic: string, partition: number): void {
    this.consumer.pause([{ topic, partitions: [partition] }]);
  }

  /** Fetch a paused partition again; a parked one stays held at its undecodable batch. */
  resume(topic: string, partition: number): void {
    if (this.parkedPartitions.has(`${topic}:${partition}`)) return;
    this.consumer.resume([{ topic, partitions: [partition] }]);
  }

  /** Leave the group cleanly: the in-flight batch finishes (or is abandoned uncommitted). */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.relaunchTimer);
    if (this.relaunching !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.relaunching, new Promise<void>((resolve) => (timer = setTimeout(resolve, RELAUNCH_STOP_WAIT_MS)))]);
      clearTimeout(timer);
    }
    // Stop the runner first (the batches in flight finish), so the commits they leave are sent before leaving.
    if (this.options.commitInBackground) {
      await this.consumer.stop();
      await this.flushCommits();
    }
    await this.consumer.disconnect();
  }
}
