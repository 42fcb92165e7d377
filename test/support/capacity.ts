/**
 * A fold worker's memory from its settings: the formula of docs/operations.md
 * ("Capacity: a worker's memory and concurrency"), turned into the numbers a
 * deployment sets, as docs/deployment.md ("Resources") states them. The
 * Kubernetes manifest test checks deploy/k8s/fold.yaml against it.
 */

const KiB = 1024;
const MiB = 1024 * KiB;

/** The constants, each from docs/operations.md unless said otherwise. */
export const CAPACITY = {
  /** Code, clients, metrics. */
  baseMiB: 35,
  /** One cached identity, before its deliveries. */
  identityKiB: 5,
  /** Each delivery a cached identity holds. */
  deliveryKiB: 4.5,
  /** Decoded and decided records weigh ~10× their compressed bytes. */
  decodedFactor: 10,
  /** The old space grows to about twice its live size before a full collection. */
  oldSpaceHeadroom: 2,
  /** Young generation with --max-semi-space-size=32 (WORKER_NODE_FLAGS: bin/mufold.js, the Dockerfile). */
  youngGenerationMiB: 96,
  /**
   * docs/deployment.md: what lives outside the V8 heap (Node itself, socket and
   * decompression buffers, the zstd binding). With the defaults the limit is then
   * 576 MiB, above the 556 MiB RSS peak measured with --max-old-space-size=384.
   */
  nativeMiB: 96,
  /** docs/deployment.md: --max-old-space-size is rounded up to a multiple of this. */
  roundMiB: 64,
} as const;

export interface WorkerSizing {
  cacheSize: number;
  /** MUFOLD_CACHE_MAX_BYTES: the cache's bound in (estimated) heap bytes, whichever of the two is reached first. */
  cacheMaxBytes: number;
  /** The operator's estimate of the deliveries a cached identity holds (1 to 1,024). */
  deliveriesPerIdentity: number;
  fetchMaxBytes: number;
  partitionFetchMaxBytes: number;
  partitionsConcurrency: number;
  identitiesInFlight: number;
}

export interface WorkerMemory {
  /** Live heap the formula expects. */
  heapMiB: number;
  /** `--max-old-space-size`: twice the live heap, rounded up. */
  maxOldSpaceMiB: number;
  /** Container memory request = limit: old space + young generation + native memory. */
  limitMiB: number;
}

export function workerMemory(s: WorkerSizing): WorkerMemory {
  const perIdentityBytes = (CAPACITY.identityKiB + CAPACITY.deliveryKiB * s.deliveriesPerIdentity) * KiB;
  const cached = Math.min(s.cacheSize * perIdentityBytes, s.cacheMaxBytes);
  // Batches in flight: a fetch's bytes, or the concurrent partitions' batches if those are more; decoded.
  const batches = CAPACITY.decodedFactor * Math.max(s.fetchMaxBytes, s.partitionsConcurrency * s.partitionFetchMaxBytes);
  const writes = s.identitiesInFlight * perIdentityBytes;
  const heapMiB = CAPACITY.baseMiB + (cached + batches + writes) / MiB;
  const maxOldSpaceMiB = Math.ceil((CAPACITY.oldSpaceHeadroom * heapMiB) / CAPACITY.roundMiB) * CAPACITY.roundMiB;
  return { heapMiB, maxOldSpaceMiB, limitMiB: maxOldSpaceMiB + CAPACITY.youngGenerationMiB + CAPACITY.nativeMiB };
}
