/**
 * Compression codecs and undecodable batches, on the real broker and Redis:
 *  a. confluent-kafka (librdkafka) produces gzip, snappy, lz4 and zstd batches and
 *     kcat snappy and lz4 batches, each on its own partition; the log shows every
 *     batch carries its producer's codec (read with a raw Fetch), and a fold
 *     worker process folds every record exactly;
 *  b. a batch whose compressed payload is corrupt (an LZ4 frame with a wrong
 *     content checksum, which the broker stores as is) parks its partition: the
 *     other partitions keep folding exactly, the parked one is in the metric, the
 *     readiness check and one log line, and its committed offset stays at the bad
 *     batch.
 * Foreign clients come from scripts/setup-foreign.sh (a missing one fails the file).
 */
import { until } from "../support/wait.js";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { dlqTopic } from "../../src/fold/dead-letter.js";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { observationRecord } from "../../src/client/producer.js";
import { simulate } from "../../producers/simulation.js";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { ReliableProducer } from "../../src/adapters/kafka/producer.js";
import { groupOffsets, partitionOffsets } from "../../src/adapters/kafka/topics.js";
import type { Settings } from "../../src/config/settings.js";
import type { Observation } from "../../src/core/index.js";
import type { Logger } from "../../src/observability/log.js";
import { createFoldMetrics } from "../../src/observability/metrics.js";
import { recordsDecodedFast } from "../../src/adapters/kafka/record-decoder.js";
import { confluentBatches } from "../support/foreign/batches.js";
import { createTopics, deleteTopics, ensureForeignClients, run, type ForeignClients } from "../support/foreign/foreign.js";
import { batchHeaders, produceRawBatch } from "../support/kafka-raw.js";
import { comparePackets, dropPrefix, expectedPackets, readAllPackets, spawnWorker, stopWorker, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { encodeRecords, lz4StoredFrame, recordBatch } from "../support/record-batch.js";

const SCHEMA = "memory_utility_observation_v0";
const CODEC_ID = { gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;

let foreign: ForeignClients;
beforeAll(() => {
  foreign = ensureForeignClients();
});

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

function workload(seed: number, agents: number, perAgent: number): Observation[] {
  return [...simulate({ agents, observationsPerAgent: perAgent, duplicateRate: 0.15, conflictRate: 0.03, snapshotEvery: 10, seed })].map((d) => d.observation);
}

/** A test's settings and topics (created here); its Redis keys and topics are removed after it. */
async function isolated(partitions: number): Promise<Settings> {
  const settings = testSettings({ partitions });
  cleanups.push(() => dropPrefix(settings), () => deleteTopics(settings.brokers, [settings.topic, dlqTopic(settings.topic)]));
  await createTopics(settings.brokers, [
    { topic: settings.topic, partitions },
    { topic: dlqTopic(settings.topic), partitions },
  ]);
  return settings;
}

/** Split into `n` consecutive slices of near-equal size. */
function slices<T>(items: readonly T[], n: number): T[][] {
  return Array.from({ length: n }, (_, i) => items.slice(Math.floor((i * items.length) / n), Math.floor(((i + 1) * items.length) / n)));
}

async function offsets(settings: Settings): Promise<{ high: Map<number, bigint>; committed: Map<number, bigint> }> {
  const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-test-codecs" }).admin();
  await admin.connect();
  try {
    const high = new Map((await partitionOffsets(admin, settings.topic)).map((p) => [p.partition, p.high]));
    return { high, committed: await groupOffsets(admin, settings.group, settings.topic) };
  } finally {
    await admin.disconnect();
  }
}

interface LogEntry {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

/** A Logger that keeps every entry (child fields merged in). */
function capturingLog(entries: LogEntry[], base: Record<string, unknown> = {}): Logger {
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void entries.push({ level, msg, fields: { ...base, ...fields } });
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: (fields) => capturingLog(entries, { ...base, ...fields }) };
}

describe("compression codecs", () => {
  it("gzip, snappy, lz4 and zstd batches from confluent-kafka, snappy and lz4 from kcat: all fold exactly", async () => {
    const producers = [
      { name: "confluent-kafka gzip", codec: "gzip" },
      { name: "confluent-kafka snappy", codec: "snappy" },
      { name: "confluent-kafka lz4", codec: "lz4" },
      { name: "confluent-kafka zstd", codec: "zstd" },
      { name: "kcat snappy", codec: "snappy" },
      { name: "kcat lz4", codec: "lz4" },
    ] as const;
    const settings = await isolated(producers.length);
    const observations = workload(31, 12, 30);
    const parts = slices(observations, producers.length);

    // Producer i writes partition i, so the log tells which codec each producer's batches carry.
    const brokers = settings.brokers.join(",");
    for (const [i, p] of producers.entries()) {
      const lines = parts[i]!.map((o) => String(observationRecord(o).value));
      if (p.name.startsWith("kcat")) {
        const input = parts[i]!.map((o) => `${String(observationRecord(o).key)}\t${String(observationRecord(o).value)}\n`).join("");
        await run(foreign.kcat, ["-P", "-b", brokers, "-t", settings.topic, "-p", String(i), "-K", "\t", "-z", p.codec, "-X", "acks=all", "-H", `schema=${SCHEMA}`, "-H", "content-type=application/json"], { input });
      } else {
        expect(await confluentBatches(foreign, settings.brokers, settings.topic, { compression: p.codec, partition: i, transactionalId: null, groups: [{ commit: true, lines }] })).toBe(lines.length);
      }
    }
    const onLog = await Promise.all(producers.map((_, i) => batchHeaders(settings.brokers, settings.topic, i)));
    expect(onLog.map((batches) => batches.reduce((n, b) => n + b.count, 0))).toEqual(parts.map((s) => s.length));
    expect(onLog.map((batches) => [...new Set(batches.map((b) => b.codec))])).toEqual(producers.map((p) => [CODEC_ID[p.codec]]));

    const worker = spawnWorker(settings);
    cleanups.push(() => stopWorker(worker));
    await waitCaughtUp(settings);
    const packets = await readAllPackets(settings);
    expect(comparePackets(packets, expectedPackets(observations))).toEqual({ missing: [], extra: [], different: [] });
    expect(packets.size).toBeGreaterThan(10);
  });

  it("a batch that cannot be decoded parks its partition: the others fold on, and it is reported, never skipped", async () => {
    const settings = await isolated(3);
    const [before, after, p1First, p1Later, p2] = slices(workload(32, 10, 30), 5) as [Observation[], Observation[], Observation[], Observation[], Observation[]];
    const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-test-codecs" });
    const producer = await ReliableProducer.connect(kafka);
    cleanups.push(() => producer.disconnect());
    const onPartition = (obs: Observation[], partition: number) => obs.map((o) => ({ ...observationRecord(o), partition }));

    await producer.send(settings.topic, [...onPartition(before, 0), ...onPartition(p1First, 1), ...onPartition(p2, 2)]);
    // Two well-formed records in a stored LZ4 block whose content checksum is wrong: the broker takes it.
    const corrupt = lz4StoredFrame(encodeRecords(after.slice(0, 2).map((o) => ({ key: String(observationRecord(o).key), value: String(observationRecord(o).value), headers: { schema: SCHEMA } }))), { corruptChecksum: true });
    const badOffset = await produceRawBatch(settings.brokers, settings.topic, 0, recordBatch({ codec: CODEC_ID.lz4, count: 2, payload: corrupt }));
    expect(badOffset).toBe(BigInt(before.length));
    await producer.send(settings.topic, onPartition(after, 0));

    const entries: LogEntry[] = [];
    const metrics = createFoldMetrics({ defaultMetrics: false });
    const worker = await FoldWorker.start(settings, capturingLog(entries), metrics);
    cleanups.push(() => worker.stop());
    const caughtUpExceptParked = async () => {
      const { high, committed } = await offsets(settings);
      return committed.get(0) === badOffset && committed.get(1) === high.get(1) && committed.get(2) === high.get(2);
    };
    await until("partitions 1 and 2 folded to their ends, 0 up to the bad batch", caughtUpExceptParked, 90_000);
    await until("the park to be logged", async () => entries.some((e) => e.msg.startsWith("partition parked")), 90_000);

    // Partitions 1 keeps folding while 0 is parked.
    await producer.send(settings.topic, onPartition(p1Later, 1));
    await until("partition 1's new records folded", caughtUpExceptParked, 90_000);
    const packets = await readAllPackets(settings);
    expect(comparePackets(packets, expectedPackets([...before, ...p1First, ...p2, ...p1Later]))).toEqual({ missing: [], extra: [], different: [] });
    expect((await offsets(settings)).committed.get(0)).toBe(badOffset);

    const parkedLines = entries.filter((e) => e.msg.startsWith("partition parked"));
    expect(parkedLines).toHaveLength(1);
    expect(parkedLines[0]).toMatchObject({ level: "error", fields: { topic: settings.topic, partition: 0, offset: String(badOffset), reason: "lz4: content checksum mismatch" } });
    const readiness = worker.readinessChecks();
    expect(Object.keys(readiness)).toContain("parked");
    await expect(readiness.parked!()).rejects.toThrow(`${settings.topic}[0]@${badOffset} (lz4: content checksum mismatch)`);
    const gauge = await metrics.partitionsParked.get();
    expect(gauge.values.map((v) => [v.labels, v.value])).toEqual([[{ topic: settings.topic, partition: "0" }, 1]]);
    expect(worker.counters.deadLettered).toBe(0);
    // The records came through mufold's record decoder (consumer.ts installs it before any fetch), not kafkajs's.
    expect(recordsDecodedFast()).toBeGreaterThanOrEqual(before.length + p1First.length + p2.length + p1Later.length);
  });
});
