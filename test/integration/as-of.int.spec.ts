/**
 * As-of reads (issue 36): a simulated workload folded by a FoldWorker, then, for identities and points drawn
 * at random, the projection read as of that point (library and CLI) byte-equals the reducer over the
 * identity's records at or before it, as the test reads them back from the topic itself. At the identity's
 * latest offset it equals the live packet. Also: what the offset index costs in Redis bytes per entry.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { runReplay } from "../../consumers/replay/replay.js";
import { observationRecord } from "../../src/client/producer.js";
import { ProjectionReader } from "../../src/client/readback.js";
import { AsOfNotAvailableError } from "../../src/client/past.js";
import { contextOfObservation, parsePyJson, reducerIdentity, validateObservation, type Observation } from "../../src/core/index.js";
import { offsetIndexKey } from "../../src/adapters/redis/keys.js";
import { Prng, simulate } from "../../producers/simulation.js";
import { produce } from "../../producers/produce.js";
import { runMufold, dropPrefix, expectedPackets, quietLog, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { topicRecords } from "../support/topic-records.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

interface Placed {
  observation: Observation;
  partition: number;
  offset: bigint;
}


describe("mufold read --as-of-offset", () => {
  it("equals the reducer over the identity's records up to the point, and the live packet at its latest offset", async () => {
    const settings = testSettings({ partitions: 3 });
    cleanups.push(() => dropPrefix(settings));
    const sent = [...simulate({ agents: 8, observationsPerAgent: 60, duplicateRate: 0.2, conflictRate: 0.06, snapshotEvery: 1_000, seed: 36 })].map((d) => d.observation);
    await produce(settings, sent.map(observationRecord));
    const worker = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => worker.stop());
    await waitCaughtUp(settings);

    // The log as the test reads it, independently of the fold: every record, its partition and offset.
    const byIdentity = new Map<string, Placed[]>();
    for (const r of await topicRecords(settings)) {
      const observation = validateObservation(parsePyJson(r.value.toString("utf8")));
      const identity = reducerIdentity(contextOfObservation(observation, settings.reducerVersion));
      let list = byIdentity.get(identity);
      if (list === undefined) byIdentity.set(identity, (list = []));
      list.push({ observation, partition: r.partition, offset: r.offset });
    }
    expect(byIdentity.size).toBeGreaterThan(4);
    const oracle = (placed: readonly Placed[], identity: string, partition: number, offset: bigint) =>
      expectedPackets(placed.filter((p) => p.partition === partition && p.offset <= offset).map((p) => p.observation), settings.reducerVersion).get(identity);

    const redis = new Redis(settings.redisUrl);
    cleanups.push(() => redis.quit());
    const reader = new ProjectionReader(redis, settings.prefix, settings.reducerVersion, settings.topic);
    const rng = new Prng(36);
    const env = { REDIS_URL: settings.redisUrl, MUFOLD_PREFIX: settings.prefix, MUFOLD_TOPIC: settings.topic };
    let compared = 0;
    let conflicted = 0;
    const asked: { identity: string; partition: number; offset: bigint; text: string }[] = [];
    for (const [identity, placed] of byIdentity) {
      expect(new Set(placed.map((p) => p.partition)).size).toBe(1); // keyed by scope: one partition
      const partition = placed[0]!.partition;
      const last = placed.at(-1)!.offset;
      const ids = placed.map((p) => p.observation.observation_id);
      if (new Set(ids).size < ids.length) conflicted++;
      const points = [last, ...Array.from({ length: 6 }, () => rng.pick(placed).offset), placed[0]!.offset];
      for (const offset of points) {
        const got = await reader.get(identity, { asOf: { partition, offset } });
        expect(got?.text).toBe(oracle(placed, identity, partition, offset));
        expect(got?.asOf?.deliveries).toBe(placed.filter((p) => p.offset <= offset).length);
        asked.push({ identity, partition, offset, text: got!.text });
        compared++;
      }
      // The latest point is the live projection, byte for byte.
      expect((await reader.get(identity, { asOf: { partition, offset: last } }))?.text).toBe(await reader.read(identity));
    }
    expect(compared).toBeGreaterThan(40);
    expect(conflicted, "identities with repeated ids").toBeGreaterThan(0);

    // The CLI: the same bytes; a point past the marks; a malformed point; an unknown identity.
    const [identity, placed] = [...byIdentity][0]!;
    const pick = placed[Math.floor(placed.length / 2)]!;
    const ok = await runMufold(["read", "--identity", identity, "--as-of-offset", `${pick.partition}:${pick.offset}`], env);
    expect(ok.stderr).toBe("");
    expect(ok.stdout).toBe(`${oracle(placed, identity, pick.partition, pick.offset)}\n`);
    expect(ok.code).toBe(0);
    const beyond = await runMufold(["read", "--identity", identity, "--as-of-offset", `${pick.partition}:99999999`], env);
    expect(beyond.code).toBe(4);
    expect(beyond.stderr).toMatch(new RegExp(`as_of_not_available: .*partition ${pick.partition} up to offset \\d+: as-of offsets 0 to \\d+ are available`));
    const malformed = await runMufold(["read", "--identity", identity, "--as-of-offset", "3@12"], env);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain("PARTITION:OFFSET");
    const unknown = await runMufold(["read", "--identity", `mur_${"0".repeat(64)}`, "--as-of-offset", `${pick.partition}:${pick.offset}`], env);
    expect(unknown.code).toBe(3);
    await expect(reader.get(identity, { asOf: { partition: pick.partition, offset: 99_999_999n } })).rejects.toBeInstanceOf(AsOfNotAvailableError);

    // What the index costs: Redis's own count of the index keys' bytes, per entry.
    const generation = await reader.generation();
    let bytes = 0;
    let entries = 0;
    for (const id of byIdentity.keys()) {
      const key = offsetIndexKey(settings.prefix, generation, id);
      bytes += Number(await redis.call("MEMORY", "USAGE", key, "SAMPLES", "0"));
      entries += await redis.llen(key);
    }
    expect(entries).toBe([...byIdentity.values()].reduce((a, p) => a + p.length, 0));
    console.log(`offset index: ${entries} entries, ${bytes} bytes (MEMORY USAGE), ${(bytes / entries).toFixed(1)} bytes per entry`);
    expect(bytes / entries).toBeLessThan(149);

    // A replay rebuilds the index with the packets: after a promote, every point asked above answers the same bytes
    // from the new generation.
    const promoted = await runReplay(settings, { verify: false, promote: true, dropAfterSeconds: 0 }, quietLog);
    expect(promoted.promoted).toBe(true);
    expect(await reader.generation()).toBe(promoted.rebuiltGeneration);
    expect(promoted.rebuiltGeneration).not.toBe(generation);
    for (const a of asked) {
      expect((await reader.get(a.identity, { asOf: { partition: a.partition, offset: a.offset } }))?.text, `${a.identity} at ${a.partition}:${a.offset}`).toBe(a.text);
    }
  });
});
