/**
 * Prometheus metrics (prom-client). `createFoldMetrics()` builds a fresh
 * Registry — never prom-client's global one, so several workers or tests in one
 * process do not collide — with the fold's metrics and Node's default process
 * metrics (`process_*`, `nodejs_*`), and `mufold_build_info` when the caller
 * says what it runs. Serve it with `startHttpServer({ registry })` (`GET /metrics`).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Seconds buckets for a batch and an apply: 1 ms … 30 s. */
export const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** What a process runs, for `mufold_build_info`: the caller knows its package version (src/cli reads package.json). */
export interface BuildInfo {
  /** The mufold package version. */
  version: string;
  /** The reducer version the process folds or reads (MUFOLD_REDUCER_VERSION). */
  reducerVersion: string;
}

export interface RegistryOptions {
  /** Register Node's default process metrics (default true). */
  defaultMetrics?: boolean;
  /** Labels added to every series of the registry, e.g. `{ worker: "host:pid" }`. */
  labels?: Record<string, string>;
  /** Add `mufold_build_info{version,node,reducer_version} 1`. */
  build?: BuildInfo;
}

export interface FoldMetrics {
  readonly registry: Registry;
  /** `mufold_records_consumed_total`: Kafka records the fold took from the topic (valid or not), counted once their batch is done. */
  readonly recordsConsumed: Counter;
  /** `mufold_deliveries_applied_total`: accepted deliveries written to an identity in Redis (new to its state). */
  readonly deliveriesApplied: Counter;
  /** `mufold_duplicates_skipped_total`: deliveries skipped as already applied (at or below a watermark: redelivery, rebalance, replay overlap). */
  readonly duplicatesSkipped: Counter;
  /** `mufold_conflicting_deliveries_total`: deliveries whose observation_id was already seen with a different fingerprint (the contract quarantines the id). */
  readonly conflictingDeliveries: Counter;
  /** `mufold_dead_letters_total{reason}`: records sent to `<topic>.dlq`, by reason code. */
  readonly deadLetters: Counter<"reason">;
  /** `mufold_cas_retries_total`: identity applies retried because another writer moved the version first (stale CAS). */
  readonly casRetries: Counter;
  /** `mufold_batch_seconds`: wall time of one fetched batch, from hand-off to done (decide, apply, dead-letter; before the commit). */
  readonly batchSeconds: Histogram;
  /** `mufold_apply_seconds`: wall time of deciding one batch's records and applying its identities to Redis, wave by wave (all `mufold_apply_v2` calls, retries included). */
  readonly applySeconds: Histogram;
  /** `mufold_consumer_lag{topic,partition}`: records between the last folded offset and the partition's high watermark, per owned partition. */
  readonly consumerLag: Gauge<"topic" | "partition">;
  /** `mufold_identities_cached`: identity models held in the worker's LRU cache. */
  readonly identitiesCached: Gauge;
  /** `mufold_identity_cache_bytes`: the cached models' heap bytes as the cache estimates them (bounded by MUFOLD_CACHE_MAX_BYTES). */
  readonly identityCacheBytes: Gauge;
  /** `mufold_partitions_parked{topic,partition}`: 1 for each partition this worker holds at a batch it cannot decode. */
  readonly partitionsParked: Gauge<"topic" | "partition">;
  /** `mufold_behind_log_records{topic,partition,cause}`: records a partition must refold before its projections are whole again (Redis went back in time: `behind_log`; lost its generation: `rebuilding`). */
  readonly behindLog: Gauge<"topic" | "partition" | "cause">;
  /** `mufold_fold_state{state}`: 1 for the state the worker is in (`folding`, `behind_log`, `rebuilding`, `waiting_for_setup`), 0 for the others. */
  readonly foldState: Gauge<"state">;
}

/** A fresh Registry, with Node's default process metrics unless turned off. */
export function createRegistry(options: RegistryOptions = {}): Registry {
  const registry = new Registry();
  if (options.labels !== undefined) registry.setDefaultLabels(options.labels);
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  if (options.build !== undefined) registerBuildInfo(registry, options.build);
  return registry;
}

/**
 * `mufold_build_info{version,node,reducer_version}`, always 1: the usual info
 * gauge, so a dashboard can count the fleet's workers by version and join it
 * onto other series.
 */
export function registerBuildInfo(registry: Registry, build: BuildInfo): Gauge<"version" | "node" | "reducer_version"> {
  const gauge = new Gauge({
    name: "mufold_build_info",
    help: "The running mufold: package version, Node version and reducer version; always 1.",
    labelNames: ["version", "node", "reducer_version"] as const,
    registers: [registry],
  });
  gauge.set({ version: build.version, node: process.version, reducer_version: build.reducerVersion }, 1);
  return gauge;
}

/** The fold's metrics in a new registry (or in `registry`, which must not hold them yet). */
export function createFoldMetrics(options: RegistryOptions & { registry?: Registry } = {}): FoldMetrics {
  const registry = options.registry ?? createRegistry(options);
  if (options.registry !== undefined && options.build !== undefined) registerBuildInfo(registry, options.build);
  const registers = [registry];
  return {
    registry,
    recordsConsumed: new Counter({
      name: "mufold_records_consumed_total",
      help: "Kafka records the fold took from the topic (valid or not), counted when their batch is done.",
      registers,
    }),
    deliveriesApplied: new Counter({
      name: "mufold_deliveries_applied_total",
      help: "Accepted deliveries written to their identity in Redis.",
      registers,
    }),
    duplicatesSkipped: new Counter({
      name: "mufold_duplicates_skipped_total",
      help: "Deliveries skipped because their identity had already applied them (redelivery, rebalance, replay overlap).",
      registers,
    }),
    conflictingDeliveries: new Counter({
      name: "mufold_conflicting_deliveries_total",
      help: "Deliveries whose observation_id was already seen with a different fingerprint.",
      registers,
    }),
    deadLetters: new Counter({
      name: "mufold_dead_letters_total",
      help: "Records sent to the dead-letter topic, by reason code.",
      labelNames: ["reason"] as const,
      registers,
    }),
    casRetries: new Counter({
      name: "mufold_cas_retries_total",
      help: "Identity applies retried because another writer changed the identity's version first.",
      registers,
    }),
    batchSeconds: new Histogram({
      name: "mufold_batch_seconds",
      help: "Wall time to fold one fetched batch (decide, apply, dead-letter), before its offsets are committed.",
      buckets: SECONDS_BUCKETS,
      registers,
    }),
    applySeconds: new Histogram({
      name: "mufold_apply_seconds",
      help: "Wall time to decide one batch's records and apply its identities to Redis (wave by wave), CAS retries included.",
      buckets: SECONDS_BUCKETS,
      registers,
    }),
    consumerLag: new Gauge({
      name: "mufold_consumer_lag",
      help: "Records between the last folded offset and the partition's high watermark.",
      labelNames: ["topic", "partition"] as const,
      registers,
    }),
    identitiesCached: new Gauge({
      name: "mufold_identities_cached",
      help: "Identity models held in the worker's in-memory LRU cache.",
      registers,
    }),
    identityCacheBytes: new Gauge({
      name: "mufold_identity_cache_bytes",
      help: "Heap bytes the cached identity models hold, as the cache estimates them (bounded by MUFOLD_CACHE_MAX_BYTES).",
      registers,
    }),
    partitionsParked: new Gauge({
      name: "mufold_partitions_parked",
      help: "Partitions held at a record batch that cannot be decoded (corrupt payload, unknown codec): 1 per parked partition.",
      labelNames: ["topic", "partition"] as const,
      registers,
    }),
    behindLog: new Gauge({
      name: "mufold_behind_log_records",
      help: "Records a partition must refold before its projections are whole again (cause: behind_log when Redis went back in time, rebuilding when it lost the generation).",
      labelNames: ["topic", "partition", "cause"] as const,
      registers,
    }),
    foldState: new Gauge({
      name: "mufold_fold_state",
      help: "1 for the state the fold worker is in: folding, behind_log, rebuilding or waiting_for_setup.",
      labelNames: ["state"] as const,
      registers,
    }),
  };
}
