/** Decide every record of a batch and group the accepted ones by reducer identity. */
import { decideRecord, type DecisionOptions, type DlqReason } from "./record-decision.js";
import type { IdentityBatch } from "./identity-applier.js";
import type { SourceRecord } from "./dead-letter.js";

export interface RoutedBatch {
  identities: IdentityBatch[];
  rejected: { record: SourceRecord; reason: DlqReason; detail: string }[];
  accepted: number;
}

export function routeRecords(records: readonly SourceRecord[], options: DecisionOptions): RoutedBatch {
  const byIdentity = new Map<string, IdentityBatch>();
  const rejected: RoutedBatch["rejected"] = [];
  let accepted = 0;
  for (const record of records) {
    const decision = decideRecord(record, options);
    if (decision.kind === "reject") {
      rejected.push({ record, reason: decision.reason, detail: decision.detail });
      continue;
    }
    accepted++;
    let batch = byIdentity.get(decision.identity);
    if (batch === undefined) {
      batch = { identity: decision.identity, context: decision.context, deliveries: [] };
      byIdentity.set(decision.identity, batch);
    }
    batch.deliveries.push({
      observation: decision.observation,
      fingerprint: decision.fingerprint,
      topic: record.topic,
      partition: record.partition,
      offset: BigInt(record.offset),
    });
  }
  return { identities: [...byIdentity.values()], rejected, accepted };
}
