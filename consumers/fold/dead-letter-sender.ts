/**
 * A batch's rejected records to the DLQ topic, in the batch's order: produced
 * at least once (a retry may send a group again), riding out a broker outage
 * while the batch stays uncommitted. A record the broker refuses for good
 * (too large, not authorized) is not an outage: it ends the batch at once.
 */
import { isPermanentKafkaError } from "../../src/adapters/kafka/errors.js";
import type { BatchContext } from "../../src/adapters/kafka/consumer.js";
import type { ReliableProducer } from "../../src/adapters/kafka/producer.js";
import { inBatchOrder, type RoutedBatch } from "../../src/fold/batch-router.js";
import { dlqMessage, dlqSendGroups, dlqTopic } from "../../src/fold/dead-letter.js";
import type { SourceRecord } from "../../src/fold/source-record.js";
import type { Logger } from "../../src/observability/log.js";
import { errorText, heartbeatOrYield, sleep } from "./batch-hold.js";
import type { OutageClock } from "./outage.js";

export class DeadLetterSender {
  private readonly topic: string;

  constructor(
    private readonly producer: ReliableProducer,
    sourceTopic: string,
    /** Record bytes one dead-letter batch may carry (from the DLQ topic's max.message.bytes). */
    private readonly budget: number,
    private readonly outages: OutageClock,
    private readonly log: Logger,
    private readonly stopping: () => boolean,
  ) {
    this.topic = dlqTopic(sourceTopic);
  }

  /** Send `decided` (in the order of `records`); returns each sent record's reason, to count. */
  async send(decided: RoutedBatch["rejected"], records: readonly SourceRecord[], ctx: BatchContext): Promise<string[]> {
    if (decided.length === 0) return [];
    const rejected = inBatchOrder(decided, records); // the waves went key by key
    const messages = dlqSendGroups(rejected.map((r) => dlqMessage(r.record, r.reason, r.detail, this.budget)), this.budget);
    for (let attempt = 1; ; attempt++) {
      try {
        for (const group of messages) await this.producer.send(this.topic, group);
        this.outages.recovered("kafka");
        return rejected.map((r) => r.reason);
      } catch (error) {
        // The producer already retried; a broker outage can outlast that.
        if (isPermanentKafkaError(error)) throw error;
        this.outages.failed("kafka", error);
        if (!ctx.stillOwned() || this.stopping()) throw error;
        this.log.warn("dead-letter produce failed; retrying", { error: errorText(error), attempt });
        await heartbeatOrYield(ctx);
        await sleep(Math.min(5_000, 500 * attempt));
      }
    }
  }
}
