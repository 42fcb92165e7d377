#!/usr/bin/env node
// Kafka readiness probe used by infra/kafka/start.sh and infra/status.sh.
//
//   node infra/kafka/ready.mjs [--brokers 127.0.0.1:9092] [--timeout-ms 60000] [--pid N] [--warm 1]
//
// Ready = the broker answers real requests: with the repo's kafkajs (node_modules)
// it connects an admin client (ApiVersions + Metadata), describeCluster and
// listTopics. Without node_modules it falls back to a raw ApiVersions v0 exchange
// (needs no dependency). Retries until the deadline; stops early if --pid dies.
// --warm 1 (kafkajs only, used right after a start): also create the internal
// __consumer_offsets / transaction-state partitions now (FindCoordinator and an
// idempotent producer's InitProducerId), so the first test does not pay for it
// or see "coordinator is loading" retries.
// Exit codes: 0 ready, 1 timed out, 2 broker process exited.
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const opts = { brokers: '127.0.0.1:9092', 'timeout-ms': '60000', pid: '', warm: '' };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  if (!(k in opts)) {
    console.error(`unknown option ${process.argv[i]}`);
    process.exit(64);
  }
  opts[k] = process.argv[i + 1] ?? '';
}
const brokers = opts.brokers.split(',');
const deadline = Date.now() + Number(opts['timeout-ms']);
const pid = opts.pid ? Number(opts.pid) : 0;

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
let kafkajs = null;
try {
  kafkajs = createRequire(path.join(repoRoot, 'package.json'))('kafkajs');
} catch {
  kafkajs = null;
}

async function probeKafkajs() {
  const kafka = new kafkajs.Kafka({
    clientId: 'mufold-infra-ready',
    brokers,
    logLevel: kafkajs.logLevel.NOTHING,
    connectionTimeout: 1000,
    requestTimeout: 5000,
    retry: { retries: 0 },
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    const topics = await admin.listTopics();
    if (cluster.brokers.length === 0) throw new Error('metadata lists no broker yet');
    return `kafkajs admin ok: cluster ${cluster.clusterId}, ${cluster.brokers.length} broker(s), controller ${cluster.controller}, ${topics.length} topic(s)`;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

function probeRaw() {
  const [host, port] = brokers[0].split(':');
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host, port: Number(port) });
    const clientId = Buffer.from('mufold-infra-ready');
    const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length);
    body.writeInt16BE(18, 0); // ApiVersions
    body.writeInt16BE(0, 2); // v0
    body.writeInt32BE(7, 4); // correlation id
    body.writeInt16BE(clientId.length, 8);
    clientId.copy(body, 10);
    const size = Buffer.alloc(4);
    size.writeInt32BE(body.length, 0);
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error('ApiVersions timed out'));
    }, 3000);
    sock.on('connect', () => sock.write(Buffer.concat([size, body])));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length < 4 || buf.length < 4 + buf.readInt32BE(0)) return;
      clearTimeout(timer);
      sock.destroy();
      const err = buf.readInt16BE(8);
      if (err !== 0) return reject(new Error(`ApiVersions error code ${err}`));
      resolve(`ApiVersions ok: ${buf.readInt32BE(10)} APIs (raw probe; kafkajs not installed)`);
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

async function warm() {
  const t0 = Date.now();
  const kafka = new kafkajs.Kafka({ clientId: 'mufold-infra-warmup', brokers, logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer({ idempotent: true });
  try {
    await admin.connect();
    await admin.describeGroups(['mufold-infra-warmup']);
    await producer.connect();
  } finally {
    await producer.disconnect().catch(() => {});
    await admin.disconnect().catch(() => {});
  }
  return `coordinators warmed in ${Date.now() - t0} ms`;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function alive(p) {
  try {
    process.kill(p, 0);
    return true;
  } catch {
    return false;
  }
}

let lastErr = 'no attempt';
for (;;) {
  if (pid && !alive(pid)) {
    console.error(`broker process ${pid} exited (last probe error: ${lastErr})`);
    process.exit(2);
  }
  try {
    const msg = await (kafkajs ? probeKafkajs() : probeRaw());
    console.log(opts.warm && kafkajs ? `${msg}; ${await warm()}` : msg);
    process.exit(0);
  } catch (e) {
    lastErr = e?.message ?? String(e);
  }
  if (Date.now() >= deadline) {
    console.error(`not ready before deadline: ${lastErr}`);
    process.exit(1);
  }
  await sleep(250);
}
