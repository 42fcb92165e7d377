/**
 * Foreign clients against mufold, on the real broker and Redis:
 *  a. confluent-kafka (librdkafka) produces zstd batches: with partitioner=murmur2_random
 *     every key lands where kafkajs's default partitioner puts it, and with
 *     librdkafka's default partitioner the fold is still exact;
 *  b. kcat produces (zstd, headers) and mufold folds exactly; kcat reads back, byte for
 *     byte, the zstd records mufold's producer wrote;
 *  c. redis-py reads every packet with FCALL_RO, computing the keys itself, and the
 *     reference (loopx) readback validator accepts each one.
 * The clients come from scripts/setup-foreign.sh (run here; a missing prerequisite
 * fails the file, it is never skipped).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { dlqTopic } from "../../src/fold/dead-letter.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import type { Settings } from "../../src/config/settings.js";
import type { Observation } from "../../src/core/index.js";
import { comparePackets, dropPrefix, expectedPackets, quietLog, readAllPackets, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { recordsEncodedFast } from "../../src/adapters/kafka/record-encoder.js";
import {
  confluentProduce,
  consumeAll,
  createTopics,
  deleteTopics,
  ensureForeignClients,
  kafkajsPartition,
  readAndValidateInPython,
  recordCount,
  run,
  trackZstd,
  type ForeignClients,
  type ZstdCounter,
} from "../support/foreign/foreign.js";

const SCHEMA = "memory_utility_observation_v0";

let foreign: ForeignClients;
let zstd: ZstdCounter;

beforeAll(() => {
  foreign = ensureForeignClients();
  zstd = trackZstd();
});
afterAll(() => zstd?.restore());

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

function workload(seed: number, agents: number, perAgent: number): Observation[] {
  return [...simulate({ agents, observationsPerAgent: perAgent, duplicateRate: 0.15, conflictRate: 0.03, snapshotEvery: 10, seed })].map((d) => d.observation);
}

/** A test's settings; its Redis keys and topics are removed after it. */
function isolated(overrides: Partial<Settings> = {}, extraTopics: string[] = []): Settings {
  const settings = testSettings(overrides);
  const topics = [settings.topic, ...extraTopics].flatMap((t) => [t, dlqTopic(t)]);
  cleanups.push(() => dropPrefix(settings), () => deleteTopics(settings.brokers, topics));
  return settings;
}

async function fold(settings: Settings): Promise<FoldWorker> {
  const worker = await FoldWorker.start(settings, quietLog);
  cleanups.push(() => worker.stop());
  await waitCaughtUp(settings);
  return worker;
}

async function expectExact(settings: Settings, observations: Observation[]): Promise<Map<string, string>> {
  const packets = await readAllPackets(settings);
  expect(comparePackets(packets, expectedPackets(observations))).toEqual({ missing: [], extra: [], different: [] });
  return packets;
}

describe("foreign clients: confluent-kafka, kcat, redis-py + loopx", () => {
  it("confluent-kafka (zstd): murmur2_random puts every key where kafkajs does; consistent_random records fold exactly", async () => {
    const partitionTopicName = (s: string) => `${s}.partitions`;
    const probe = testSettings();
    const settings = isolated({ topic: probe.topic, group: probe.group, prefix: probe.prefix, partitions: 6 }, [partitionTopicName(probe.topic)]);
    const observations = workload(21, 10, 24);
    const messages = observations.map(observationRecord);

    // (i) The same keys from both clients, on a 16-partition topic: scope keys of the
    // workload, plus synthetic ones (non-ASCII, long, short) for coverage of the hash.
    const partitions = 16;
    const partitionTopic = partitionTopicName(settings.topic);
    const keys = [
      ...new Set([
        ...messages.map((m) => String(m.key)),
        ...Array.from({ length: 150 }, (_, i) => `agent:${i}/project:${i % 7}/corpus:${i % 3}/surface:issue_fix`),
        ...Array.from({ length: 30 }, (_, i) => `agënt:ü${i}/projet:é${i % 4}/corpus:✓/surface:日本${i}`),
        ...Array.from({ length: 10 }, (_, i) => `${"a".repeat(100 + i * 37)}/p/c/s`),
        "a",
        "ab",
        "abc",
        "abcd",
        "a/b/c/d",
        "", // an empty (not null) key is hashed by both, not spread at random
      ]),
    ];
    await produce({ ...settings, topic: partitionTopic, partitions }, keys.map((key, i) => ({ key, value: JSON.stringify({ i }), headers: { producer: "kafkajs" } })));
    const reports = await confluentProduce(foreign, {
      brokers: settings.brokers,
      topic: partitionTopic,
      partitioner: "murmur2_random",
      input: { mode: "records", records: keys.map((key, i) => ({ key, value: JSON.stringify({ i }), headers: { producer: "confluent-kafka" } })) },
    });
    expect(reports).toHaveLength(keys.length);
    const readBack = await consumeAll(settings.brokers, partitionTopic, `${settings.group}.readback`, 2 * keys.length);
    const landed = new Map<string, { kafkajs: Set<number>; confluent: Set<number> }>();
    for (const r of readBack) {
      const entry = landed.get(r.key!) ?? { kafkajs: new Set<number>(), confluent: new Set<number>() };
      landed.set(r.key!, entry);
      (r.headers.producer === "kafkajs" ? entry.kafkajs : entry.confluent).add(r.partition);
    }
    const disagreements = keys.flatMap((key, i) => {
      const expected = kafkajsPartition(key, partitions);
      const got = landed.get(key);
      const kj = [...(got?.kafkajs ?? [])];
      const ck = [...(got?.confluent ?? [])];
      return kj.length === 1 && kj[0] === expected && ck.length === 1 && ck[0] === expected && reports[i]!.partition === expected ? [] : [{ key, expected, kafkajs: kj, confluent: ck, reported: reports[i]!.partition }];
    });
    expect(disagreements).toEqual([]);
    expect(new Set(reports.map((r) => r.partition)).size).toBe(partitions); // the keys reach every partition

    // (ii) librdkafka's default partitioner (consistent_random, CRC32): records land
    // where kafkajs would not put them, and the fold is still exact. The Python side
    // computes each key from the observation's scope.
    await createTopics(settings.brokers, [
      { topic: settings.topic, partitions: settings.partitions },
      { topic: dlqTopic(settings.topic), partitions: settings.partitions },
    ]);
    const delivered = await confluentProduce(foreign, { brokers: settings.brokers, topic: settings.topic, input: { mode: "observations", lines: messages.map((m) => String(m.value)) } });
    expect(delivered.map((d) => d.key)).toEqual(messages.map((m) => m.key));
    const elsewhere = new Set(delivered.filter((d) => d.partition !== kafkajsPartition(d.key!, settings.partitions)).map((d) => d.key));
    expect(elsewhere.size).toBeGreaterThan(0);

    const decompressedBefore = zstd.decompressed;
    const worker = await fold(settings);
    expect(zstd.decompressed).toBeGreaterThan(decompressedBefore); // librdkafka's zstd batches, through @mongodb-js/zstd
    expect(worker.counters).toMatchObject({ consumed: observations.length, deadLettered: 0 });
    const packets = await expectExact(settings, observations);
    expect(packets.size).toBeGreaterThan(10);
  });

  it("kcat: its zstd records (with headers) fold exactly, and it reads mufold's zstd records back byte for byte", async () => {
    const probe = testSettings();
    const fromMufold = `${probe.topic}.from-mufold`;
    const settings = isolated({ topic: probe.topic, group: probe.group, prefix: probe.prefix }, [fromMufold]);
    const observations = workload(22, 8, 24);
    const messages = observations.map(observationRecord);
    const brokers = settings.brokers.join(",");

    // kcat → mufold. Canonical JSON has no raw TAB or newline, and keys are refs.
    await createTopics(settings.brokers, [
      { topic: settings.topic, partitions: settings.partitions },
      { topic: dlqTopic(settings.topic), partitions: settings.partitions },
    ]);
    const lines = messages.map((m) => `${String(m.key)}\t${String(m.value)}\n`).join("");
    await run(foreign.kcat, ["-P", "-b", brokers, "-t", settings.topic, "-K", "\t", "-z", "zstd", "-X", "acks=all", "-H", `schema=${SCHEMA}`, "-H", "content-type=application/json"], { input: lines });
    expect(await recordCount(settings.brokers, settings.topic)).toBe(BigInt(observations.length));
    const decompressedBefore = zstd.decompressed;
    const worker = await fold(settings);
    expect(zstd.decompressed).toBeGreaterThan(decompressedBefore);
    expect(worker.counters).toMatchObject({ consumed: observations.length, deadLettered: 0 });
    await expectExact(settings, observations);

    // mufold → kcat: every record, key, value and header, in each key's order.
    const compressedBefore = zstd.compressed;
    const encodedBefore = recordsEncodedFast();
    await produce({ ...settings, topic: fromMufold }, messages);
    expect(zstd.compressed).toBeGreaterThan(compressedBefore);
    // Written by mufold's record encoder (the producer adapter installs it before any send), not kafkajs's.
    expect(recordsEncodedFast() - encodedBefore).toBeGreaterThanOrEqual(messages.length);
    const { stdout } = await run(foreign.kcat, ["-C", "-b", brokers, "-t", fromMufold, "-o", "beginning", "-e", "-q", "-f", "%p\t%o\t%k\t%h\t%s\n"]);
    const consumed = stdout
      .toString("utf8")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => {
        const [partition, offset, key, headers, value, ...rest] = l.split("\t");
        expect(rest).toEqual([]);
        return { partition: Number(partition), offset: Number(offset), key: key!, headers: headers!, value: value! };
      });
    expect(consumed).toHaveLength(messages.length);
    expect(new Set(consumed.map((r) => r.headers))).toEqual(new Set([`schema=${SCHEMA},content-type=application/json`]));
    consumed.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
    const byKey = (rs: { key: string; value: string }[]) => {
      const out = new Map<string, string[]>();
      for (const r of rs) out.set(r.key, [...(out.get(r.key) ?? []), r.value]);
      return out;
    };
    expect(byKey(consumed)).toEqual(byKey(messages.map((m) => ({ key: String(m.key), value: String(m.value) }))));
  });

  it("redis-py reads every packet with FCALL_RO and the reference's readback validator accepts each one", async () => {
    const settings = isolated();
    const observations = workload(23, 12, 30);
    await produce(settings, observations.map(observationRecord));
    await fold(settings);
    const packets = await expectExact(settings, observations);

    const { packets: fromPython, summary } = await readAndValidateInPython(foreign, { redisUrl: settings.redisUrl, prefix: settings.prefix });
    expect(summary).toMatchObject({ identities: packets.size, accepted: packets.size, rejected: 0, control_rejected: true });
    expect(fromPython.filter((p) => !p.ok || !p.identity_matches)).toEqual([]);
    const bytesFromPython = new Map(fromPython.map((p) => [p.identity, Buffer.from(p.packet_b64!, "base64")]));
    const bytesFromNode = new Map([...packets].map(([id, text]) => [id, Buffer.from(text, "utf8")]));
    expect(bytesFromPython).toEqual(bytesFromNode);
    expect(packets.size).toBeGreaterThan(20);
  });
});
