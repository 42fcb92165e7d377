/** Members of a consumer group that tests put there on purpose. */
import type { Consumer } from "kafkajs";
import { createKafka } from "../../src/adapters/kafka/client.js";
import type { Settings } from "../../src/config/settings.js";

/**
 * A member of the fold group that takes partitions and never acknowledges a
 * promote's pause (it folds nothing: every partition paused): it holds a
 * promote inside its pause for as long as it stays.
 */
export async function pausedMember(settings: Settings, clientId: string): Promise<Consumer> {
  const consumer = createKafka({ brokers: settings.brokers, clientId }).consumer({ groupId: settings.group, sessionTimeout: 10_000, heartbeatInterval: 1_000 });
  await consumer.connect();
  await consumer.subscribe({ topic: settings.topic, fromBeginning: true });
  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: async () => undefined });
  consumer.pause([{ topic: settings.topic }]);
  return consumer;
}
