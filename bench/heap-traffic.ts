/**
 * What a stretch of this process's work made the young generation do, read
 * from V8's own per-collection statistics (v8.GCProfiler): bytes allocated,
 * bytes that survived a scavenge (kept young or promoted to the old
 * generation) and, of those, bytes promoted. A scavenge's cost follows what
 * survives it, not what died. These counts move ~2% between runs, while CPU
 * times on this machine drift much more (docs/benchmarks.md): they are how a
 * change aimed at the collector is compared.
 */
import { GCProfiler, type HeapSpaceStatistics } from "node:v8";

export interface HeapTraffic {
  /** Bytes allocated in the young generation per record: what fills it, which sets how often scavenges run. */
  allocatedBytes: number;
  /**
   * Bytes per record that survived a scavenge: kept in the young generation
   * or promoted. An upper bound of what the scavenges copied: V8 moves a page
   * that is mostly alive (and a large object) without copying it.
   */
  survivedBytes: number;
  /**
   * Of those, bytes promoted to the old generation per record: what full
   * collections later mark and free. Counted from the old generation's growth
   * during each scavenge, so space a concurrent sweep frees meanwhile makes it
   * an undercount; what a full collection moves out of the young generation
   * is not counted (there are a handful in a 100k-record fold: `fullCollections`).
   */
  promotedBytes: number;
  /** Scavenges during the stretch, and their main-thread pauses in µs per record. */
  scavenges: number;
  scavengePauseUs: number;
  /** Other collections (mark-compact) during the stretch. */
  fullCollections: number;
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
 * starts and ends mid-allocation: the young bytes allocated before its first
 * collection and after its last are outside the count (up to two young
 * generations' worth, ~2% of a 100k-record fold).
 */
export function startHeapTraffic(): { stop(records: number): HeapTraffic } {
  const profiler = new GCProfiler();
  profiler.start();
  return {
    stop(records: number): HeapTraffic {
      const stats = profiler.stop().statistics;
      let allocated = 0;
      let survived = 0;
      let promoted = 0;
      let scavenges = 0;
      let full = 0;
      let pauseUs = 0;
      let youngAfterLast: number | undefined;
      for (const s of stats) {
        const before = use(s.beforeGC);
        const after = use(s.afterGC);
        if (youngAfterLast !== undefined) allocated += Math.max(0, before.young - youngAfterLast);
        youngAfterLast = after.young;
        if (s.gcType !== "Scavenge") {
          full++;
          continue;
        }
        scavenges++;
        pauseUs += s.cost;
        const up = Math.max(0, after.old - before.old);
        promoted += up;
        survived += after.young + up;
      }
      const per = (x: number) => Math.round(x / records);
      return { allocatedBytes: per(allocated), survivedBytes: per(survived), promotedBytes: per(promoted), scavenges, scavengePauseUs: Math.round((pauseUs / records) * 10) / 10, fullCollections: full };
    },
  };
}
