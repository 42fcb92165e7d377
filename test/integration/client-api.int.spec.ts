/**
 * The public read API on a real fold: `get` (packet, version, ETag; by scope
 * and identity) and `subscribe` (the change feed) across a promoted replay,
 * over a reader's connection. The expected packets come from the embedded
 * reducer (test/support/oracle.ts), the expected versions and digests from the
 * identities' meta hashes.
 */
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { runReplay } from "../../consumers/replay/replay.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { connectRedis } from "../../src/adapters/redis/connect.js";
import { ProjectionReader, type ChangeEvent, type FeedEvent } from "../../src/client/index.js";
import { identityKeys } from "../../src/adapters/redis/keys.js";
import type { Observation } from "../../src/core/index.js";
import { dropPrefix, expectedPackets, quietLog, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { waitFor } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

/** Collect a feed in the background until aborted. */
function collect(reader: ProjectionReader, options: Parameters<ProjectionReader["subscribe"]>[0] = {}) {
  const controller = new AbortController();
  const events: FeedEvent[] = [];
  let ended = false;
  let failure: unknown;
  const done = (async () => {
    try {
      for await (const event of reader.subscribe({ blockMs: 200, ...options, signal: controller.signal })) events.push(event);
    } catch (err) {
      failure = err;
    } finally {
      ended = true;
    }
  })();
  cleanups.push(async () => (controller.abort(), done));
  return { events, stop: () => controller.abort(), ended: () => ended, failure: () => failure };
}

/** The newest change seen per identity in a generation. */
function newest(events: FeedEvent[], generation: number): Map<string, ChangeEvent> {
  const out = new Map<string, ChangeEvent>();
  for (const e of events) if (e.type === "change" && e.generation === generation) out.set(e.identity, e);
  return out;
}

describe("ProjectionReader: get and subscribe on a real fold", () => {
  it("reads packets with version and ETag, and follows the feed across a promote", async () => {
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const all = [...simulate({ agents: 4, observationsPerAgent: 20, snapshotEvery: 10, duplicateRate: 0.1, conflictRate: 0.05, memories: 4, seed: 51 })].map((d) => d.observation);
    const first = all.slice(0, 50);
    const worker = await FoldWorker.start(settings, quietLog);
    cleanups.push(() => worker.stop());
    const redis = connectRedis({ url: settings.redisUrl, reader: true });
    cleanups.push(() => redis.quit());
    const reader = new ProjectionReader(redis, settings.prefix);
    const feed = collect(reader);

    await produce(settings, first.map(observationRecord));
    await waitCaughtUp(settings);
    const g1 = await reader.generation();
    const expected1 = expectedPackets(first);
    expect(expected1.size).toBeGreaterThanOrEqual(4);
    const meta = async (generation: number, identity: string) => redis.hgetall(identityKeys(settings.prefix, generation, identity)[0]!);

    // Every identity announced at its stored version and digest; `get` agrees.
    await waitFor("a change for every identity at its stored version", async () => {
      const seen = newest(feed.events, g1);
      for (const identity of expected1.keys()) if (seen.get(identity)?.version !== Number((await meta(g1, identity)).v)) return undefined;
      return true;
    });
    expect(feed.events[0]).toEqual({ type: "generation", generation: g1, previous: null });
    for (const [identity, packet] of expected1) {
      const change = newest(feed.events, g1).get(identity)!;
      const m = await meta(g1, identity);
      expect(change.digest).toBe(m.dig);
      const read = (await reader.get(identity, { validate: true }))!;
      expect(read.text).toBe(packet);
      expect([read.identity, read.generation, read.version]).toEqual([identity, g1, Number(m.v)]);
      expect(read.etag).toBe(`"${createHash("sha256").update(packet).digest("hex")}"`);
      expect(read.projection.reducer_identity).toBe(identity);
      expect(change.status).toBe(read.projection.status);
      const { scope, retrieval_snapshot_ref, policy_snapshot_ref } = read.projection;
      expect((await reader.get({ scope, retrieval_snapshot_ref, policy_snapshot_ref }))!.text).toBe(packet);
    }
    // Versions only go up in what the feed yields (repeats and older versions are dropped).
    const versions = new Map<string, number>();
    for (const e of feed.events) {
      if (e.type !== "change") continue;
      expect(e.version).toBeGreaterThan(versions.get(e.identity) ?? 0);
      versions.set(e.identity, e.version);
    }
    expect(await reader.get("mur_" + "0".repeat(64))).toBeNull();
    await expect(reader.get("not-an-identity")).rejects.toThrow(/mur_ followed by 64 lowercase hex digits/);

    // A promoted replay moves the feed to the new generation; later changes arrive there.
    const replay = await runReplay(settings, { verify: false, promote: true, dropAfterSeconds: 0 }, quietLog);
    const g2 = replay.rebuiltGeneration;
    expect(g2).not.toBe(g1);
    await waitFor("the feed announces the promoted generation", async () => (feed.events.some((e) => e.type === "generation" && e.generation === g2) ? true : undefined));
    expect(feed.events.filter((e) => e.type === "generation")).toEqual([
      { type: "generation", generation: g1, previous: null },
      { type: "generation", generation: g2, previous: g1 },
    ]);
    const second: Observation[] = all.slice(50);
    await produce(settings, second.map(observationRecord));
    await waitCaughtUp(settings);
    const expected2 = expectedPackets(all);
    const touched = [...expectedPackets(second).keys()];
    expect(touched.length).toBeGreaterThanOrEqual(4);
    await waitFor("changes in the promoted generation for every identity the second batch touched", async () => {
      const seen = newest(feed.events, g2);
      return touched.every((id) => seen.has(id)) ? true : undefined;
    });
    for (const identity of touched) {
      const read = (await reader.get(identity))!;
      expect([read.generation, read.text]).toEqual([g2, expected2.get(identity)]);
      expect(newest(feed.events, g2).get(identity)!.version).toBe(read.version);
    }

    // Resuming: from a cursor of the live generation, only later entries; from one of a generation gone, the live stream from its start.
    const g2Changes = feed.events.filter((e): e is ChangeEvent => e.type === "change" && e.generation === g2);
    const resumed = collect(reader, { after: { generation: g2, id: g2Changes[0]!.id }, everyEntry: true });
    const fromOld = collect(reader, { after: { generation: g1, id: "0" }, everyEntry: true });
    await waitFor("both resumed feeds caught up", async () =>
      resumed.events.filter((e) => e.type === "change").length >= g2Changes.length - 1 && fromOld.events.filter((e) => e.type === "change").length >= g2Changes.length ? true : undefined,
    );
    expect(resumed.events[0]).toEqual({ type: "generation", generation: g2, previous: null });
    expect(resumed.events.slice(1).map((e) => (e as ChangeEvent).id)).toEqual(g2Changes.slice(1).map((e) => e.id));
    expect(fromOld.events[0]).toEqual({ type: "generation", generation: g2, previous: g1 });
    expect(fromOld.events.slice(1).map((e) => (e as ChangeEvent).id)).toEqual(g2Changes.map((e) => e.id));

    console.log(`[client api] ${expected1.size} identities, then ${touched.length} after the promote; ${feed.events.length} feed events`);
    // Aborting ends an iteration that is waiting for entries.
    for (const f of [feed, resumed, fromOld]) f.stop();
    await waitFor("every feed ended on abort", async () => ([feed, resumed, fromOld].every((f) => f.ended()) ? true : undefined), 10_000);
    expect([feed.failure(), resumed.failure(), fromOld.failure()]).toEqual([undefined, undefined, undefined]);
  });
});
