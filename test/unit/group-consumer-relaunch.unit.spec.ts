/**
 * GroupConsumer after kafkajs stops a consumer on an error. kafkajs restarts it
 * only for errors it deems retriable; a group coordinator that no broker
 * answered for (every broker refusing during an outage) ends in
 * KafkaJSGroupCoordinatorNotFound, which it deems final, and a fold worker
 * joining at that moment exited. The consumer here is a stand-in that does
 * what kafkajs's consumer does on a crash (disconnect, then the CRASH event
 * with its restart verdict); what is tested is GroupConsumer's answer.
 */
import { EventEmitter } from "node:events";
import kafkajs, { type Kafka } from "kafkajs";
import { describe, expect, it, vi } from "vitest";
import { GroupConsumer } from "../../src/adapters/kafka/consumer.js";
import { until } from "../support/wait.js";

const { KafkaJSGroupCoordinatorNotFound, KafkaJSNonRetriableError } = kafkajs;
// kafkajs's typings declare no constructor arguments; kafkajs passes the message (cluster/index.js).
const coordinatorNotFound = () => new (KafkaJSGroupCoordinatorNotFound as unknown as new (message: string) => Error)("Failed to find group coordinator");
const EVENTS = { GROUP_JOIN: "join", REBALANCING: "rebalancing", CRASH: "crash", STOP: "stop", DISCONNECT: "disconnect", HEARTBEAT: "heartbeat" };

/** A kafkajs consumer stand-in: `run` crashes with the next scripted error, if any, as kafkajs reports a failed join. */
class ScriptedConsumer extends EventEmitter {
  readonly events = EVENTS;
  connects = 0;
  runs: unknown[] = [];
  config: { retry: { restartOnFailure?(e: Error): Promise<boolean> } } | undefined;
  constructor(private readonly crashes: { error: Error; kafkajsRestarts: boolean }[]) {
    super();
  }
  async connect() {
    this.connects += 1;
  }
  async subscribe() {}
  async run(args: unknown) {
    this.runs.push(args);
    const next = this.crashes.shift();
    if (next === undefined) return void this.emit(EVENTS.GROUP_JOIN, { payload: { memberAssignment: {} } });
    // kafkajs: ask restartOnFailure only for errors it deems retriable, disconnect, then report.
    const restart = next.kafkajsRestarts && (await (this.config!.retry.restartOnFailure?.(next.error) ?? true));
    this.emit(EVENTS.CRASH, { payload: { error: next.error, groupId: "g", restart } });
  }
  async stop() {}
  async disconnect() {}
}

function start(consumer: ScriptedConsumer, restartOnFailure: (e: Error) => Promise<boolean>) {
  const crashes: { error: unknown; restarting: boolean }[] = [];
  const asked: Error[] = [];
  const kafka = {
    consumer(config: ScriptedConsumer["config"]) {
      consumer.config = config;
      return consumer;
    },
  } as unknown as Kafka;
  const started = GroupConsumer.start(kafka, {
    groupId: "g",
    topic: "t",
    fromBeginning: true,
    onBatch: async () => undefined,
    onCrash: (error, restarting) => crashes.push({ error, restarting }),
    restartOnFailure: (e) => (asked.push(e), restartOnFailure(e)),
  });
  return { started, crashes, asked };
}

describe("GroupConsumer after a crash kafkajs will not restart", () => {
  it("a coordinator found on no broker is asked about, and the same consumer joins again with the same handler", async () => {
    const lost = coordinatorNotFound();
    const consumer = new ScriptedConsumer([{ error: lost, kafkajsRestarts: false }]);
    const { started, crashes, asked } = start(consumer, async () => true);
    const handle = await started;
    await until("the consumer ran again", () => consumer.runs.length === 2, 10_000);
    expect(asked).toEqual([lost]);
    expect(crashes).toEqual([{ error: lost, restarting: true }]);
    expect(consumer.connects).toBe(2);
    expect(consumer.runs[1]).toBe(consumer.runs[0]);
    await until("joined", () => handle.joined, 10_000);
    await handle.stop();
  });

  it("past the outage tolerance (restartOnFailure says no) the crash is final", async () => {
    const lost = coordinatorNotFound();
    const consumer = new ScriptedConsumer([{ error: lost, kafkajsRestarts: false }]);
    const { started, crashes } = start(consumer, async () => false);
    await started;
    await until("the crash reported", () => crashes.length === 1, 10_000);
    expect(crashes).toEqual([{ error: lost, restarting: false }]);
    expect(consumer.runs).toHaveLength(1);
  });

  it("a refusal for good is not asked about and not relaunched", async () => {
    const denied = new KafkaJSNonRetriableError("Not authorized to access group: g");
    const consumer = new ScriptedConsumer([{ error: denied, kafkajsRestarts: false }]);
    const { started, crashes, asked } = start(consumer, async () => true);
    await started;
    await until("the crash reported", () => crashes.length === 1, 10_000);
    expect(asked).toEqual([]);
    expect(crashes).toEqual([{ error: denied, restarting: false }]);
    expect(consumer.runs).toHaveLength(1);
  });

  it("a verdict restartOnFailure gave kafkajs stands: not asked twice, not relaunched", async () => {
    const lost = coordinatorNotFound();
    const consumer = new ScriptedConsumer([{ error: lost, kafkajsRestarts: true }]);
    const { started, crashes, asked } = start(consumer, async () => false);
    await started;
    await until("the crash reported", () => crashes.length === 1, 10_000);
    expect(asked).toEqual([lost]);
    expect(crashes).toEqual([{ error: lost, restarting: false }]);
    expect(consumer.runs).toHaveLength(1);
  });

  it("a stop while the relaunch waits cancels it", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const lost = coordinatorNotFound();
      const consumer = new ScriptedConsumer([{ error: lost, kafkajsRestarts: false }]);
      const { started, crashes } = start(consumer, async () => true);
      const handle = await started;
      await vi.advanceTimersByTimeAsync(0);
      expect(crashes).toEqual([{ error: lost, restarting: true }]);
      await handle.stop();
      await vi.advanceTimersByTimeAsync(60_000);
      expect(consumer.runs).toHaveLength(1);
      expect(consumer.connects).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
