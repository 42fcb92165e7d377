/**
 * Checks that every hostile record of a topic is in its DLQ with the reason
 * its generator meant (the `x-chaos-expected-reason` header hostile.ts puts on
 * it, never the fold's own decision), its original bytes, and that nothing
 * meant to be valid is there.
 */
import { createKafka } from "../../src/adapters/kafka/client.js";
import { partitionOffsets } from "../../src/adapters/kafka/topics.js";
import type { Settings } from "../../src/config/settings.js";
import { DLQ_HEADERS, dlqTopic } from "../../src/fold/dead-letter.js";
import type { SourceRecord } from "../../src/fold/source-record.js";
import { setTimeout as sleep } from "node:timers/promises";
import { HOSTILE_CLASSES, HOSTILE_HEADERS } from "./hostile.js";

export interface DlqAudit {
  /** Distinct source records of the topic the DLQ holds (what the fold rejected). */
  rejected: number;
  /** Records of the topic the generator made invalid (they carry an intended reason). */
  intended: number;
  /** Intended ones found in the DLQ. */
  inDlq: number;
  /** Intended ones not in the DLQ. */
  missing: number;
  /** DLQ records of source records meant to be valid, or of no record of the topic. */
  unexpected: number;
  /** Intended ones whose `mufold-reason` is not the intended reason. */
  wrongReason: number;
  wrongBytes: number;
  duplicatesInDlq: number;
  /** `mufold-reason` of the intended ones found. */
  reasons: Record<string, number>;
  /** Generator class -> records of it in the DLQ with the intended reason. */
  classes: Record<string, number>;
  /** Classes of hostile.ts with no record in the DLQ under their intended reason. */
  unseenClasses: string[];
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

type Headers = SourceRecord["headers"];
/** One header's text; a header that appears more than once has no single meaning here, so it reads as absent. */
const header = (headers: Headers, name: string): string | undefined => {
  const v = headers?.[name];
  if (v === undefined || Array.isArray(v)) return undefined;
  return Buffer.isBuffer(v) ? v.toString("utf8") : v;
};
const empty = (b: Buffer | null) => b === null || b.length === 0;
const same = (a: Buffer | null, b: Buffer | null) => (empty(a) ? empty(b) : b !== null && a!.equals(b));

/** Whether a DLQ copy holds its source's key and value: whole, or as the cut-down form its `mufold-truncated` header declares. */
function sameBytes(copy: SourceRecord, source: SourceRecord): boolean {
  const cut = new Set((header(copy.headers, DLQ_HEADERS.truncated) ?? "").split(",").filter((s) => s !== ""));
  const valueOk = cut.has("value")
    ? empty(copy.value) && header(copy.headers, DLQ_HEADERS.originalValueBytes) === String(source.value?.length ?? 0)
    : same(copy.value, source.value);
  const keyOk = cut.has("key")
    ? copy.key !== null && source.key !== null && source.key.subarray(0, copy.key.length).equals(copy.key) && header(copy.headers, DLQ_HEADERS.originalKeyBytes) === String(source.key.length)
    : same(copy.key, source.key);
  return valueOk && keyOk;
}

/** The audit itself, on records already read: the topic's and its DLQ's. */
export function auditRecords(topicRecords: readonly SourceRecord[], dlqRecords: readonly SourceRecord[]): DlqAudit {
  const sources = new Map(topicRecords.map((r) => [`${r.partition}:${r.offset}`, r]));
  const intended = topicRecords.filter((r) => header(r.headers, HOSTILE_HEADERS.expectedReason) !== undefined);
  const audit: DlqAudit = {
    rejected: 0, intended: intended.length, inDlq: 0, missing: 0, unexpected: 0, wrongReason: 0, wrongBytes: 0, duplicatesInDlq: 0,
    reasons: {}, classes: {}, unseenClasses: [],
  };
  const found = new Set<string>();
  for (const d of dlqRecords) {
    const id = `${header(d.headers, DLQ_HEADERS.partition)}:${header(d.headers, DLQ_HEADERS.offset)}`;
    if (found.has(id)) {
      audit.duplicatesInDlq++; // at-least-once: a redelivered batch may dead-letter a record again
      continue;
    }
    found.add(id);
    audit.rejected++;
    const source = sources.get(id);
    const want = source === undefined ? undefined : header(source.headers, HOSTILE_HEADERS.expectedReason);
    if (source === undefined || want === undefined) {
      audit.unexpected++;
      continue;
    }
    audit.inDlq++;
    const reason = header(d.headers, DLQ_HEADERS.reason) ?? "";
    audit.reasons[reason] = (audit.reasons[reason] ?? 0) + 1;
    if (reason === want) {
      const cls = header(source.headers, HOSTILE_HEADERS.class) ?? "";
      audit.classes[cls] = (audit.classes[cls] ?? 0) + 1;
    } else {
      audit.wrongReason++;
    }
    if (!sameBytes(d, source)) audit.wrongBytes++;
  }
  audit.missing = intended.filter((r) => !found.has(`${r.partition}:${r.offset}`)).length;
  audit.unseenClasses = Object.keys(HOSTILE_CLASSES).filter((c) => (audit.classes[c] ?? 0) === 0);
  return audit;
}

/**
 * Reads the DLQ of `settings.topic` and audits it against the topic's records.
 * It also asserts that every class of hostile.ts reached the DLQ under its
 * intended reason at least once (throws, with the audit, otherwise): a run
 * whose traffic missed a class did not test that class.
 */
export async function auditDlq(settings: Settings, topicRecords: SourceRecord[], options: { requireEveryClass?: boolean } = {}): Promise<DlqAudit> {
  const audit = auditRecords(topicRecords, await readAll(settings, dlqTopic(settings.topic)));
  if ((options.requireEveryClass ?? true) && audit.unseenClasses.length > 0) {
    throw new Error(`DLQ audit: no record of hostile class(es) ${audit.unseenClasses.join(", ")} in the DLQ under its intended reason: ${JSON.stringify(audit)}`);
  }
  return audit;
}
