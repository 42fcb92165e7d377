/**
 * The broker stops answering between a consumer's subscribe and its group
 * join (its process is SIGSTOPped, as a hung or restarting broker looks).
 * kafkajs asks every broker for the group coordinator, drops each one's error
 * (here a request timeout) and throws KafkaJSGroupCoordinatorNotFound, which
 * it deems final: before GroupConsumer relaunched such a consumer, a fold
 * worker joining at that moment exited. Now the outage policy is asked, the
 * consumer joins once the broker answers again, and it reads the topic.
 * Runs in the chaos tier: it freezes the shared broker.
 *
 * Which error a frozen join ends in is kafkajs's timing: CI runs saw joins
 * fail with KafkaJSRequestTimeoutError instead, which kafkajs deems retriable
 * and restarts itself, and one such loop went on for 150 s. So the scenario is
 * tried afresh (a new group, the broker answering between tries) until a try
 * meets the error this test is about, at most ATTEMPTS times; a run in which
 * none does fails, naming what each try met.
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

/** Tries of the scenario; each waits this long for the join to fail with the error under test. */
const ATTEMPTS = 3;
const ATTEMPT_WAIT_MS = 45_000;

interface Crash {
  name: string;
  restarting: boolean;
}

/**
 * One try: subscribe, open the connection to the broker node, freeze the broker, and join. Returns the crashes seen
 * and, when one was KafkaJSGroupCoordinatorNotFound, the consumer (the broker answering again), else null after
 * stopping it.
 */
async function joinWhileFrozen(groupId: string, read: string[]): Promise<{ crashes: Crash[]; handle: GroupConsumer | null }> {
  // A short request timeout, so the join's coordinator lookup gives up on the frozen broker in seconds.
  const real = new KafkaClass({ ...kafkaConfig({ brokers: settings.brokers, clientId: "mufold-chaos-coordinator" }), requestTimeout: 3_000 });
  let frozen = false;
  const kafka = {
    consumer(config: Parameters<Kafka["consumer"]>[0]) {
      const consumer = real.consumer(config);
      const subscribe = consumer.subscribe;
      // Freeze the broker once the subscription's metadata is in and the consumer's connection to the broker
      // node is open (describeGroup looks the coordinator up through it): the next request is then, most often,
      // the join's lookup, whose timeout kafkajs drops, throwing KafkaJSGroupCoordinatorNotFound.
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

  const crashes: Crash[] = [];
  let handle: GroupConsumer | undefined;
  let met = false;
  try {
    handle = await GroupConsumer.start(kafka, {
      groupId,
      topic: settings.topic,
      fromBeginning: true,
      onBatch: async (records) => void read.push(...records.map((r) => r.value?.toString() ?? "")),
      onCrash: (error, restarting) => crashes.push({ name: (error as Error).name, restarting }),
      restartOnFailure: async () => true, // the fold's policy within its outage tolerance
    });
    expect(frozen).toBe(true);
    met = await until("the join to fail on the frozen broker with KafkaJSGroupCoordinatorNotFound", () => crashes.some((c) => c.name === "KafkaJSGroupCoordinatorNotFound"), ATTEMPT_WAIT_MS).then(
      () => true,
      () => false,
    );
  } finally {
    if (frozen) process.kill(kafkaPid(), "SIGCONT");
  }
  if (met) return { crashes, handle: handle! };
  await handle?.stop();
  return { crashes, handle: null };
}

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

    const tries: Crash[][] = [];
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const read: string[] = [];
      const { crashes, handle } = await joinWhileFrozen(`${settings.group}-${attempt}`, read);
      tries.push(crashes);
      // Whatever a frozen join fails with, the consumer is started again: no crash of any try may be final.
      for (const crash of crashes) expect(crash.restarting, crash.name).toBe(true);
      if (handle === null) continue; // this try's joins failed otherwise (above): the broker answers again, try anew
      expect(crashes.find((c) => c.name === "KafkaJSGroupCoordinatorNotFound")).toEqual({ name: "KafkaJSGroupCoordinatorNotFound", restarting: true });
      await until("the record read after the broker answers again", () => read.length > 0, 120_000);
      expect(read).toEqual(["after the freeze"]);
      expect(handle.joined).toBe(true);
      await handle.stop();
      return;
    }
    throw new Error(`no try met KafkaJSGroupCoordinatorNotFound in ${ATTEMPT_WAIT_MS / 1000} s; the crashes each saw: ${JSON.stringify(tries)}`);
  });
});
