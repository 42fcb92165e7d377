/** Checks that every rejected record of a topic is in its DLQ with its reason and original bytes. */
import { createKafka } from "../../src/adapters/kafka/client.js";
import { partitionOffsets } from "../../src/adapters/kafka/topics.js";
import type { Settings } from "../../src/config.js";
import { decideRecord } from "../../src/fold/record-decision.js";
import { DLQ_HEADERS, dlqTopic, type SourceRecord } from "../../consumers/dlq.js";
import { sleep } from "../support/pipeline.js";

export interface DlqAudit {
  rejected: number;
  inDlq: number;
  missing: number;
  wrongReason: number;
  wrongBytes: number;
  duplicatesInDlq: number;
  reasons: Record<string, number>;
}

async function readAll(settings: Settings, topic: string): Promise<SourceRecord[]> {
  const kafka = createKafka({ brokers: settings.brokers, clientId: "mufold-dlq-audit" });
  const admin = kafka.admin();
  await admin.connect();
  const ends = await partitionOffsets(admin, topic);
  await admin.disconnect();
  const want = new Map(ends.map((e) => [e.partition, e.high]));
  const seen = new Map<number, bigint>();
  const out: SourceRecord[] = [];
  const consumer = kafka.consumer({ groupId: `${settings.group}.dlq-audit.${Date.now()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        if (BigInt(m.offset) >= (want.get(batch.partition) ?? 0n)) continue;
        out.push({ topic, partition: batch.partition, offset: m.offset, key: m.key, value: m.value, headers: m.headers });
        seen.set(batch.partition, BigInt(m.offset) + 1n);
      }
    },
  });
  while (![...want].every(([p, h]) => h === 0n || (seen.get(p) ?? 0n) >= h)) await sleep(100);
  await consumer.disconnect();
  return out;
}

const text = (v: unknown) => (v === undefined ? undefined : Buffer.isBuffer(v) ? v.toString() : Array.isArray(v) ? String(v[v.length - 1]) : String(v));

export async function auditDlq(settings: Settings, topicRecords: SourceRecord[]): Promise<DlqAudit> {
  const expected = new Map<string, { record: SourceRecord; reason: string }>();
  for (const r of topicRecords) {
    const d = decideRecord(r, { reducerVersion: settings.reducerVersion, maxValueBytes: settings.maxValueBytes });
    if (d.kind === "reject") expected.set(`${r.partition}:${r.offset}`, { record: r, reason: d.reason });
  }
  const dlq = await readAll(settings, dlqTopic(settings.topic));
  const audit: DlqAudit = { rejected: expected.size, inDlq: 0, missing: 0, wrongReason: 0, wrongBytes: 0, duplicatesInDlq: 0, reasons: {} };
  const found = new Set<string>();
  for (const d of dlq) {
    const id = `${text(d.headers?.[DLQ_HEADERS.partition])}:${text(d.headers?.[DLQ_HEADERS.offset])}`;
    if (found.has(id)) {
      audit.duplicatesInDlq++; // at-least-once: a redelivered batch may dead-letter a record again
      continue;
    }
    found.add(id);
    const want = expected.get(id);
    if (want === undefined) continue;
    audit.inDlq++;
    const reason = text(d.headers?.[DLQ_HEADERS.reason]) ?? "";
    audit.reasons[reason] = (audit.reasons[reason] ?? 0) + 1;
    if (reason !== want.reason) audit.wrongReason++;
    const same = (a: Buffer | null, b: Buffer | null) => (a === null || a.length === 0 ? b === null || b.length === 0 : b !== null && a.equals(b));
    if (!same(d.value, want.record.value) || !same(d.key, want.record.key)) audit.wrongBytes++;
  }
  audit.missing = [...expected.keys()].filter((k) => !found.has(k)).length;
  return audit;
}
