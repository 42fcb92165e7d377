/**
 * A consumer-group loop that hands each fetched batch to a handler and commits
 * the batch's offsets only after the handler resolves (after Redis has it).
 * A handler that throws leaves the offsets uncommitted: the batch is redelivered.
 */
import type { Consumer, Kafka } from "kafkajs";
import type { SourceRecord } from "../../../consumers/dlq.js";

export interface BatchContext {
  topic: string;
  partition: number;
  /** The partition's high watermark when the batch was fetched (for lag). */
  highWatermark: string;
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping or the partition was revoked. */
  stillOwned(): boolean;
}

export interface GroupConsumerOptions {
  groupId: string;
  topic: string;
  fromBeginning: boolean;
  onBatch(records: SourceRecord[], ctx: BatchContext): Promise<void>;
  onCrash?(error: unknown): void;
  maxWaitTimeInMs?: number;
  sessionTimeout?: number;
}

export class GroupConsumer {
  /** In the group with an assignment (false while rebalancing, crashed or stopped). */
  joined = false;
  /** When the coordinator last accepted a heartbeat (ms since epoch; 0 = never). */
  lastHeartbeat = 0;

  private constructor(
    private readonly consumer: Consumer,
    readonly groupId: string,
  ) {
    const { GROUP_JOIN, REBALANCING, CRASH, STOP, DISCONNECT, HEARTBEAT } = consumer.events;
    consumer.on(GROUP_JOIN, () => {
      this.joined = true;
      this.lastHeartbeat = Date.now();
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

  static async start(kafka: Kafka, options: GroupConsumerOptions): Promise<GroupConsumer> {
    const consumer = kafka.consumer({
      groupId: options.groupId,
      maxWaitTimeInMs: options.maxWaitTimeInMs ?? 100,
      sessionTimeout: options.sessionTimeout ?? 30_000,
      heartbeatInterval: 3_000,
      allowAutoTopicCreation: false,
      retry: { retries: 10 },
    });
    const handle = new GroupConsumer(consumer, options.groupId);
    if (options.onCrash) consumer.on(consumer.events.CRASH, (e) => options.onCrash!(e.payload.error));
    await consumer.connect();
    await consumer.subscribe({ topics: [options.topic], fromBeginning: options.fromBeginning });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, heartbeat, isRunning, isStale, resolveOffset }) => {
        if (batch.messages.length === 0) return;
        const records: SourceRecord[] = batch.messages.map((m) => ({
          topic: batch.topic,
          partition: batch.partition,
          offset: m.offset,
          key: m.key,
          value: m.value,
          headers: m.headers,
        }));
        await options.onBatch(records, {
          topic: batch.topic,
          partition: batch.partition,
          highWatermark: batch.highWatermark,
          heartbeat,
          stillOwned: () => isRunning() && !isStale(),
        });
        const last = batch.messages[batch.messages.length - 1]!.offset;
        resolveOffset(last);
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() }]);
        await heartbeat();
      },
    });
    return handle;
  }

  /** Leave the group cleanly: the in-flight batch finishes (or is abandoned uncommitted). */
  async stop(): Promise<void> {
    await this.consumer.disconnect();
  }
}
