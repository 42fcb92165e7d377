/**
 * Foreign clients for the interoperability tests: confluent-kafka (librdkafka)
 * and redis-py + loopx in <repo>/.cache/foreign-venv, and kcat from Debian, all
 * installed by scripts/setup-foreign.sh. Helpers run them as child processes
 * (asynchronously, so an in-process fold worker keeps its heartbeats).
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import kafkajs from "kafkajs";
import { createKafka, registerZstd } from "../../../src/adapters/kafka/client.js";
import { ensureTopics, partitionOffsets, type TopicSpec } from "../../../src/adapters/kafka/topics.js";

const { CompressionCodecs, CompressionTypes, Partitioners } = kafkajs;

const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = resolve(HERE, "..", "..", "..");
export const SETUP_SCRIPT = join(REPO_ROOT, "scripts", "setup-foreign.sh");
const CONFLUENT_PRODUCE = join(HERE, "confluent_produce.py");
const READ_VALIDATE = join(HERE, "read_validate.py");

export interface ForeignClients {
  /** python3.11 of .cache/foreign-venv (loopx, redis-py, confluent-kafka). */
  python: string;
  /** Absolute path of kcat. */
  kcat: string;
}

let clients: ForeignClients | undefined;

/**
 * Install (idempotently) and locate the foreign clients. Throws an error that
 * says what is missing and how to get it: the tests fail, they never skip.
 */
export function ensureForeignClients(): ForeignClients {
  if (clients) return clients;
  let python: string;
  try {
    python = execFileSync("bash", [SETUP_SCRIPT], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 280_000 }).trim().split("\n").pop()!;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(
      "The foreign-client tests need kcat (Debian package) and a python3.11 venv with loopx, redis-py and confluent-kafka;\n" +
        `${SETUP_SCRIPT} could not install them:\n  ${(e.stderr || e.message).trim().split("\n").slice(-15).join("\n  ")}`,
    );
  }
  const kcat = kcatOnPath();
  if (kcat === null) throw new Error(`${SETUP_SCRIPT} finished but kcat is not on PATH`);
  clients = { python, kcat };
  return clients;
}

/** Absolute path of the kcat on PATH, or null. */
export function kcatOnPath(): string | null {
  try {
    return execFileSync("sh", ["-c", "command -v kcat"], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
}

export interface RunResult {
  stdout: Buffer;
  stderr: string;
}

/** Run a command to completion; rejects with its stderr when it exits non-zero or times out. */
export function run(cmd: string, args: readonly string[], options: { input?: string | Buffer; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 90_000);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} could not start: ${e.message}`));
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString("utf8");
      if (code === 0) resolvePromise({ stdout: Buffer.concat(out), stderr });
      else reject(new Error(`${cmd} ${args.join(" ")} failed (${signal ?? `exit ${code}`}):\n${stderr.trim()}`));
    });
    child.stdin.on("error", () => undefined); // the process may exit before reading everything; its exit code tells
    child.stdin.end(options.input ?? "");
  });
}

export function jsonLines<T>(buf: Buffer): T[] {
  return buf
    .toString("utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);
}

/** A temporary directory removed by the returned cleanup. */
export function tempDir(): { dir: string; cleanup: () => Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), "mufold-foreign-"));
  return { dir, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
}

export interface DeliveryReport {
  i: number;
  key: string | null;
  partition: number;
  offset: number;
}

export type ConfluentInput =
  | { mode: "observations"; lines: readonly string[] }
  | { mode: "records"; records: readonly { key: string | null; value: string; headers?: Record<string, string> }[] };

/**
 * Produce with confluent-kafka (librdkafka), zstd. Observations are passed as
 * their JSON text (one line each) and the Python side computes the scope key.
 * `partitioner` undefined = librdkafka's default (consistent_random).
 */
export async function confluentProduce(c: ForeignClients, options: { brokers: readonly string[]; topic: string; input: ConfluentInput; partitioner?: string }): Promise<DeliveryReport[]> {
  const tmp = tempDir();
  try {
    const file = join(tmp.dir, "input.jsonl");
    const text = options.input.mode === "observations" ? options.input.lines.join("\n") : options.input.records.map((r) => JSON.stringify(r)).join("\n");
    writeFileSync(file, text + "\n");
    const args = [CONFLUENT_PRODUCE, "--brokers", options.brokers.join(","), "--topic", options.topic, "--input", file, "--mode", options.input.mode, "--compression", "zstd"];
    if (options.partitioner !== undefined) args.push("--partitioner", options.partitioner);
    return jsonLines<DeliveryReport>((await run(c.python, args)).stdout);
  } finally {
    await tmp.cleanup();
  }
}

export interface ValidatedPacket {
  identity: string;
  ok: boolean;
  error?: string;
  identity_matches: boolean;
  packet_b64: string | null;
}

export interface ValidationSummary {
  generation: number;
  identities: number;
  accepted: number;
  rejected: number;
  control_rejected: boolean | null;
}

/** redis-py reads every packet of the prefix with FCALL_RO and loopx validates it (read_validate.py). */
export async function readAndValidateInPython(c: ForeignClients, options: { redisUrl: string; prefix: string }): Promise<{ packets: ValidatedPacket[]; summary: ValidationSummary }> {
  const child = spawn(c.python, [READ_VALIDATE, "--redis-url", options.redisUrl, "--prefix", options.prefix], { stdio: ["ignore", "pipe", "pipe"] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on("data", (b: Buffer) => out.push(b));
  child.stderr.on("data", (b: Buffer) => err.push(b));
  const code = await new Promise<number | null>((r) => child.on("close", (c2) => r(c2)));
  // Exit 1 only means "some packet was rejected": the lines say which, and the test asserts on them.
  if (code !== 0 && code !== 1) throw new Error(`read_validate.py failed (exit ${code}):\n${Buffer.concat(err).toString("utf8").trim()}`);
  const lines = jsonLines<ValidatedPacket | { summary: ValidationSummary }>(Buffer.concat(out));
  const last = lines.pop();
  if (last === undefined || !("summary" in last)) throw new Error(`read_validate.py printed no summary:\n${Buffer.concat(err).toString("utf8").trim()}`);
  return { packets: lines as ValidatedPacket[], summary: last.summary };
}

/** The partition kafkajs's default (Java-compatible murmur2) partitioner picks for a key. */
export function kafkajsPartition(key: string, numPartitions: number): number {
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: numPartitions }, (_, partitionId) => ({ partitionErrorCode: 0, partitionId, leader: 1, replicas: [1], isr: [1] }));
  return partitioner({ topic: "any", partitionMetadata, message: { key, value: null } });
}

export interface ZstdCounter {
  readonly compressed: number;
  readonly decompressed: number;
  restore(): void;
}

/**
 * Count zstd batches kafkajs compresses and decompresses in this process (the
 * in-process fold worker included): proof that batches really were zstd.
 */
export function trackZstd(): ZstdCounter {
  registerZstd(); // so that a later createKafka() does not replace the wrapper
  const codecs = CompressionCodecs as unknown as Record<number, () => { compress(e: unknown): Promise<Buffer>; decompress(b: Buffer): Promise<Buffer> }>;
  const original = codecs[CompressionTypes.ZSTD]!;
  const counts = { compressed: 0, decompressed: 0 };
  codecs[CompressionTypes.ZSTD] = () => {
    const codec = original();
    return {
      compress: async (e: unknown) => {
        counts.compressed++;
        return codec.compress(e);
      },
      decompress: async (b: Buffer) => {
        counts.decompressed++;
        return codec.decompress(b);
      },
    };
  };
  return {
    get compressed() {
      return counts.compressed;
    },
    get decompressed() {
      return counts.decompressed;
    },
    restore: () => {
      codecs[CompressionTypes.ZSTD] = original;
    },
  };
}

export async function createTopics(brokers: readonly string[], specs: readonly TopicSpec[]): Promise<void> {
  const admin = createKafka({ brokers: [...brokers], clientId: "mufold-test-foreign" }).admin();
  await admin.connect();
  try {
    await ensureTopics(admin, specs);
  } finally {
    await admin.disconnect();
  }
}

export async function deleteTopics(brokers: readonly string[], topics: readonly string[]): Promise<void> {
  const admin = createKafka({ brokers: [...brokers], clientId: "mufold-test-foreign" }).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const doomed = topics.filter((t) => existing.has(t));
    if (doomed.length) await admin.deleteTopics({ topics: doomed, timeout: 10_000 });
  } finally {
    await admin.disconnect();
  }
}

/** Records on a topic (sum of end offsets; topics here are never truncated). */
export async function recordCount(brokers: readonly string[], topic: string): Promise<bigint> {
  const admin = createKafka({ brokers: [...brokers], clientId: "mufold-test-foreign" }).admin();
  await admin.connect();
  try {
    return (await partitionOffsets(admin, topic)).reduce((a, p) => a + p.high - p.low, 0n);
  } finally {
    await admin.disconnect();
  }
}

export interface ReadBackRecord {
  partition: number;
  offset: string;
  key: string | null;
  value: string | null;
  headers: Record<string, string>;
}

/** Read `count` records of a topic from the beginning with a kafkajs consumer (its own group). */
export async function consumeAll(brokers: readonly string[], topic: string, groupId: string, count: number, timeoutMs = 60_000): Promise<ReadBackRecord[]> {
  const consumer = createKafka({ brokers: [...brokers], clientId: "mufold-test-foreign" }).consumer({ groupId, maxWaitTimeInMs: 100 });
  const records: ReadBackRecord[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = String(Array.isArray(v) ? v[0] : v);
        records.push({ partition, offset: message.offset, key: message.key?.toString("utf8") ?? null, value: message.value?.toString("utf8") ?? null, headers });
        if (records.length >= count) done();
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((_, reject) => (timer = setTimeout(() => reject(new Error(`read ${records.length} of ${count} records of ${topic} in ${timeoutMs} ms`)), timeoutMs)));
    try {
      await Promise.race([finished, timeout]);
    } finally {
      clearTimeout(timer);
    }
    return records;
  } finally {
    await consumer.disconnect();
  }
}
