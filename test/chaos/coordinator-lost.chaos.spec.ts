/**
 * The broker stops answering between a consumer's subscribe and its group
 * join (its process is SIGSTOPped, as a hung or restarting broker looks).
 * kafkajs asks every broker for the group coordinator, drops each one's error
 * (here a request timeout) and throws KafkaJSGroupCoordinatorNotFound, which
 * it deems final: before GroupConsumer relaunched such a consumer, a fold
 * worker joining at that moment exited. Now the outage policy is asked, the
 * consumer joins once the broker answers again, and it reads the topic.
 * Runs in the chaos tier: it freezes the shared broker.
 */
import kafkajs, { type Kafka } from "kafkajs";
import { afterAll, describe, expect, it } from "vitest";
import { GroupConsumer } from "../../src/adapters/kafka/consumer.js";
import { createKafka, kafkaConfig } from "../../src/adapters/kafka/client.js";
import { ensureTopics } from "../../src/adapters/kafka/topics.js";
import { servicePid } from "../support/services/pidfiles.js";
import { dropPrefix, testSettings } from "../support/pipeline.js";
import { until } from "../support/wait.js";

const { Kafka: KafkaClass } = kafkajs;
const settings = testSettings({ partitions: 1 });
afterAll(() => dropPrefix(settings));

const kafkaPid = () => servicePid("kafka");

describe("a broker that stops answering while a consumer joins", () => {
  it("KafkaJSGroupCoordinatorNotFound is ridden out: the consumer is started again and reads the topic", async () => {
    const setup = createKafka({ brokers: settings.brokers, clientId: "mufold-chaos-coordinator-setup" });
    const admin = setup.admin();
    await admin.connect();
    await ensureTopics(admin, [{ topic: settings.topic, partitions: 1 }]);
    await admin.disconnect();
    const producer = setup.producer();
    await producer.connect();
    await producer.send({ topic: settings.topic, messages: [{ key: "k", value: "after the freeze" }] });
    await producer.disconnect();

    // A short request timeout, so the join's coordinator lookup gives up on the frozen broker in seconds.
    const real = new KafkaClass({ ...kafkaConfig({ brokers: settings.brokers, clientId: "mufold-chaos-coordinator" }), requestTimeout: 3_000 });
    let frozen = false;
    const kafka = {
      consumer(config: Parameters<Kafka["consumer"]>[0]) {
        const consumer = real.consumer(config);
        const subscribe = consumer.subscribe;
        // Freeze the broker once the subscription's metadata is in and the consumer's connection to the broker
        // node is open (describeGroup looks the coordinator up through it): the next request is then the join's
        // lookup, whose timeout kafkajs drops, throwing KafkaJSGroupCoordinatorNotFound. Without that connection
        // the join would first connect to the node, and that connect's timeout escapes as a request timeout
        // (a CI run saw KafkaJSRequestTimeoutError): a retriable error, not the one this test is about.
        consumer.subscribe = async (subscription) => {
          await subscribe(subscription);
          await consumer.describeGroup();
          if (!frozen) {
            process.kill(kafkaPid(), "SIGSTOP");
            frozen = true;
          }
        };
        return consumer;
      },
    } as unknown as Kafka;

    const crashes: { name: string; restarting: boolean }[] = [];
    const read: string[] = [];
    let handle: GroupConsumer | undefined;
    try {
      handle = await GroupConsumer.start(kafka, {
        groupId: settings.group,
        topic: settings.topic,
        fromBeginning: true,
        onBatch: async (records) => void read.push(...records.map((r) => r.value?.toString() ?? "")),
        onCrash: (error, restarting) => crashes.push({ name: (error as Error).name, restarting }),
        restartOnFailure: async () => true, // the fold's policy within its outage tolerance
      });
      expect(frozen).toBe(true);
      // A join can first fail with a request timeout (a CI run saw one even with the connection open): kafkajs
      // deems that retriable and starts the consumer again itself, with its retries' backoff (a CI run right after
      // the chaos suite's broker restart waited past 60 s). The error this test is about is the final one.
      await until("the join to fail on the frozen broker with KafkaJSGroupCoordinatorNotFound", () => crashes.some((c) => c.name === "KafkaJSGroupCoordinatorNotFound"), 150_000).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; the crashes seen: ${JSON.stringify(crashes)}`);
      });
      expect(crashes.find((c) => c.name === "KafkaJSGroupCoordinatorNotFound")).toEqual({ name: "KafkaJSGroupCoordinatorNotFound", restarting: true });
      for (const crash of crashes) expect(crash.restarting, crash.name).toBe(true);
    } finally {
      if (frozen) process.kill(kafkaPid(), "SIGCONT");
    }
    await until("the record read after the broker answers again", () => read.length > 0, 120_000);
    expect(read).toEqual(["after the freeze"]);
    expect(handle!.joined).toBe(true);
    await handle!.stop();
  });
});
