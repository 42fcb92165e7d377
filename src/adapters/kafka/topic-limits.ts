/**
 * The DLQ topic's record limit as the broker states it (DescribeConfigs), and the
 * dead-letter budget it leaves (src/fold/dead-letter.ts does the arithmetic).
 */
import kafkajs from "kafkajs";
import type { Admin } from "kafkajs";
import { MufoldError } from "../../errors.js";
import { dlqBudget, MIN_DLQ_BUDGET } from "../../fold/dead-letter.js";

const { ConfigResourceTypes } = kafkajs;

async function configValue(admin: Admin, type: number, name: string, config: string): Promise<number | undefined> {
  const result = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type, name, configNames: [config] }] });
  const value = result.resources[0]?.configEntries.find((e) => e.configName === config)?.configValue;
  const n = Number(value);
  return value !== undefined && value !== null && Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/**
 * The DLQ topic's effective max.message.bytes (the topic's own, or the broker default it
 * inherits), falling back to the smallest message.max.bytes of the brokers; and the
 * record-byte budget it leaves. Throws when neither can be read or the limit is too small
 * for a pointer.
 */
export async function dlqLimits(admin: Admin, topic: string): Promise<{ maxMessageBytes: number; source: string; budget: number }> {
  let found: { maxMessageBytes: number; source: string } | undefined;
  let topicError: unknown;
  try {
    const n = await configValue(admin, ConfigResourceTypes.TOPIC, topic, "max.message.bytes");
    if (n !== undefined) found = { maxMessageBytes: n, source: `max.message.bytes of topic ${topic}` };
  } catch (err) {
    topicError = err;
  }
  if (found === undefined) {
    const { brokers } = await admin.describeCluster();
    const values: number[] = [];
    for (const b of brokers) {
      const n = await configValue(admin, ConfigResourceTypes.BROKER, String(b.nodeId), "message.max.bytes").catch(() => undefined);
      if (n !== undefined) values.push(n);
    }
    if (values.length > 0) found = { maxMessageBytes: Math.min(...values), source: "message.max.bytes of the brokers" };
  }
  if (found === undefined) {
    throw new MufoldError(
      `cannot read max.message.bytes of ${topic} (nor the brokers' message.max.bytes): grant DescribeConfigs on the topic` +
        (topicError instanceof Error ? ` (${topicError.message})` : ""),
      { cause: topicError },
    );
  }
  const budget = dlqBudget(found.maxMessageBytes);
  if (budget < MIN_DLQ_BUDGET) {
    throw new MufoldError(`${found.source} is ${found.maxMessageBytes}: it leaves ${budget} bytes for a dead letter, under the ${MIN_DLQ_BUDGET} its pointer headers may need`);
  }
  return { ...found, budget };
}
