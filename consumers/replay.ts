/**
 * Replay: rebuild every projection from offset 0 into a new (shadow)
 * generation with a throwaway consumer, then verify it against the live one
 * and, with --promote, make it live (blue/green): pause the fold, catch up to
 * its committed positions, flip the generation pointer, resume.
 */
import { randomBytes } from "node:crypto";
import { createKafka, kafkaClientSettings } from "../src/adapters/kafka/client.js";
import { GroupConsumer } from "../src/adapters/kafka/consumer.js";
import { assertInfiniteRetention, groupOffsets, partitionOffsets } from "../src/adapters/kafka/topics.js";
import { connectRedis, redisClientSettings } from "../src/adapters/redis/connect.js";
import { loadFunctions } from "../src/adapters/redis/functions.js";
import { RedisStore } from "../src/adapters/redis/store.js";
import type { Settings } from "../src/config.js";
import { MufoldError } from "../src/errors.js";
import type { Logger } from "../src/log.js";
import { routeRecords } from "./batch-router.js";
import { IdentityApplier } from "./identity-applier.js";
import { verifyGenerations, type VerifyReport } from "./verify.js";

export interface ReplayOptions {
  verify: boolean;
  promote: boolean;
  /** Keep the shadow generation after a verify-only run. */
  keepShadow?: boolean;
  /** Seconds to keep the old generation readable after a promote. */
  dropAfterSeconds?: number;
  pauseTimeoutSeconds?: number;
  onProgress?(p: { consumed: number; total: number; elapsedSeconds: number }): void;
}

export interface ReplaySummary {
  liveGeneration: number | null;
  rebuiltGeneration: number;
  records: number;
  deliveries: number;
  duplicatesSkipped: number;
  dlq: number;
  dlqByReason: Record<string, number>;
  identities: number;
  seconds: number;
  recordsPerSecond: number;
  verify: VerifyReport | null;
  mismatches: number;
  promoted: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runReplay(settings: Settings, options: ReplayOptions, log: Logger): Promise<ReplaySummary> {
  const kafka = createKafka(kafkaClientSettings(settings, "-replay"));
  const redis = connectRedis(redisClientSettings(settings));
  const store = new RedisStore(redis, settings.prefix);
  const admin = kafka.admin();
  await admin.connect();
  const started = Date.now();
  let consumer: GroupConsumer | undefined;
  const groupId = `${settings.group}.replay.${randomBytes(4).toString("hex")}`;
  try {
    await assertInfiniteRetention(admin, settings.topic, settings.allowFiniteRetention);
    await loadFunctions(redis);
    const offsets = await partitionOffsets(admin, settings.topic);
    const live = (await store.control()).generation;
    const rebuilt = await store.allocateGeneration();
    const applier = new IdentityApplier(store, settings.cacheSize);
    const target = new Map(offsets.map((o) => [o.partition, o.high]));
    const position = new Map(offsets.map((o) => [o.partition, o.low]));
    const total = offsets.reduce((a, o) => a + Number(o.high - o.low), 0);
    const summary: ReplaySummary = {
      liveGeneration: live,
      rebuiltGeneration: rebuilt,
      records: 0,
      deliveries: 0,
      duplicatesSkipped: 0,
      dlq: 0,
      dlqByReason: {},
      identities: 0,
      seconds: 0,
      recordsPerSecond: 0,
      verify: null,
      mismatches: 0,
      promoted: false,
    };
    const reached = () => [...target].every(([p, t]) => (position.get(p) ?? 0n) >= t);
    log.info("replay started", { rebuilt, live, records: total, group: groupId });

    consumer = await GroupConsumer.start(kafka, {
      groupId,
      topic: settings.topic,
      fromBeginning: true,
      onBatch: async (records, ctx) => {
        const limit = target.get(ctx.partition) ?? 0n;
        const wanted = records.filter((r) => BigInt(r.offset) < limit);
        if (wanted.length === 0) return;
        const routed = routeRecords(wanted, { reducerVersion: settings.reducerVersion, maxValueBytes: settings.maxValueBytes });
        const stats = await applier.applyAll(rebuilt, routed.identities);
        summary.records += wanted.length;
        summary.deliveries += stats.applied;
        summary.duplicatesSkipped += stats.duplicatesSkipped;
        summary.dlq += routed.rejected.length;
        for (const r of routed.rejected) summary.dlqByReason[r.reason] = (summary.dlqByReason[r.reason] ?? 0) + 1;
        position.set(ctx.partition, BigInt(wanted[wanted.length - 1]!.offset) + 1n);
        options.onProgress?.({ consumed: summary.records, total, elapsedSeconds: (Date.now() - started) / 1000 });
      },
      onCrash: (error) => log.error("replay consumer crashed", { error }),
    });
    while (!reached()) await sleep(50);

    if (options.promote) {
      // Blue/green: hold the live fold still, catch up to its committed positions, flip.
      const control = await store.control();
      const epoch = control.epoch + 1;
      await store.setControl({ paused: true, epoch });
      try {
        await waitForPauseAcks(admin, store, settings.group, epoch, options.pauseTimeoutSeconds ?? 120);
        const committed = await groupOffsets(admin, settings.group, settings.topic);
        for (const [p, c] of committed) if (c > (target.get(p) ?? 0n)) target.set(p, c);
        while (!reached()) await sleep(50);
        if (options.verify && live !== null) summary.verify = await verifyGenerations(store, live, rebuilt);
        await store.setControl({ generation: rebuilt, paused: false });
        summary.promoted = true;
      } catch (err) {
        await store.setControl({ paused: false });
        throw err;
      }
    } else if (options.verify && live !== null) {
      summary.verify = await verifyGenerations(store, live, rebuilt);
    }
    await consumer.stop();
    consumer = undefined;
    await admin.deleteGroups([groupId]).catch(() => undefined);

    summary.identities = (await store.listIdentities(rebuilt)).length;
    summary.mismatches = summary.verify?.mismatches ?? 0;
    summary.seconds = (Date.now() - started) / 1000;
    summary.recordsPerSecond = summary.seconds > 0 ? Math.round(summary.records / summary.seconds) : summary.records;
    if (summary.promoted && live !== null && live !== rebuilt) {
      const delay = options.dropAfterSeconds ?? 5;
      await sleep(delay * 1000); // readers mid-read of the old generation finish first
      await store.dropGeneration(live);
      await store.dropChanges(live);
    } else if (!summary.promoted && !options.keepShadow) {
      await store.dropGeneration(rebuilt);
      await store.dropChanges(rebuilt);
    }
    log.info("replay finished", { ...summary, verify: undefined, mismatches: summary.mismatches });
    return summary;
  } finally {
    await consumer?.stop().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    await redis.quit().catch(() => undefined);
  }
}

/** Wait until every live member of the fold group has acknowledged the pause epoch. */
async function waitForPauseAcks(
  admin: { describeGroups(ids: string[]): Promise<{ groups: { members: unknown[] }[] }> },
  store: RedisStore,
  group: string,
  epoch: number,
  timeoutSeconds: number,
): Promise<void> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  for (;;) {
    const members = (await admin.describeGroups([group])).groups[0]?.members.length ?? 0;
    const acks = Object.values(await store.pauseAcks()).filter((e) => Number(e) === epoch).length;
    if (acks >= members) return;
    if (Date.now() > deadline) throw new MufoldError(`only ${acks} of ${members} fold workers paused within ${timeoutSeconds}s; not promoting`);
    await sleep(200);
  }
}
