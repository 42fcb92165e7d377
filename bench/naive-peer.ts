/**
 * Issue 35's peer, side by side with the fold: what a user would write instead of mufold. bench/peers/naive_loopx_fold.py
 * (confluent-kafka, loopx 2.1.1, redis-py, in the foreign clients' venv of scripts/setup-foreign.sh) consumes the topic
 * from offset 0 and, for every batch, re-reduces each touched identity over ALL its deliveries so far with the
 * reference and SETs the packet under `<prefix>:naive:{<identity>}`. runNaivePeer runs it to the end of the topic (or
 * `records`), then checks it computed what the fold computes: it reads the same records again (kafkajs, up to the
 * offsets the peer reached), decides them as the fold does (decideRecord), and compares the peer's stored packets of a
 * sample of identities byte for byte with the embedded reducer's (test/support/oracle.ts); any difference throws: an
 * unequal peer is no comparison. The peer's keys are removed afterwards (`keep` to leave them).
 *
 *   const peer = await runNaivePeer({ brokers, topic, redisUrl, prefix, reducerVersion, records });
 *   mufold_over_naive_loopx_fold = fold records/s / peer.recordsPerSecond   (same topic, same run)
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import type { Observation } from "../src/core/index.js";
import { createKafka } from "../src/adapters/kafka/client.js";
import { connectRedis, isCluster } from "../src/adapters/redis/connect.js";
import { resolveSettings } from "../src/config/settings.js";
import { decideRecord, type RecordInput } from "../src/fold/record-decision.js";
import { ensureForeignClients } from "../test/support/foreign/foreign.js";
import { expectedPackets } from "../test/support/oracle.js";

const PEER_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "peers", "naive_loopx_fold.py");

/** What the script prints (bench/peers/naive_loopx_fold.py's docstring). */
interface PeerOutput {
  records: number;
  skipped: number;
  identities: number;
  seconds: number;
  records_per_s: number | null;
  batches: number;
  reduce_seconds: number;
  redis_seconds: number;
  deliveries_reduced: number;
  starts: Record<string, number>;
  positions: Record<string, number>;
}

/**
 * Run the naive peer over `topic` (at most `records` records, and no further than the end offsets it finds at its
 * start), verify its packets, and return its rate. `timeoutSeconds` (default 3600): past it the peer is killed and
 * this throws. `sample` (default 32): identities whose packets are compared (evenly spread, plus the one with the
 * most deliveries). `maxValueBytes` (default: the settings', MUFOLD_MAX_VALUE_BYTES): larger values are skipped, as
 * the fold sends them to its DLQ. `group` (default: a throwaway one, deleted afterwards with the check's): the peer's
 * consumer group; it reads from offset 0 whatever the group committed. `keep`: leave the peer's packets in Redis
 * (default: every `<prefix>:naive:*` key is removed, so the bench's later Redis measurements do not see them).
 * Give it a prefix of its own, or the fold's: the peer's keys do not collide with the fold's.
 */
export async function runNaivePeer(opts: {
  brokers: string;
  topic: string;
  redisUrl: string;
  prefix: string;
  reducerVersion: string;
  records: number;
  timeoutSeconds?: number;
  group?: string;
  sample?: number;
  maxValueBytes?: number;
  keep?: boolean;
}): Promise<{
  recordsPerSecond: number;
  records: number;
  seconds: number;
  identities: number;
  skipped: number;
  /** Deliveries all the recomputations went over (the naive cost: about records × deliveries per identity / records per touch). */
  deliveriesReduced: number;
  /** Of `seconds`: in loopx's reducer, and in the Redis pipelines. */
  reduceSeconds: number;
  redisSeconds: number;
}> {
  const { python } = ensureForeignClients();
  const redis = connectRedis(opts.redisUrl);
  if (isCluster(redis)) {
    await redis.quit();
    throw new Error(`naive peer: ${opts.redisUrl} is a Redis Cluster; the peer (redis-py's Redis.from_url) writes to one node`);
  }
  const maxValueBytes = opts.maxValueBytes ?? resolveSettings({}).maxValueBytes;
  const group = opts.group ?? `mufold-bench-naive.${randomBytes(4).toString("hex")}`;
  const timeoutMs = (opts.timeoutSeconds ?? 3600) * 1000;
  const started = Date.now();
  let output: PeerOutput;
  try {
    output = await runScript(python, [
      PEER_SCRIPT,
      "--brokers", opts.brokers,
      "--topic", opts.topic,
      "--group", group,
      "--redis-url", opts.redisUrl,
      "--prefix", opts.prefix,
      "--reducer-version", opts.reducerVersion,
      "--records", String(opts.records),
      "--max-value-bytes", String(maxValueBytes),
    ], timeoutMs);
    const positions = new Map(Object.entries(output.positions).map(([p, o]) => [Number(p), BigInt(o)]));
    const starts = new Map(Object.entries(output.starts).map(([p, o]) => [Number(p), BigInt(o)]));
    const remainingMs = Math.max(60_000, timeoutMs - (Date.now() - started));
    const records = await readRecords(opts.brokers, opts.topic, `${group}.check`, starts, positions, remainingMs);
    const decided = decideAll(records, opts.reducerVersion, maxValueBytes);
    const counts = { records: records.length, skipped: decided.rejected, identities: decided.byIdentity.size };
    if (counts.records !== output.records || counts.skipped !== output.skipped || counts.identities !== output.identities) {
      throw new Error(
        `naive peer: it consumed ${output.records} records (${output.skipped} skipped) into ${output.identities} identities, ` +
          `but the same offsets hold ${counts.records} records the fold would decide as ${counts.skipped} rejected and ${counts.identities} identities`,
      );
    }
    await verifySample(redis, opts.prefix, decided.byIdentity, opts.reducerVersion, opts.sample ?? 32);
  } finally {
    if (!opts.keep) await dropPeerKeys(redis, opts.prefix);
    await redis.quit();
    if (opts.group === undefined) await dropGroups(opts.brokers, [group, `${group}.check`]);
  }
  if (output.records_per_s === null) throw new Error(`naive peer: no rate (${output.records} records in ${output.seconds} s)`);
  return {
    recordsPerSecond: output.records_per_s,
    records: output.records,
    seconds: output.seconds,
    identities: output.identities,
    skipped: output.skipped,
    deliveriesReduced: output.deliveries_reduced,
    reduceSeconds: output.reduce_seconds,
    redisSeconds: output.redis_seconds,
  };
}

/** Run the script to its exit and read its --json-out result. Killed (and an error) past `timeoutMs`. */
async function runScript(python: string, args: string[], timeoutMs: number): Promise<PeerOutput> {
  const dir = mkdtempSync(join(tmpdir(), "mufold-naive-peer-"));
  const jsonOut = join(dir, "result.json");
  try {
    const child = spawn(python, [...args, "--json-out", jsonOut], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", PYTHONUNBUFFERED: "1" },
    });
    let stderr = "";
    child.stdout.resume(); // the same JSON goes to --json-out
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-8000)));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
      child.once("error", (err) => reject(new Error(`naive peer: ${python} could not start: ${err.message}`)));
      child.once("close", (code, signal) => resolve({ code, signal }));
    }).finally(() => clearTimeout(timer));
    const tail = stderr.trim() ? `\n--- its stderr ---\n${stderr.trim()}` : "";
    if (timedOut) throw new Error(`naive peer: ${PEER_SCRIPT} was still running after ${timeoutMs / 1000} s and was killed${tail}`);
    if (exit.code !== 0) throw new Error(`naive peer: ${PEER_SCRIPT} failed (${exit.signal ?? `exit ${exit.code}`})${tail}`);
    return JSON.parse(readFileSync(jsonOut, "utf8")) as PeerOutput;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every record below `positions` (from `starts`), per partition in offset order, with a throwaway group. */
async function readRecords(
  brokers: string,
  topic: string,
  groupId: string,
  starts: ReadonlyMap<number, bigint>,
  positions: ReadonlyMap<number, bigint>,
  timeoutMs: number,
): Promise<RecordInput[]> {
  const byPartition = new Map<number, RecordInput[]>();
  const pending = new Set([...positions].filter(([p, at]) => at > (starts.get(p) ?? 0n)).map(([p]) => p));
  if (pending.size === 0) return [];
  const consumer = createKafka({ brokers: brokers.split(","), clientId: "mufold-bench-naive-check" }).consumer({ groupId, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const target = positions.get(batch.partition) ?? 0n;
        let list = byPartition.get(batch.partition);
        if (list === undefined) byPartition.set(batch.partition, (list = []));
        for (const m of batch.messages) {
          if (BigInt(m.offset) < target) list.push({ key: m.key, value: m.value, headers: m.headers });
        }
        // lastOffset counts transaction markers: a partition ending on one is still read to its target.
        if (BigInt(batch.lastOffset()) + 1n >= target && pending.delete(batch.partition) && pending.size === 0) finish();
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`naive peer check: partitions ${[...pending].join(",")} of ${topic} not read to the peer's offsets in ${timeoutMs / 1000} s`)), timeoutMs);
    });
    try {
      await Promise.race([finished, late]);
    } finally {
      clearTimeout(timer);
    }
  } finally {
    await consumer.disconnect();
  }
  return [...byPartition.values()].flat();
}

/** The fold's decision of every record: the deliveries of each identity (in offset order), and how many it rejects. */
function decideAll(records: readonly RecordInput[], reducerVersion: string, maxValueBytes: number): { byIdentity: Map<string, Observation[]>; rejected: number } {
  const byIdentity = new Map<string, Observation[]>();
  let rejected = 0;
  for (const record of records) {
    const d = decideRecord(record, { reducerVersion, maxValueBytes });
    if (d.kind === "reject") {
      rejected++;
      continue;
    }
    let list = byIdentity.get(d.identity);
    if (list === undefined) byIdentity.set(d.identity, (list = []));
    list.push(d.observation);
  }
  return { byIdentity, rejected };
}

const peerKey = (prefix: string, identity: string) => `${prefix}:naive:{${identity}}`;

/** The peer's packets of a sample of identities must be the embedded reducer's bytes. */
async function verifySample(redis: Redis, prefix: string, byIdentity: ReadonlyMap<string, Observation[]>, reducerVersion: string, size: number): Promise<void> {
  const all = [...byIdentity.keys()].sort();
  if (all.length === 0) return;
  const sample = new Set<string>();
  for (let k = 0; k < size; k++) sample.add(all[Math.floor((k * all.length) / size)]!);
  let largest = all[0]!;
  for (const id of all) if (byIdentity.get(id)!.length > byIdentity.get(largest)!.length) largest = id;
  sample.add(largest);
  const ids = [...sample];
  const expected = expectedPackets(ids.flatMap((id) => byIdentity.get(id)!), reducerVersion);
  const stored = await Promise.all(ids.map((id) => redis.getBuffer(peerKey(prefix, id))));
  const wrong: string[] = [];
  ids.forEach((id, i) => {
    const want = Buffer.from(expected.get(id)!, "utf8");
    const got = stored[i];
    if (got === null || got === undefined) wrong.push(`${id}: no packet at ${peerKey(prefix, id)}`);
    else if (!got.equals(want)) {
      let at = 0;
      while (at < got.length && at < want.length && got[at] === want[at]) at++;
      wrong.push(`${id} (${byIdentity.get(id)!.length} deliveries): ${got.length} bytes vs the reducer's ${want.length}, first difference at byte ${at}: …${got.subarray(Math.max(0, at - 40), at + 40).toString("utf8")}… vs …${want.subarray(Math.max(0, at - 40), at + 40).toString("utf8")}…`);
    }
  });
  if (wrong.length > 0) {
    throw new Error(`naive peer: ${wrong.length} of ${ids.length} sampled packets differ from mufold's embedded reducer, so the comparison would not be fair:\n  ${wrong.slice(0, 5).join("\n  ")}`);
  }
}

/** Every `<prefix>:naive:*` key (SCAN, so also those of identities the check never saw). */
async function dropPeerKeys(redis: Redis, prefix: string): Promise<void> {
  const match = `${prefix.replace(/[*?[\]\\]/g, "\\$&")}:naive:*`;
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", match, "COUNT", 1000);
    if (keys.length > 0) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== "0");
}

/** The throwaway groups of the peer and of the check (best effort: a group the broker still sees as active stays). */
async function dropGroups(brokers: string, groups: string[]): Promise<void> {
  const admin = createKafka({ brokers: brokers.split(","), clientId: "mufold-bench-naive-check" }).admin();
  try {
    await admin.connect();
    const known = new Set((await admin.listGroups()).groups.map((g) => g.groupId));
    const ours = groups.filter((g) => known.has(g));
    if (ours.length > 0) await admin.deleteGroups(ours);
  } catch {
    // left behind: harmless, as every bench's groups are
  } finally {
    await admin.disconnect();
  }
}
