/**
 * Issue 8, "the world as it is": traffic from producers mufold did not write
 * (confluent-kafka gzip/snappy/lz4/zstd, a transactional one with an abort),
 * a record near the broker's size limit, two fold processes with a cache
 * smaller than the number of identities, Redis emptied mid-batch and rebuilt
 * by the folds themselves, a replay killed mid-promote. Then every packet is
 * compared with the reducer over the log. Restarts no shared service: it
 * works on its own Redis database (FLUSHDB touches nothing else).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dlqTopic } from "../../src/fold/dead-letter.js";
import { deleteTopics, ensureForeignClients, type ForeignClients } from "../support/foreign/foreign.js";
import { dropPrefix, testSettings } from "../support/pipeline.js";
import { NEAR_LIMIT_BYTES, runWorld } from "./world.js";

const REDIS_DB = 11;
const base = testSettings({ partitions: 6 });
const url = new URL(base.redisUrl);
url.pathname = `/${REDIS_DB}`;
const settings = { ...base, topic: base.topic.replace("mufold-test.", "mufold-world."), redisUrl: url.toString() };

let foreign: ForeignClients;
beforeAll(() => {
  foreign = ensureForeignClients();
}, 300_000);
afterAll(async () => {
  await dropPrefix(settings).catch(() => undefined);
  await deleteTopics(settings.brokers, [settings.topic, dlqTopic(settings.topic)]).catch(() => undefined);
});

describe("the world as it is", () => {
  it("folds foreign producers, codecs, transactions and a near-limit record through a Redis flush and a killed promote, exactly", async () => {
    const w = await runWorld(settings, foreign, {
      agents: 40,
      observationsPerAgent: 150,
      snapshotEvery: 30,
      seed: 8080,
      rounds: 6,
      abortRound: 4, // the aborted transaction goes out while Redis is empty
      cacheSize: 5,
      leaseSeconds: 5,
      timeLimitSeconds: 200,
      log: (line) => console.log(line),
    });
    console.log(`[world] ${JSON.stringify(w.report)}`);

    // The log holds exactly what was committed: nothing unknown, nothing aborted, nothing lost or doubled.
    expect({ unknown: w.unknownRecords, countMismatches: w.countMismatches, abortedOnLog: w.abortedOnLog }).toEqual({ unknown: 0, countMismatches: 0, abortedOnLog: 0 });
    expect(w.codecsOnLog).toEqual(w.codecsSent); // every codec really is on the log, with the records sent with it
    expect(w.identities).toBeGreaterThan(20 * 5); // far more identities than a worker's cache

    // Every packet equals the reducer over the log's committed, generator-valid records.
    expect({ missing: w.diff.missing.length, extra: w.diff.extra.length, different: w.diff.different.length }).toEqual({ missing: 0, extra: 0, different: 0 });
    expect(w.abortedWouldChangePackets).toBe(true); // the comparison could tell if an aborted record had counted

    // The near-limit record: intact on the log, dead-lettered as value_too_large, and the only dead letter.
    expect(w.nearLimit.onLogIntact).toBe(true);
    expect(w.nearLimit.dlq.length).toBeGreaterThanOrEqual(1);
    expect(w.nearLimit.dlq.every((d) => d.reason === "value_too_large" && d.sourceTopic === settings.topic && d.originalValueBytes === String(NEAR_LIMIT_BYTES))).toBe(true);
    expect(w.nearLimit.otherDlq).toBe(0);

    // Redis emptied while the fold had traffic to fold: the folds made a new generation and rebuilt it by themselves.
    expect(w.backlogAtFlush).toBeGreaterThan(0);
    expect(w.restore.generationBefore).not.toBeNull();
    expect(w.restore.generationAfter).not.toBeNull();
    expect(Number(w.restore.generationAfter)).toBeGreaterThan(Number(w.restore.generationBefore));
    // The killed promote changed nothing; the folds held still until its lease ran out, then folded on.
    expect(w.killedReplay).toMatchObject({ exitSignal: "SIGKILL", pausedSeen: true, generationUnchanged: true });

    // A replay of the whole log proves the same bytes.
    expect({ verified: w.finalVerify.verified, mismatches: w.finalVerify.mismatches }).toEqual({ verified: true, mismatches: 0 });
    expect(w.finalVerify.verify?.compared).toBe(w.identities);
  }, 280_000);
});
