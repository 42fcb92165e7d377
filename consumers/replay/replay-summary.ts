/** What a replay is asked to do (ReplayOptions) and what it reports (ReplaySummary). */
import type { VerifyCoverage } from "../verify/coverage.js";
import type { VerifyDetails, VerifyReport } from "../verify/verify.js";

export interface ReplayOptions {
  verify: boolean;
  promote: boolean;
  /** --verify: hold the live generation to the log's end (captured at start), not only to what the group committed. */
  toEnd?: boolean;
  /** Keep the shadow generation after a verify-only run. */
  keepShadow?: boolean;
  /** Seconds to keep the old generation readable after a promote. */
  dropAfterSeconds?: number;
  pauseTimeoutSeconds?: number;
  /** Seconds without progress after which a wait fails (default: the outage tolerance, at least 60). */
  stallSeconds?: number;
  /** Promote a generation whose reducer version differs from the live one's (an upgrade or a rollback). */
  changeReducerVersion?: boolean;
  /** Aborts the replay (SIGINT/SIGTERM): the pause is released and the shadow dropped. */
  signal?: AbortSignal;
  /** Processes that read the partitions (split across them); 1 reads in this process. */
  workers?: number;
  /** Bytes of records a reader gathers into one chunk before it stops fetching (bounds its memory). */
  chunkBytes?: number;
  onProgress?(p: { consumed: number; total: number; elapsedSeconds: number }): void;
  /** --verify: filled with the per-identity results (for `--report`); the summary stays as it is. */
  details?: VerifyDetails;
}

export interface ReplaySummary {
  liveGeneration: number | null;
  rebuiltGeneration: number;
  records: number;
  deliveries: number;
  duplicatesSkipped: number;
  dlq: number;
  dlqByReason: Record<string, number>;
  identities: number;
  seconds: number;
  recordsPerSecond: number;
  /** Processes that rebuilt (1: this one). */
  workers: number;
  /** Seconds until the rebuild reached its first targets (before any pause, verify or promote). */
  rebuildSeconds: number;
  verify: VerifyReport | null;
  /** --verify only: each partition's live mark against the offset the rebuild read to (behind_log), null otherwise. */
  coverage: VerifyCoverage | null;
  /** --verify only: true when every identity was compared and found byte-equal and no live mark is behind. */
  verified: boolean | null;
  /** Identities not proven equal by --verify: differing bytes, or not comparable. */
  mismatches: number;
  promoted: boolean;
}

/**
 * Record bytes a reader gathers per chunk: several fetches' worth. On the bench workload the CPU per record was
 * flat from 2 to 32 MiB (fewer applies per identity, more garbage collection of records held across fetches), so
 * the default keeps memory modest: at most two chunks (one applying, one filling) per reader.
 */
export const DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024;
