/**
 * What a stretch of this process's work made the young generation do, read
 * from V8's own per-collection statistics (v8.GCProfiler): bytes allocated,
 * bytes the scavenges copied (kept in the young generation or promoted to the
 * old one), and their main-thread pauses. A scavenge's cost grows with what
 * it copies, not with what died, and these byte counts barely move between
 * runs while CPU times on this machine drift by 10-30%: they are how a change
 * aimed at the collector is compared (docs/benchmarks.md).
 */
import { GCProfiler, type HeapSpaceStatistics } from "node:v8";

export interface HeapTraffic {
  /** Bytes allocated in the young generation per record (what the scavenges had to sweep through). */
  allocatedBytes: number;
  /** Bytes the scavenges copied per record: survivors kept young plus those promoted. */
  copiedBytes: number;
  /** Of those, bytes promoted to the old generation per record (what full collections later mark and free). */
  promotedBytes: number;
  /** Scavenges during the stretch, and their main-thread pauses in µs per record. */
  scavenges: number;
  scavengePauseUs: number;
}

interface SpaceUse {
  young: number;
  old: number;
}

/** Young (new space, new large objects) and old (every other space) bytes in use. */
function use(side: { heapSpaceStatistics: HeapSpaceStatistics[] }): SpaceUse {
  let young = 0;
  let old = 0;
  for (const s of side.heapSpaceStatistics) {
    if (s.spaceName === "new_space" || s.spaceName === "new_large_object_space") young += s.spaceUsedSize;
    else old += s.spaceUsedSize;
  }
  return { young, old };
}

/**
 * Start counting; `stop(records)` gives the traffic per record. The stretch
 * starts and ends mid-allocation: the young bytes before the first scavenge
 * and after the last are outside the count (at most one young generation's
 * worth, ~1% of a 100k-record fold).
 */
export function startHeapTraffic(): { stop(records: number): HeapTraffic } {
  const profiler = new GCProfiler();
  profiler.start();
  return {
    stop(records: number): HeapTraffic {
      const stats = profiler.stop().statistics;
      let allocated = 0;
      let copied = 0;
      let promoted = 0;
      let scavenges = 0;
      let pauseUs = 0;
      let youngAfterLast: number | undefined;
      for (const s of stats) {
        const before = use(s.beforeGC);
        const after = use(s.afterGC);
        if (youngAfterLast !== undefined) allocated += Math.max(0, before.young - youngAfterLast);
        youngAfterLast = after.young;
        if (s.gcType !== "Scavenge") continue;
        scavenges++;
        pauseUs += s.cost;
        const up = Math.max(0, after.old - before.old);
        promoted += up;
        copied += after.young + up;
      }
      const per = (x: number) => Math.round(x / records);
      return { allocatedBytes: per(allocated), copiedBytes: per(copied), promotedBytes: per(promoted), scavenges, scavengePauseUs: Math.round((pauseUs / records) * 10) / 10 };
    },
  };
}
