/**
 * Compare two generations identity by identity. Verification passes only on
 * what it compared: every identity of either side must exist on both, with
 * equal watermarks and byte-equal packets, and both generations must have
 * folded the same log (equal partition origins). Anything it could not
 * compare is a failure with a reason; it never passes by default. An identity
 * whose live watermarks are all at or below the rebuilt ones (some below) is
 * `behind_in_live`: the live side lacks records the rebuild folded, counted
 * with those it lacks entirely as `missingInLive`. Given a
 * VerifyDetails, it also keeps the per-identity results and the bytes around
 * each mismatch's first difference (for `replay --verify --report`), from the
 * packets it read for the comparison: nothing is read twice.
 */
import type { RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import type { ControlStore } from "../../src/fold/control-store.js";
import { WATERMARK_PREFIX } from "../../src/fold/stored-names.js";
import { behindDetails, type VerifyCoverage } from "./coverage.js";

export type VerifyFailureReason =
  | "bytes_differ"
  | "watermarks_differ"
  | "behind_in_live"
  | "only_in_live"
  | "only_in_rebuilt"
  | "behind_log"
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
  /** Of those not comparable: identities only the live generation holds, and only the rebuilt one. */
  onlyInLive: number;
  onlyInRebuilt: number;
  /** Of those not comparable: identities on both sides whose live watermarks are behind the rebuilt ones. */
  behindInLive: number;
  /** Identities the live generation lacks records of: onlyInRebuilt + behindInLive. */
  missingInLive: number;
  mismatchedIdentities: string[];
  /** Why it failed; the first 100 per-identity failures plus every generation-level one. */
  failures: VerifyFailure[];
}

/** What verify found for one identity. */
export type IdentityStatus = "equal" | Exclude<VerifyFailureReason, "behind_log" | "no_live_generation" | "reducer_version_differs" | "topic_origin_differs">;

/** Where two packets first differ, with the bytes around that offset on both sides. */
export interface ByteDifference {
  /** Offset of the first differing byte (UTF-8 bytes of the packets); the shorter one's length when it is a prefix of the other. */
  offset: number;
  /** Lengths in bytes; null when that side has no packet (listed in the index, but nothing to read). */
  liveLength: number | null;
  rebuiltLength: number | null;
  /** Offset of the first byte of both windows. */
  start: number;
  /** Bytes from `start` of each side, up to the window's end (fewer where a packet ends). */
  live: Uint8Array;
  rebuilt: Uint8Array;
}

export interface IdentityResult {
  identity: string;
  status: Exclude<IdentityStatus, "equal">;
  detail?: string;
  /** bytes_differ only, for the first `maxDifferences` of them. */
  difference?: ByteDifference;
}

/** Bytes each window shows before the first differing byte, and after it. */
export const DIFFERENCE_CONTEXT = 32;

/** The offset of the first byte where `a` and `b` differ; -1 when they are equal. */
export function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

/** The first difference of two packets (null: no packet) and the bytes around it; undefined when they are equal. */
export function byteDifference(live: string | null, rebuilt: string | null, context = DIFFERENCE_CONTEXT): ByteDifference | undefined {
  const a = Buffer.from(live ?? "", "utf8");
  const b = Buffer.from(rebuilt ?? "", "utf8");
  const offset = firstDifference(a, b);
  if (offset < 0 && live !== null && rebuilt !== null) return undefined;
  const at = Math.max(0, offset);
  const start = Math.max(0, at - context);
  const end = at + context + 1;
  return { offset: at, liveLength: live === null ? null : a.length, rebuiltLength: rebuilt === null ? null : b.length, start, live: a.subarray(start, end), rebuilt: b.subarray(start, end) };
}

function describeDifference(d: ByteDifference): string {
  const length = (n: number | null) => (n === null ? "no packet" : `${n} bytes`);
  return `first differing byte at offset ${d.offset} (live ${length(d.liveLength)}, rebuilt ${length(d.rebuiltLength)})`;
}

/**
 * Per-identity results of one verify, for a report a person reads (`replay --verify --report`). Bounded: every
 * identity that is not equal (with the bytes around the first difference for the first `maxDifferences` of them),
 * and of the equal ones a count and the first `maxEqualListed` by identity.
 */
export class VerifyDetails {
  equal = 0;
  readonly equalListed: string[] = [];
  readonly notEqual: IdentityResult[] = [];
  /** bytes_differ results kept without their bytes (past `maxDifferences`). */
  differencesOmitted = 0;
  private differences = 0;

  constructor(
    readonly maxEqualListed = 200,
    readonly maxDifferences = 1000,
  ) {}

  /** Whether the next bytes_differ result keeps its bytes (so verify computes them only then). */
  wantsDifference(): boolean {
    return this.differences < this.maxDifferences;
  }

  record(result: IdentityResult | { identity: string; status: "equal" }): void {
    if (result.status === "equal") {
      this.equal++;
      if (this.equalListed.length < this.maxEqualListed) this.equalListed.push(result.identity);
      return;
    }
    if (result.status === "bytes_differ") {
      if (result.difference !== undefined) this.differences++;
      else this.differencesOmitted++;
    }
    this.notEqual.push(result);
  }
}

const MAX_LISTED = 100;

function watermarks(meta: Record<string, string>): Map<string, string> {
  return new Map(
    Object.keys(meta)
      .filter((k) => k.startsWith(WATERMARK_PREFIX))
      .sort()
      .map((k): [string, string] => [k, meta[k]!]),
  );
}

const shown = (w: ReadonlyMap<string, string>) => [...w].map(([k, v]) => `${k}=${v}`).join(",");
const offset = (v: string | undefined): bigint | null => (v !== undefined && /^\d+$/.test(v) ? BigInt(v) : null);

/**
 * The live watermarks differ from the rebuilt ones only by being lower: each live one at or below the rebuilt one
 * of its partition, the rebuilt side possibly holding more partitions. The live side then lacks records.
 */
export function liveBehind(live: ReadonlyMap<string, string>, rebuilt: ReadonlyMap<string, string>): boolean {
  if (shown(live) === shown(rebuilt)) return false;
  for (const [k, v] of live) {
    const [a, b] = [offset(v), offset(rebuilt.get(k))];
    if (a === null || b === null || a > b) return false;
  }
  return true;
}

function emptyReport(): VerifyReport {
  return { ok: false, identities: 0, compared: 0, mismatches: 0, notComparable: 0, onlyInLive: 0, onlyInRebuilt: 0, behindInLive: 0, missingInLive: 0, mismatchedIdentities: [], failures: [] };
}

/** A report that failed before comparing anything (no live generation, another reducer version, …). */
export function failedReport(failure: VerifyFailure): VerifyReport {
  return { ...emptyReport(), failures: [failure] };
}

/**
 * Add generation-level failures found outside the identity comparison (the
 * live generation behind the log, a truncated topic), first: they say why the
 * identities differ. Any failure fails the report.
 */
export function withFailures(report: VerifyReport, failures: readonly VerifyFailure[]): VerifyReport {
  return failures.length === 0 ? report : { ...report, ok: false, failures: [...failures, ...report.failures] };
}

/** One `behind_log` failure per partition the live generation's mark is behind the rebuild's target. */
export function coverageFailures(coverage: VerifyCoverage): VerifyFailure[] {
  return behindDetails(coverage).map((detail) => ({ reason: "behind_log", detail }));
}

/** Partitions (`<topic>:<partition>`) whose record at offset 0 differs between the two generations: they folded different logs. */
export async function differingOrigins(control: Pick<ControlStore, "generationFields">, live: number, rebuilt: number): Promise<string[]> {
  const [liveOrigins, rebuiltOrigins] = await Promise.all([control.generationFields(live, "origin"), control.generationFields(rebuilt, "origin")]);
  return [...rebuiltOrigins].filter(([partition, fingerprint]) => (liveOrigins.get(partition) ?? fingerprint) !== fingerprint).map(([partition]) => partition);
}

/** What verify reads: each generation's identities (index, meta, packets) and its origins (the control store). */
export interface VerifyStores {
  identities: Pick<RedisIdentityStore, "listIdentities" | "meta" | "read">;
  control: Pick<ControlStore, "generationFields">;
}

type Comparison =
  | { status: "equal" | "only_in_live" | "only_in_rebuilt" }
  | { status: "watermarks_differ" | "behind_in_live"; detail: string }
  | { status: "bytes_differ"; live: string | null; rebuilt: string | null };

/** One identity: on both sides, with equal watermarks, then the packets (each read once). */
async function compareIdentity(store: VerifyStores["identities"], live: number, rebuilt: number, id: string, inLive: boolean, inRebuilt: boolean): Promise<Comparison> {
  if (!inLive || !inRebuilt) return { status: inLive ? "only_in_live" : "only_in_rebuilt" };
  const [a, b] = await Promise.all([store.meta(live, id), store.meta(rebuilt, id)]);
  const [wa, wb] = [watermarks(a), watermarks(b)];
  if (shown(wa) !== shown(wb)) return { status: liveBehind(wa, wb) ? "behind_in_live" : "watermarks_differ", detail: `live ${shown(wa) || "none"}; rebuilt ${shown(wb) || "none"}` };
  const [pa, pb] = await Promise.all([store.read(live, id), store.read(rebuilt, id)]);
  return pa === null || pb === null || pa !== pb ? { status: "bytes_differ", live: pa, rebuilt: pb } : { status: "equal" };
}

/**
 * Compare every identity of the two generations, 100 at a time. Results are taken in identity order, so the
 * failures listed (and `details`, when given) are the same on every run.
 */
export async function verifyGenerations(stores: VerifyStores, live: number, rebuilt: number, details?: VerifyDetails): Promise<VerifyReport> {
  const store = stores.identities;
  const report = emptyReport();
  for (const partition of await differingOrigins(stores.control, live, rebuilt)) {
    report.failures.push({ reason: "topic_origin_differs", detail: `partition ${partition}: the live generation folded another log (topic recreated or truncated)` });
  }
  const [liveIds, rebuiltIds] = await Promise.all([store.listIdentities(live), store.listIdentities(rebuilt)]);
  const inLive = new Set(liveIds);
  const inRebuilt = new Set(rebuiltIds);
  const ids = [...new Set([...liveIds, ...rebuiltIds])].sort();
  report.identities = ids.length;
  for (let i = 0; i < ids.length; i += 100) {
    const chunk = ids.slice(i, i + 100);
    const results = await Promise.all(chunk.map((id) => compareIdentity(store, live, rebuilt, id, inLive.has(id), inRebuilt.has(id))));
    results.forEach((r, k) => {
      const identity = chunk[k]!;
      const listed = report.failures.length < MAX_LISTED;
      switch (r.status) {
        case "equal":
          report.compared++;
          details?.record({ identity, status: "equal" });
          return;
        case "only_in_live":
        case "only_in_rebuilt":
          report.notComparable++;
          if (r.status === "only_in_live") report.onlyInLive++;
          else report.onlyInRebuilt++;
          if (listed) report.failures.push({ reason: r.status, identity });
          details?.record({ identity, status: r.status });
          return;
        case "watermarks_differ":
        case "behind_in_live":
          report.notComparable++;
          if (r.status === "behind_in_live") report.behindInLive++;
          if (listed) report.failures.push({ reason: r.status, identity, detail: r.detail });
          details?.record({ identity, status: r.status, detail: r.detail });
          return;
        case "bytes_differ": {
          report.compared++;
          report.mismatches++;
          report.mismatchedIdentities.push(identity);
          const keep = details?.wantsDifference() === true;
          const difference = listed || keep ? byteDifference(r.live, r.rebuilt) : undefined;
          const detail = difference === undefined ? undefined : describeDifference(difference);
          if (listed) report.failures.push({ reason: r.status, identity, ...(detail === undefined ? {} : { detail }) });
          details?.record({ identity, status: r.status, ...(detail === undefined ? {} : { detail }), ...(keep && difference !== undefined ? { difference } : {}) });
          return;
        }
      }
    });
  }
  report.missingInLive = report.onlyInRebuilt + report.behindInLive;
  report.ok = report.failures.length === 0 && report.mismatches === 0 && report.notComparable === 0;
  return report;
}
