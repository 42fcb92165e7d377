/**
 * Producing through a Kafka outage (openSender, which `mufold produce`,
 * `mufold simulate` and ObservationProducer send through): ridden out within
 * the retry budget (the kafkaRetries, kafkaInitialRetryTimeMs and
 * kafkaMaxRetryTimeMs settings), then one line and a typed, retriable
 * MufoldError naming the brokers and how long they were unreachable.
 *
 * The shared broker is never stopped. An outage after connecting is a gate in
 * the client's socket factory: it ends every open connection (as a stopping
 * broker's FIN does) and sends new ones to a port nothing listens on, until it
 * opens again. The client is the one openSender would make, with the gate added.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import kafkajs from "kafkajs";
import type { ISocketFactory } from "kafkajs";
import { afterEach, describe, expect, it } from "vitest";
import { KafkaUnavailableError, kafkaClientSettings, kafkaConfig, registerZstd } from "../../src/adapters/kafka/client.js";
import { ObservationProducer } from "../../src/client/producer.js";
import type { Settings } from "../../src/config/settings.js";
import { MufoldError } from "../../src/errors.js";
import { openSender } from "../../producers/produce.js";
import { observation } from "../support/fixtures.js";
import { freePort } from "../support/free-port.js";
import { testSettings } from "../support/pipeline.js";
import { until, waitFor } from "../support/wait.js";

const { Kafka } = kafkajs;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The client's way to the brokers, which the test can close and open again. */
class BrokerGate {
  private closed = false;
  /** Connections attempted while closed (each one refused). */
  refused = 0;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly deadPort: number) {}

  readonly socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    const socket = connect({ host, port: this.closed ? this.deadPort : port }, onConnect);
    if (this.closed) socket.once("error", () => this.refused++);
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
    return socket;
  };

  close(): void {
    this.closed = true;
    for (const socket of this.sockets) socket.end();
  }

  open(): void {
    this.closed = false;
  }
}

async function gatedSender(settings: Settings) {
  const gate = new BrokerGate(await freePort());
  registerZstd();
  const kafka = new Kafka({ ...kafkaConfig(kafkaClientSettings(settings, "-producer")), socketFactory: gate.socketFactory });
  const sender = await openSender(settings, kafka);
  cleanups.push(() => sender.close());
  return { gate, sender };
}

/**
 * Records on the topic (every partition's high watermark, summed), through a client of its own. A broker that
 * just created the topic may answer a retriable error (NOT_LEADER_FOR_PARTITION) for a moment: asked again then.
 */
async function recordCount(settings: Settings): Promise<number> {
  const admin = new Kafka(kafkaConfig(kafkaClientSettings(settings, "-test"))).admin();
  await admin.connect();
  try {
    return await waitFor("the broker to answer the topic's offsets", async () => {
      try {
        return (await admin.fetchTopicOffsets(settings.topic)).reduce((n, p) => n + Number(p.high), 0);
      } catch (err) {
        if ((err as { retriable?: unknown }).retriable !== true) throw err;
        return undefined;
      }
    }, 15_000, 100);
  } finally {
    await admin.disconnect();
  }
}

function dropTopics(settings: Settings): () => Promise<void> {
  return async () => {
    const admin = new Kafka(kafkaConfig(kafkaClientSettings(settings, "-test"))).admin();
    await admin.connect();
    try {
      await admin.deleteTopics({ topics: [settings.topic, `${settings.topic}.dlq`] });
    } finally {
      await admin.disconnect();
    }
  };
}

const record = (value: string) => ({ key: "agent:a/project:p/corpus:c/surface:s", value });

/** A budget of three retries 300 ms apart (kafkajs adds up to ±20 % to each). */
const SMALL_BUDGET = { kafkaRetries: 3, kafkaInitialRetryTimeMs: 300, kafkaMaxRetryTimeMs: 300 } as const;
const SMALL_BUDGET_ENV = { MUFOLD_KAFKA_RETRIES: "3", MUFOLD_KAFKA_INITIAL_RETRY_TIME_MS: "300", MUFOLD_KAFKA_MAX_RETRY_TIME_MS: "300" };
/** A guard against hanging only, far above the budget. */
const HANG_GUARD_MS = 15_000;

describe("a producer and a Kafka outage", () => {
  it("rides out an outage that ends within the retry budget: the send waits, then lands once", async () => {
    const settings = testSettings({ kafkaRetries: 8, kafkaInitialRetryTimeMs: 200, kafkaMaxRetryTimeMs: 1000 });
    cleanups.push(dropTopics(settings));
    const { gate, sender } = await gatedSender(settings);
    await sender.send([record("before")]);

    gate.close();
    let settled = false;
    const sending = sender.send([record("during")]).finally(() => (settled = true));
    await until("the producer to be refused twice", () => gate.refused >= 2, HANG_GUARD_MS);
    expect(settled).toBe(false); // still riding it out, not failed
    gate.open();

    await expect(sending).resolves.toBeUndefined();
    expect(await recordCount(settings)).toBe(2);
  });

  it("past the retry budget, a send fails with one line: a retriable KafkaUnavailableError naming the brokers and how long", async () => {
    const settings = testSettings(SMALL_BUDGET);
    cleanups.push(dropTopics(settings));
    const { gate, sender } = await gatedSender(settings);
    await sender.send([record("before")]);

    gate.close();
    const err = await sender.send([record("during")]).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(err).toBeInstanceOf(KafkaUnavailableError);
    const failure = err as KafkaUnavailableError;
    expect(failure.retriable).toBe(true);
    expect((failure.cause as Error).name).toMatch(/^KafkaJS/);
    expect(failure.message).not.toMatch(/\n/);
    const brokers = escape(settings.brokers.join(","));
    expect(failure.message).toMatch(new RegExp(`^Kafka at ${brokers} was unreachable for \\d+\\.\\d s, 3 retries spent \\(MUFOLD_KAFKA_RETRIES, backoff 300 ms up to 300 ms\\): .*ECONNREFUSED`));
    expect(gate.refused).toBeGreaterThanOrEqual(3); // it retried through the budget before giving up
    // Closing after the failure neither hangs nor replaces the error.
    await expect(sender.close()).resolves.toBeUndefined();
  });
});

describe("ObservationProducer and an unreachable bootstrap broker", () => {
  it("connect fails within its budget with one line naming the broker, nothing listening there", async () => {
    const port = await freePort();
    const err = await ObservationProducer.connect({ brokers: [`127.0.0.1:${port}`], env: SMALL_BUDGET_ENV }).then(
      async (p) => (await p.close(), undefined),
      (e: unknown) => e,
    );

    expect(err).toBeInstanceOf(MufoldError);
    expect(err).toBeInstanceOf(KafkaUnavailableError);
    const failure = err as MufoldError;
    expect(failure.retriable).toBe(true);
    expect(failure.cause).toBeInstanceOf(Error);
    expect(failure.message).not.toMatch(/\n/);
    expect(failure.message).toMatch(new RegExp(`^Kafka at 127\\.0\\.0\\.1:${port} was unreachable for \\d+\\.\\d s, 3 retries spent .*: Connection error: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}$`));
  });

  it("connect rides out a broker that drops its first connections (restarting), then publishes", async () => {
    const settings = testSettings();
    cleanups.push(dropTopics(settings));
    const [host, port] = settings.brokers[0]!.split(":") as [string, string];
    // The bootstrap address: drops the first two connections, then passes them to the real broker.
    let dropped = 0;
    const open = new Set<Socket>();
    const proxy: Server = createServer((client) => {
      open.add(client);
      client.once("close", () => open.delete(client));
      if (dropped < 2) {
        dropped++;
        client.resetAndDestroy();
        return;
      }
      const upstream = connect({ host, port: Number(port) });
      client.pipe(upstream).pipe(client);
      const end = () => (client.destroy(), upstream.destroy());
      client.on("error", end);
      upstream.on("error", end);
    });
    const proxyPort = await freePort();
    await new Promise<void>((resolve) => proxy.listen(proxyPort, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => (proxy.close(resolve), open.forEach((s) => s.destroy()))));

    const producer = await ObservationProducer.connect({ brokers: [`127.0.0.1:${proxyPort}`], topic: settings.topic, env: {} });
    cleanups.push(() => producer.close());
    expect(dropped).toBe(2);
    await producer.publish([observation()]);
    expect(await recordCount(settings)).toBe(1);
  });
});
