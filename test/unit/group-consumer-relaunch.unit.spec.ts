/**
 * GroupConsumer after kafkajs stops a consumer on an error. kafkajs restarts it
 * only for errors it deems retriable; a group coordinator that no broker
 * answered for (every broker refusing during an outage) ends in
 * KafkaJSGroupCoordinatorNotFound, which it deems final, and a fold worker
 * joining at that moment exited. The consumer here is a stand-in that does
 * what kafkajs 2.2.4's consumer does on a failed join (ask restartOnFailure
 * only for a retriable error, disconnect, then emit CRASH with its verdict);
 * what is tested is GroupConsumer's answer. Timers are faked: "after 60 s"
 * means well past the relaunch delay.
 */
import { EventEmitter } from "node:events";
import kafkajs, { type Kafka } from "kafkajs";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { GroupConsumer } from "../../src/adapters/kafka/consumer.js";

const { KafkaJSConnectionError, KafkaJSGroupCoordinatorNotFound, KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded } = kafkajs;
// kafkajs's typings declare no constructor arguments; kafkajs passes the message (cluster/index.js).
const coordinatorNotFound = () => new (KafkaJSGroupCoordinatorNotFound as unknown as new (message: string) => Error)("Failed to find group coordinator");
const refused = () =>
  new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError("Connection error: connect ECONNREFUSED 127.0.0.1:9092", { broker: "127.0.0.1:9092" }), { retryCount: 5, retryTime: 1000 });
const EVENTS = { GROUP_JOIN: "join", REBALANCING: "rebalancing", CRASH: "crash", STOP: "stop", DISCONNECT: "disconnect", HEARTBEAT: "heartbeat" };

type ConnectStep = Error | Promise<void>;

/** A kafkajs consumer stand-in: `connect` and `run` follow scripts; an unscripted run joins. */
class ScriptedConsumer extends EventEmitter {
  readonly events = EVENTS;
  connects = 0;
  disconnects = 0;
  stops = 0;
  runs: unknown[] = [];
  config: { retry: { restartOnFailure?(e: Error): Promise<boolean> } } | undefined;
  constructor(
    /** Per run: the error its join fails with (and whether kafkajs deems it retriable). */
    private readonly crashes: { error: Error; retriable: boolean }[],
    /** Per connect after the first: throw this error, or wait for this promise. */
    private readonly connectSteps: ConnectStep[] = [],
  ) {
    super();
  }
  async connect() {
    this.connects += 1;
    if (this.connects === 1) return;
    const step = this.connectSteps.shift();
    if (step instanceof Error) throw step;
    await step;
  }
  async subscribe() {}
  async run(args: unknown) {
    this.runs.push(args);
    const next = this.crashes.shift();
    if (next === undefined) return void this.emit(EVENTS.GROUP_JOIN, { payload: { memberAssignment: {} } });
    // kafkajs: restartOnFailure is asked only for a retriable error; the consumer is disconnected before CRASH.
    const restart = next.retriable && (await (this.config!.retry.restartOnFailure?.(next.error) ?? true));
    this.disconnects += 1;
    this.emit(EVENTS.CRASH, { payload: { error: next.error, groupId: "g", restart } });
  }
  async stop() {
    this.stops += 1;
  }
  async disconnect() {
    this.disconnects += 1;
  }
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

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("GroupConsumer after a crash kafkajs will not restart", () => {
  it("a coordinator found on no broker is asked about, and the same consumer joins again with the same handler", async () => {
    const lost = coordinatorNotFound();
    const consumer = new ScriptedConsumer([{ error: lost, retriable: false }]);
    const { started, crashes, asked } = start(consumer, async () => true);
    const handle = await started;
    await vi.advanceTimersByTimeAsync(0);
    expect(asked).toEqual([lost]);
    expect(crashes).toEqual([{ error: lost, restarting: true }]);
    expect(consumer.runs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(consumer.connects).toBe(2);
    expect(consumer.runs).toHaveLength(2);
    expect(consumer.runs[1]).toBe(consumer.runs[0]);
    expect(handle.joined).toBe(true);
    await handle.stop();
  });

  it("past the outage tolerance (restartOnFailure says no) the crash is final", async () => {
    const lost = coordinatorNotFound();
    const consumer = new ScriptedConsumer([{ error: lost, retriable: false }]);
    const { started, crashes, asked } = start(consumer, async () => false);
    await started;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(asked).toEqual([lost]);
    expect(crashes).toEqual([{ error: lost, restarting: false }]);
    expect(consumer.runs).toHaveLength(1);
    expect(consumer.connects).toBe(1);
  });

  it("a refusal for good is not asked about and not relaunched", async () => {
    const denied = new KafkaJSNonRetriableError("Not authorized to access topics: [t]");
    const consumer = new ScriptedConsumer([{ error: denied, retriable: false }]);
    const { started, crashes, asked } = start(consumer, async () => true);
    await started;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(asked).toEqual([]);
    expect(crashes).toEqual([{ error: denied, restarting: false }]);
    expect(consumer.runs).toHaveLength(1);
  });

  it("the verdict restartOnFailure gave kafkajs on a retriable error stands: not asked twice, not relaunched", async () => {
    const down = refused();
    const consumer = new ScriptedConsumer([{ error: down, retriable: true }]);
    const { started, crashes, asked } = start(consumer, async () => false);
    await started;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(asked).toEqual([down]);
    expect(crashes).toEqual([{ error: down, restarting: false }]);
    expect(consumer.runs).toHaveLength(1);
  });

  it("a relaunch whose connect fails is asked about again and tried again", async () => {
    const lost = coordinatorNotFound();
    const down = refused();
    const consumer = new ScriptedConsumer([{ error: lost, retriable: false }], [down]);
    const { started, crashes, asked } = start(consumer, async () => true);
    const handle = await started;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(asked).toEqual([lost, down]);
    expect(crashes).toEqual([
      { error: lost, restarting: true },
      { error: down, restarting: true },
    ]);
    expect(consumer.connects).toBe(3);
    expect(consumer.runs).toHaveLength(2);
    expect(handle.joined).toBe(true);
    await handle.stop();
  });

  it("a stop while the relaunch waits cancels it", async () => {
    const lost = coordinatorNotFound();
    const consumer = new ScriptedConsumer([{ error: lost, retriable: false }]);
    const { started, crashes } = start(consumer, async () => true);
    const handle = await started;
    await vi.advanceTimersByTimeAsync(0);
    expect(crashes).toEqual([{ error: lost, restarting: true }]);
    await handle.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(consumer.runs).toHaveLength(1);
    expect(consumer.connects).toBe(1);
  });

  it("a stop while the relaunch connects: no join after the stop, the connection is closed, no crash reported", async () => {
    const lost = coordinatorNotFound();
    let connected!: () => void;
    const slowConnect = new Promise<void>((resolve) => (connected = resolve));
    const consumer = new ScriptedConsumer([{ error: lost, retriable: false }], [slowConnect]);
    const { started, crashes } = start(consumer, async () => true);
    const handle = await started;
    await vi.advanceTimersByTimeAsync(1_500); // the relaunch is connecting
    expect(consumer.connects).toBe(2);
    const stopped = handle.stop();
    await vi.advanceTimersByTimeAsync(10_000); // past the wait a stop grants a relaunch
    await stopped;
    const disconnectsAtStop = consumer.disconnects;
    connected();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(consumer.runs).toHaveLength(1);
    expect(consumer.disconnects).toBeGreaterThan(disconnectsAtStop);
    expect(crashes).toEqual([{ error: lost, restarting: true }]);
  });
});
