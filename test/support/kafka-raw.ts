/**
 * Two Kafka requests spoken directly (no client library): Produce v3 of a
 * prepared record batch, and Fetch v4 reading a partition's batch headers.
 * Tests use them to put batches on the log that no client writes, and to see
 * which codec each batch on the log really carries.
 */
import { connect, type Socket } from "node:net";
import { createKafka } from "../../src/adapters/kafka/client.js";

interface Leader {
  host: string;
  port: number;
}

async function leaderOf(brokers: readonly string[], topic: string, partition: number): Promise<Leader> {
  const admin = createKafka({ brokers: [...brokers], clientId: "mufold-test-raw" }).admin();
  await admin.connect();
  try {
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    const leader = metadata.topics[0]?.partitions.find((p) => p.partitionId === partition)?.leader;
    const broker = (await admin.describeCluster()).brokers.find((b) => b.nodeId === leader);
    if (broker === undefined) throw new Error(`no leader for ${topic}[${partition}]`);
    return { host: broker.host, port: broker.port };
  } finally {
    await admin.disconnect();
  }
}

const str = (s: string) => {
  const b = Buffer.alloc(2 + Buffer.byteLength(s));
  b.writeInt16BE(Buffer.byteLength(s), 0);
  b.write(s, 2);
  return b;
};
const i8 = (n: number) => Buffer.from([n & 0xff]);
const i16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const i32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const i64 = (n: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(n);
  return b;
};

/** One request, one response (request header v1; the response body after its correlation id). */
async function roundTrip(leader: Leader, apiKey: number, apiVersion: number, body: Buffer): Promise<Buffer> {
  const socket: Socket = connect(leader.port, leader.host);
  try {
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    const request = Buffer.concat([i16(apiKey), i16(apiVersion), i32(1), str("mufold-test-raw"), body]);
    socket.write(Buffer.concat([i32(request.length), request]));
    const chunks: Buffer[] = [];
    let total = 0;
    return await new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no response from the broker in 30 s")), 30_000);
      socket.on("error", reject);
      socket.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        total += chunk.length;
        const all = Buffer.concat(chunks, total);
        if (all.length >= 4 && all.length >= 4 + all.readInt32BE(0)) {
          clearTimeout(timer);
          resolve(all.subarray(8, 4 + all.readInt32BE(0)));
        }
      });
    });
  } finally {
    socket.destroy();
  }
}

/** Produce one prepared record batch (acks=all); returns the offset the broker gave its first record. */
export async function produceRawBatch(brokers: readonly string[], topic: string, partition: number, batch: Buffer): Promise<bigint> {
  const leader = await leaderOf(brokers, topic, partition);
  const body = Buffer.concat([i16(-1), i16(-1), i32(30_000), i32(1), str(topic), i32(1), i32(partition), i32(batch.length), batch]);
  const response = await roundTrip(leader, 0, 3, body);
  // [topics: name, [partitions: index, error_code, base_offset, log_append_time]], throttle_time
  let pos = 4;
  pos += 2 + response.readInt16BE(pos) + 4 + 4;
  const errorCode = response.readInt16BE(pos);
  if (errorCode !== 0) throw new Error(`produce to ${topic}[${partition}] failed: Kafka error code ${errorCode}`);
  return response.readBigInt64BE(pos + 2);
}

export interface BatchHeader {
  baseOffset: bigint;
  /** Offset after the batch's last record. */
  nextOffset: bigint;
  /** attributes & 7. */
  codec: number;
  transactional: boolean;
  control: boolean;
  count: number;
}

/** The header of every record batch of a partition up to its high watermark (read_uncommitted). */
export async function batchHeaders(brokers: readonly string[], topic: string, partition: number): Promise<BatchHeader[]> {
  const leader = await leaderOf(brokers, topic, partition);
  const out: BatchHeader[] = [];
  for (let offset = 0n; ; ) {
    const body = Buffer.concat([i32(-1), i32(100), i32(1), i32(8 << 20), i8(0), i32(1), str(topic), i32(1), i32(partition), i64(offset), i32(8 << 20)]);
    const r = await roundTrip(leader, 1, 4, body);
    // throttle, [responses: topic, [partitions: index, error, high watermark, last stable, aborted[], records]]
    let pos = 4 + 4;
    pos += 2 + r.readInt16BE(pos) + 4 + 4;
    const errorCode = r.readInt16BE(pos);
    if (errorCode !== 0) throw new Error(`fetch of ${topic}[${partition}] failed: Kafka error code ${errorCode}`);
    const high = r.readBigInt64BE(pos + 2);
    pos += 2 + 8 + 8;
    const aborted = r.readInt32BE(pos);
    pos += 4 + Math.max(0, aborted) * 16;
    const size = r.readInt32BE(pos);
    pos += 4;
    const end = pos + Math.max(0, size);
    const before = out.length;
    while (end - pos >= 61) {
      const length = r.readInt32BE(pos + 8);
      if (pos + 12 + length > end) break; // a partial batch at the end of the response
      const attributes = r.readInt16BE(pos + 21);
      const baseOffset = r.readBigInt64BE(pos);
      const nextOffset = baseOffset + BigInt(r.readInt32BE(pos + 23)) + 1n;
      if (nextOffset > offset) out.push({ baseOffset, nextOffset, codec: attributes & 7, transactional: (attributes & 0x10) !== 0, control: (attributes & 0x20) !== 0, count: r.readInt32BE(pos + 57) });
      pos += 12 + length;
    }
    if (out.length > before) offset = out[out.length - 1]!.nextOffset;
    if (offset >= high) return out;
    if (out.length === before) throw new Error(`fetch of ${topic}[${partition}] at ${offset} returned no whole batch (high watermark ${high})`);
  }
}
