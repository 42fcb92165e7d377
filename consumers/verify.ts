/**
 * Compare two generations identity by identity. Verification passes only on
 * what it compared: every identity of either side must exist on both, with
 * equal watermarks and byte-equal packets, and both generations must have
 * folded the same log (equal partition origins). Anything it could not
 * compare is a failure with a reason; it never passes by default.
 */
import type { RedisStore } from "../src/adapters/redis/store.js";

export type VerifyFailureReason =
  | "bytes_differ"
  | "watermarks_differ"
  | "only_in_live"
  | "only_in_rebuilt"
  | "no_live_generation"
  | "reducer_version_differs"
  | "topic_origin_differs";

export interface VerifyFailure {
  reason: VerifyFailureReason;
  identity?: string;
  detail?: string;
}

export interface VerifyReport {
  /** True only when every identity was compared and found byte-equal. */
  ok: boolean;
  identities: number;
  compared: number;
  mismatches: number;
  /** Identities that could not be compared (watermarks differ, or on one side only). */
  notComparable: number;
  mismatchedIdentities: string[];
  /** Why it failed; the first 100 per-identity failures plus every generation-level one. */
  failures: VerifyFailure[];
}

const MAX_LISTED = 100;

function watermarks(meta: Record<string, string>): string {
  return Object.keys(meta)
    .filter((k) => k.startsWith("w:"))
    .sort()
    .map((k) => `${k}=${meta[k]}`)
    .join(",");
}

/** A report that failed before comparing anything (no live generation, another reducer version, …). */
export function failedReport(failure: VerifyFailure): VerifyReport {
  return { ok: false, identities: 0, compared: 0, mismatches: 0, notComparable: 0, mismatchedIdentities: [], failures: [failure] };
}

/** Partitions (`<topic>:<partition>`) whose record at offset 0 differs between the two generations: they folded different logs. */
export async function differingOrigins(store: RedisStore, live: number, rebuilt: number): Promise<string[]> {
  const [liveOrigins, rebuiltOrigins] = await Promise.all([store.generationFields(live, "origin"), store.generationFields(rebuilt, "origin")]);
  return [...rebuiltOrigins].filter(([partition, fingerprint]) => (liveOrigins.get(partition) ?? fingerprint) !== fingerprint).map(([partition]) => partition);
}

export async function verifyGenerations(store: RedisStore, live: number, rebuilt: number): Promise<VerifyReport> {
  const report: VerifyReport = { ok: false, identities: 0, compared: 0, mismatches: 0, notComparable: 0, mismatchedIdentities: [], failures: [] };
  for (const partition of await differingOrigins(store, live, rebuilt)) {
    report.failures.push({ reason: "topic_origin_differs", detail: `partition ${partition}: the live generation folded another log (topic recreated or truncated)` });
  }
  const [liveIds, rebuiltIds] = await Promise.all([store.listIdentities(live), store.listIdentities(rebuilt)]);
  const inLive = new Set(liveIds);
  const inRebuilt = new Set(rebuiltIds);
  const ids = [...new Set([...liveIds, ...rebuiltIds])].sort();
  report.identities = ids.length;
  const fail = (f: VerifyFailure) => {
    if (report.failures.length < MAX_LISTED) report.failures.push(f);
  };
  for (let i = 0; i < ids.length; i += 100) {
    await Promise.all(
      ids.slice(i, i + 100).map(async (id) => {
        if (!inLive.has(id) || !inRebuilt.has(id)) {
          report.notComparable++;
          fail({ reason: inLive.has(id) ? "only_in_live" : "only_in_rebuilt", identity: id });
          return;
        }
        const [a, b] = await Promise.all([store.meta(live, id), store.meta(rebuilt, id)]);
        const [wa, wb] = [watermarks(a), watermarks(b)];
        if (wa !== wb) {
          report.notComparable++;
          fail({ reason: "watermarks_differ", identity: id, detail: `live ${wa || "none"}; rebuilt ${wb || "none"}` });
          return;
        }
        report.compared++;
        const [pa, pb] = await Promise.all([store.read(live, id), store.read(rebuilt, id)]);
        if (pa === null || pb === null || pa !== pb) {
          report.mismatches++;
          report.mismatchedIdentities.push(id);
          fail({ reason: "bytes_differ", identity: id });
        }
      }),
    );
  }
  report.mismatchedIdentities.sort();
  report.ok = report.failures.length === 0 && report.mismatches === 0 && report.notComparable === 0;
  return report;
}
