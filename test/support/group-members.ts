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

/** Wait until the group is stable with exactly `members` members (the broker's view; polled, never a fixed sleep). */
export async function waitForMembers(settings: Settings, members: number, timeoutMs = 120_000): Promise<void> {
  const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-members-watch" }).admin();
  await admin.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [group] = (await admin.describeGroups([settings.group])).groups;
      if (group?.state === "Stable" && group.members.length === members) return;
      if (Date.now() > deadline) throw new Error(`group ${settings.group} did not become stable with ${members} members in ${timeoutMs} ms (state ${group?.state}, ${group?.members.length ?? 0} members)`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await admin.disconnect();
  }
}
