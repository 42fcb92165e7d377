#!/usr/bin/env node
// kafkajs <-> broker compatibility smoke test (the evidence behind the pinned
// Kafka version, see infra/README.md). Uses the repo's node_modules.
//
//   node infra/kafka/smoke.mjs [--brokers 127.0.0.1:9092] [--verbose]
//
// kafkajs' own logging is off unless --verbose (it logs expected, retried
// errors such as "group is rebalancing" or "coordinator is loading").
//
// Checks, against a running broker:
//   1. protocol: for every API kafkajs uses, the version kafkajs will pick
//      (min(kafkajs max, broker max); kafkajs never checks the broker's min)
//      is >= the broker's min version (KIP-896 removed old versions in 4.0)
//   2. admin.createTopics: 12 partitions, cleanup.policy=delete,
//      retention.ms=-1, retention.bytes=-1
//   3. admin.describeConfigs returns those values
//   4. idempotent producer (acks -1, maxInFlightRequests 1), keyed messages,
//      ZSTD via @mongodb-js/zstd (send + sendBatch)
//   5. admin.fetchTopicOffsets: high watermarks add up to what was sent
//   6. consumer group: consumer A joins alone (12 partitions), B joins ->
//      rebalance -> disjoint assignments covering 12; eachBatch; every message
//      consumed once-or-more, same key -> same partition; batches were ZSTD
//   7. explicit commitOffsets; admin.fetchOffsets == high watermarks
//   8. consumer.seek to the beginning replays A's partitions
//   9. B leaves -> A rebalances to all 12 partitions; group empties on stop
// Exits 0 when all pass, 1 on the first failure.
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(path.join(repoRoot, 'package.json'));
const { Kafka, logLevel, Partitioners, CompressionTypes, CompressionCodecs, ConfigResourceTypes } = require('kafkajs');
const zstd = require('@mongodb-js/zstd');
const kafkajsVersion = require('kafkajs/package.json').version;
const { requests: kjsRequests } = require('kafkajs/src/protocol/requests');
const kjsApiKeys = require('kafkajs/src/protocol/requests/apiKeys');

const argv = process.argv.slice(2);
const brokerArg = argv.indexOf('--brokers') >= 0 ? argv[argv.indexOf('--brokers') + 1] : undefined;
const verbose = argv.includes('--verbose');
const brokers = (brokerArg ?? process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');

// ZSTD codec: kafkajs calls compress(encoder) with encoder.buffer holding the
// record bytes, and decompress(buffer) with the compressed records.
const codecCalls = { compress: 0, decompress: 0 };
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  compress: async (encoder) => {
    codecCalls.compress++;
    return zstd.compress(encoder.buffer);
  },
  decompress: async (buffer) => {
    codecCalls.decompress++;
    return zstd.decompress(buffer);
  },
});

const started = Date.now();
let checks = 0;
const ok = (name, detail) => {
  checks++;
  console.log(`ok   ${String(checks).padStart(2)} ${name}${detail ? ` -- ${detail}` : ''}`);
};
class CheckFailed extends Error {}
const assert = (cond, msg) => {
  if (!cond) throw new CheckFailed(msg);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, pred, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new CheckFailed(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

// Raw ApiVersions v0 (every broker since 0.10 answers it; KIP-896 keeps it).
function brokerApiVersions() {
  const [host, port] = brokers[0].split(':');
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host, port: Number(port) });
    const cid = Buffer.from('mufold-smoke');
    const req = Buffer.alloc(4 + 10 + cid.length);
    req.writeInt32BE(10 + cid.length, 0);
    req.writeInt16BE(18, 4);
    req.writeInt16BE(0, 6);
    req.writeInt32BE(1, 8);
    req.writeInt16BE(cid.length, 12);
    cid.copy(req, 14);
    let buf = Buffer.alloc(0);
    sock.setTimeout(5000, () => sock.destroy(new Error('ApiVersions timeout')));
    sock.on('connect', () => sock.write(req));
    sock.on('error', reject);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length < 4 || buf.length < 4 + buf.readInt32BE(0)) return;
      sock.destroy();
      if (buf.readInt16BE(8) !== 0) return reject(new Error(`ApiVersions error ${buf.readInt16BE(8)}`));
      const n = buf.readInt32BE(10);
      const out = new Map();
      for (let i = 0, o = 14; i < n; i++, o += 6) {
        out.set(buf.readInt16BE(o), { min: buf.readInt16BE(o + 2), max: buf.readInt16BE(o + 4) });
      }
      resolve(out);
    });
  });
}

// APIs exercised by mufold-style usage (admin + idempotent producer + group consumer).
const USED_APIS = [
  'Produce', 'Fetch', 'ListOffsets', 'Metadata', 'OffsetCommit', 'OffsetFetch',
  'GroupCoordinator', 'JoinGroup', 'Heartbeat', 'LeaveGroup', 'SyncGroup',
  'DescribeGroups', 'ListGroups', 'ApiVersions', 'CreateTopics', 'DeleteTopics',
  'InitProducerId', 'DescribeConfigs', 'AlterConfigs', 'CreatePartitions',
  'DeleteGroups', 'DeleteRecords',
];

const kafka = new Kafka({
  clientId: 'mufold-smoke',
  brokers,
  logLevel: verbose ? logLevel.WARN : logLevel.NOTHING,
});
const topic = `mufold-smoke-${Date.now()}`;
const groupId = `${topic}-group`;
const admin = kafka.admin();
const producer = kafka.producer({
  idempotent: true,
  maxInFlightRequests: 1,
  createPartitioner: Partitioners.DefaultPartitioner,
});
const consumers = [];

async function main() {
  console.log(`kafkajs ${kafkajsVersion} smoke test against ${brokers.join(',')} (topic ${topic})`);

  // 1. protocol versions
  const bv = await brokerApiVersions();
  const rows = [];
  const bad = [];
  for (const name of USED_APIS) {
    const key = kjsApiKeys[name];
    const kjs = Object.keys(kjsRequests[name].versions).map(Number);
    const b = bv.get(key);
    const pick = b ? Math.min(Math.max(...kjs), b.max) : null;
    const good = b && pick >= b.min;
    rows.push(`${name}=v${pick ?? '-'}${good ? '' : '!'}(broker ${b ? `${b.min}-${b.max}` : 'none'})`);
    if (!good) bad.push(rows.at(-1));
  }
  assert(bad.length === 0, `kafkajs would use versions the broker rejects: ${bad.join(', ')}`);
  ok('protocol versions', rows.join(' '));

  // 2. createTopics
  await admin.connect();
  const wanted = { 'cleanup.policy': 'delete', 'retention.ms': '-1', 'retention.bytes': '-1' };
  const created = await admin.createTopics({
    waitForLeaders: true,
    topics: [{
      topic,
      numPartitions: 12,
      replicationFactor: 1,
      configEntries: Object.entries(wanted).map(([name, value]) => ({ name, value })),
    }],
  });
  assert(created === true, 'createTopics returned false');
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  assert(meta.topics[0].partitions.length === 12, 'expected 12 partitions');
  ok('admin.createTopics', '12 partitions, replication 1');

  // 3. describeConfigs
  const dc = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: Object.keys(wanted) }],
  });
  const got = Object.fromEntries(dc.resources[0].configEntries.map((e) => [e.configName, e.configValue]));
  for (const [k, v] of Object.entries(wanted)) assert(got[k] === v, `describeConfigs ${k}=${got[k]}, want ${v}`);
  ok('admin.describeConfigs', Object.entries(got).map(([k, v]) => `${k}=${v}`).join(' '));

  // 4. idempotent keyed ZSTD producer
  await producer.connect();
  const KEYS = 48;
  const sent = [];
  const msg = (i) => ({ key: `key-${i % KEYS}`, value: JSON.stringify({ i, pad: 'x'.repeat(200) }) });
  for (let b = 0; b < 5; b++) {
    const messages = Array.from({ length: 100 }, (_, j) => msg(b * 100 + j));
    const res = await producer.send({ topic, acks: -1, compression: CompressionTypes.ZSTD, messages });
    sent.push(...messages);
    assert(res.every((r) => r.errorCode === 0), 'produce error');
  }
  const batchMsgs = Array.from({ length: 100 }, (_, j) => msg(500 + j));
  await producer.sendBatch({ acks: -1, compression: CompressionTypes.ZSTD, topicMessages: [{ topic, messages: batchMsgs }] });
  sent.push(...batchMsgs);
  assert(codecCalls.compress > 0, 'ZSTD codec was never called by the producer');
  ok('idempotent producer', `${sent.length} keyed msgs, acks -1, maxInFlight 1, ZSTD (${codecCalls.compress} compressed batches)`);

  // 5. fetchTopicOffsets
  const offs = await admin.fetchTopicOffsets(topic);
  const hw = new Map(offs.map((o) => [o.partition, Number(o.high)]));
  const total = [...hw.values()].reduce((a, b) => a + b, 0);
  assert(offs.length === 12, 'fetchTopicOffsets: expected 12 partitions');
  assert(total === sent.length, `high watermarks sum ${total}, sent ${sent.length} (duplicates?)`);
  const nonEmpty = [...hw.values()].filter((v) => v > 0).length;
  ok('admin.fetchTopicOffsets', `sum(high)=${total} over ${nonEmpty}/12 partitions`);

  // 6. consumer group with two consumers
  const seen = new Map(); // `${p}:${o}` -> key
  const keyPartition = new Map();
  const assignment = [null, null];
  const joins = [0, 0];
  let replay = null; // Map partition -> Set(offset) while replaying
  function makeConsumer(idx) {
    const c = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 300, rebalanceTimeout: 20000, maxWaitTimeInMs: 200 });
    c.on(c.events.GROUP_JOIN, (e) => {
      joins[idx]++;
      assignment[idx] = (e.payload.memberAssignment[topic] ?? []).slice().sort((a, b) => a - b);
    });
    return c;
  }
  async function run(idx) {
    const c = consumers[idx];
    await c.connect();
    await c.subscribe({ topics: [topic], fromBeginning: true });
    await c.run({
      autoCommit: false,
      eachBatch: async ({ batch, heartbeat, resolveOffset, isRunning, isStale }) => {
        for (const m of batch.messages) {
          if (!isRunning() || isStale()) break;
          const key = m.key.toString();
          seen.set(`${batch.partition}:${m.offset}`, key);
          const kp = keyPartition.get(key);
          assert(kp === undefined || kp === batch.partition, `key ${key} in partitions ${kp} and ${batch.partition}`);
          keyPartition.set(key, batch.partition);
          if (replay && idx === 0) replay.get(batch.partition)?.add(m.offset);
          resolveOffset(m.offset);
        }
        if (batch.messages.length) {
          const last = batch.messages.at(-1).offset;
          await c.commitOffsets([{ topic, partition: batch.partition, offset: String(Number(last) + 1) }]);
        }
        await heartbeat();
      },
    });
  }
  consumers.push(makeConsumer(0), makeConsumer(1));
  await run(0);
  await until('consumer A to own all 12 partitions', () => assignment[0]?.length === 12);
  ok('consumer A joined', 'assigned 12/12 partitions');
  await run(1);
  await until('rebalance onto 2 consumers', () =>
    assignment[1]?.length > 0 && assignment[0].length + assignment[1].length === 12 &&
    new Set([...assignment[0], ...assignment[1]]).size === 12);
  const desc = await admin.describeGroups([groupId]);
  const g = desc.groups[0];
  ok('consumer B joined, rebalanced', `A=[${assignment[0]}] B=[${assignment[1]}], group ${g.state}, ${g.members.length} members, ${g.protocol}`);
  await until('all messages consumed', () => seen.size === sent.length);
  assert(codecCalls.decompress > 0, 'consumer never decompressed ZSTD batches');
  ok('eachBatch consumed', `${seen.size} distinct offsets, ${keyPartition.size} keys each on 1 partition, ${codecCalls.decompress} ZSTD batches decompressed`);

  // 7. commits visible through admin.fetchOffsets
  const committedSum = async () => {
    const r = await admin.fetchOffsets({ groupId, topics: [topic] });
    return r[0].partitions.reduce((a, p) => a + Math.max(0, Number(p.offset)), 0);
  };
  await until('committed offsets to reach high watermarks', async () => (await committedSum()) === total, 15000);
  ok('commitOffsets', `committed sum ${total} == high watermarks`);

  // 8. seek to the beginning on consumer A
  const aParts = assignment[0].slice();
  replay = new Map(aParts.map((p) => [p, new Set()]));
  const expect = aParts.reduce((a, p) => a + hw.get(p), 0);
  for (const p of aParts) consumers[0].seek({ topic, partition: p, offset: '0' });
  const replayed = () => [...replay.values()].reduce((a, s) => a + s.size, 0);
  await until(`replay of ${expect} messages after seek`, () => replayed() === expect);
  ok('consumer.seek(0)', `A replayed ${replayed()} msgs of partitions [${aParts}]`);

  // 9. B leaves -> A takes everything; stop -> group empty
  const joinsBefore = joins[0];
  await consumers[1].disconnect();
  await until('A to own all 12 partitions again', () => joins[0] > joinsBefore && assignment[0].length === 12);
  await consumers[0].disconnect();
  const after = (await admin.describeGroups([groupId])).groups[0];
  assert(after.state === 'Empty', `group state after stop: ${after.state}`);
  ok('B left, rebalance back to A', `A=12/12; group ${after.state} after both stopped, committed sum ${await committedSum()}`);
}

const watchdog = setTimeout(() => {
  console.error('FAIL: smoke test exceeded 120s');
  process.exit(1);
}, 120000);

let failed = null;
try {
  await main();
} catch (e) {
  failed = e;
}
for (const c of consumers) await c.disconnect().catch(() => {});
await producer.disconnect().catch(() => {});
await admin.deleteTopics({ topics: [topic] }).catch(() => {});
await admin.deleteGroups([groupId]).catch(() => {});
await admin.disconnect().catch(() => {});
clearTimeout(watchdog);
const secs = ((Date.now() - started) / 1000).toFixed(1);
if (failed) {
  console.error(`FAIL after ${checks} ok checks (${secs}s): ${failed instanceof CheckFailed ? failed.message : failed.stack ?? failed}`);
  process.exit(1);
}
console.log(`SMOKE OK: ${checks} checks, kafkajs ${kafkajsVersion} against ${brokers.join(',')} in ${secs}s`);
