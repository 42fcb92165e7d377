/**
 * Applies accepted deliveries to identities in one generation: a cached model
 * per identity, one version-checked store call per identity per batch, and on
 * a stale version a reload that drops what is already applied before retrying.
 * Shared by the live fold and the replay, so both write the same bytes. It
 * knows the store only as the IdentityStore port (Redis in production, memory
 * in the unit tier).
 *
 * With the change feed on, every applied change also stores its packet digest
 * (meta `dig`) and is described in `ApplyStats.changes`, for the fold worker
 * to announce (the fold's change feed) before it commits the batch.
 */
import type { ReducerContext } from "../core/index.js";
import type { PartsView } from "../core/packet-parts.js";
import { expandTokens } from "../core/compact-json.js";
import { IdentityModel, type ChangeNote, type Delivery } from "./identity-model.js";
import { StaleVersionError, type IdentityStore, type PositionGuard } from "./identity-store.js";

export interface IdentityBatch {
  identity: string;
  context: ReducerContext;
  deliveries: Delivery[];
}

/** A review proposal added or changed (its exact JSON from the packet), or withdrawn (null). */
export interface ProposalChange {
  readonly subjectId: string;
  /** The proposal as the packet holds it (canonical JSON), or null when withdrawn. */
  readonly proposal: string | null;
}

/**
 * A proposal change whose canonical JSON is made when first read: only a fold with a proposals topic reads it, and
 * expanding every changed proposal's stored form was ~130 bytes of young garbage a record.
 */
class StoredProposalChange implements ProposalChange {
  private canonical: string | null | undefined;

  constructor(
    readonly subjectId: string,
    private readonly stored: string | null,
  ) {}

  get proposal(): string | null {
    if (this.canonical === undefined) this.canonical = this.stored === null ? null : expandTokens(this.stored);
    return this.canonical;
  }

  toJSON(): { subjectId: string; proposal: string | null } {
    return { subjectId: this.subjectId, proposal: this.proposal };
  }
}

/** One applied change, as the change feed announces it. */
export interface FeedChange {
  identity: string;
  version: number;
  status: string;
  digest: string;
  /** Deliveries applied in this change. */
  deliveries: number;
  proposals: ProposalChange[];
  /** Announced again after a redelivery found it applied (it may have been announced already). */
  repeated: boolean;
}

export interface ApplierOptions {
  /** Store packet digests and describe changes (default on; the fold passes MUFOLD_CHANGE_FEED). */
  feed?: boolean;
  /**
   * The generation is new and this applier is its only writer so far (a replay's build): an identity it has
   * not written is empty, so it is created without a load. Another writer is still caught by the version check.
   */
  fresh?: boolean;
  /**
   * Estimated heap bytes (IdentityModel.heapEstimate) the cached models may hold together, besides the `cacheSize`
   * bound on their number: the least recently used go first once either is passed (default: no byte bound).
   */
  cacheMaxBytes?: number;
  /**
   * Identity writes in flight at once, across concurrent applyAll calls (default 256): bounds the memory a batch
   * holds. For applyDeciding it bounds the groups decided at once (a group, all of one key, is decided whole).
   */
  inFlight?: number;
  /**
   * Attempts of one identity's version-checked write before the stale version is thrown (the batch is then
   * retried): the casMaxAttempts setting, passed in by the fold and the replay (default DEFAULT_CAS_ATTEMPTS).
   */
  casAttempts?: number;
}

export interface ApplyStats {
  applied: number;
  duplicatesSkipped: number;
  conflicting: number;
  casRetries: number;
  identities: number;
  newIdentities: string[];
  /** Applied changes in apply order (empty with the feed off). */
  changes: FeedChange[];
}

function feedChange(identity: string, version: number, note: ChangeNote, parts: PartsView, repeated: boolean): FeedChange {
  // The proposal as the packet holds it: canonical JSON (the parts hold the stored form, see compact-json.ts).
  const withdrawn = parts.rejected !== null;
  const proposals = note.proposals.map((subjectId) => new StoredProposalChange(subjectId, withdrawn ? null : (parts.subjects.get(subjectId)?.proposal ?? null)));
  return { identity, version, status: note.status, digest: note.digest, deliveries: note.deliveries, proposals, repeated };
}

const emptyApplyStats = (identities: number): ApplyStats => ({ applied: 0, duplicatesSkipped: 0, conflicting: 0, casRetries: 0, identities, newIdentities: [], changes: [] });

function addApplyStats(into: ApplyStats, from: ApplyStats): void {
  into.applied += from.applied;
  into.duplicatesSkipped += from.duplicatesSkipped;
  into.conflicting += from.conflicting;
  into.casRetries += from.casRetries;
  into.identities += from.identities;
  for (const id of from.newIdentities) into.newIdentities.push(id);
  for (const change of from.changes) into.changes.push(change);
}

/** The casMaxAttempts setting's default (src/config/settings.ts; a unit test keeps the two equal): the engine reads no settings. */
export const DEFAULT_CAS_ATTEMPTS = 20;

export class IdentityApplier {
  /** Least recently used first. A model is out of it while it is being applied, and counted in `cacheBytes` while in. */
  private cache = new Map<string, IdentityModel>();
  private cacheBytes = 0;
  private readonly cacheMaxBytes: number;
  /** Whether changes are described and digests stored; set before the first apply. */
  feed: boolean;
  private readonly fresh: boolean;
  private readonly inFlight: number;
  private readonly casAttempts: number;
  private active = 0;
  /** Callers waiting for a slot, oldest first from `waitingHead` (an index, not shift(): a batch can queue thousands). */
  private waiting: (() => void)[] = [];
  private waitingHead = 0;
  /** The apply in flight per identity: concurrent batches (other partitions) take turns on one identity. */
  private readonly turns = new Map<string, Promise<void>>();
  /** Fresh mode: identities this applier has written (only those can need a load). */
  private readonly written = new Set<string>();

  constructor(
    private readonly store: IdentityStore,
    private readonly cacheSize: number,
    options: ApplierOptions = {},
  ) {
    this.feed = options.feed ?? true;
    this.cacheMaxBytes = options.cacheMaxBytes ?? Number.POSITIVE_INFINITY;
    this.fresh = options.fresh ?? false;
    this.inFlight = options.inFlight ?? 256;
    this.casAttempts = options.casAttempts ?? DEFAULT_CAS_ATTEMPTS;
  }

  /** Run `f` once fewer than `inFlight` identities are being applied. */
  private async slot(f: () => Promise<void>): Promise<void> {
    while (this.active >= this.inFlight) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      await f();
    } finally {
      this.active--;
      this.wakeOne();
    }
  }

  private wakeOne(): void {
    if (this.waitingHead >= this.waiting.length) return;
    const next = this.waiting[this.waitingHead++]!;
    if (this.waitingHead === this.waiting.length) {
      this.waiting = [];
      this.waitingHead = 0;
    } else if (this.waitingHead >= 1024 && this.waitingHead * 2 >= this.waiting.length) {
      this.waiting = this.waiting.slice(this.waitingHead); // drop the woken, now and then
      this.waitingHead = 0;
    }
    next();
  }

  get cached(): number {
    return this.cache.size;
  }

  /** Estimated heap bytes of the cached models (IdentityModel.heapEstimate). */
  get cachedBytes(): number {
    return this.cacheBytes;
  }

  clear(): void {
    this.cache.clear();
    this.cacheBytes = 0;
  }

  /** The identity's cached model has a stored version (then it is in the generation's index), where the store keeps listings. */
  private listedInCache(generation: number, identity: string): boolean {
    return this.store.indexKeepsListings && (this.cache.get(`${generation}:${identity}`)?.version ?? 0) > 0;
  }

  /** Take a model out of the cache (its estimate as it was put in: a cached model does not change). */
  private take(key: string): IdentityModel | undefined {
    const model = this.cache.get(key);
    if (model !== undefined) {
      this.cache.delete(key);
      this.cacheBytes -= model.heapEstimate();
    }
    return model;
  }

  /** `unlisted`: the index had not listed the identity (addToIndex), so nothing is stored for it. */
  private async load(generation: number, batch: IdentityBatch, unlisted: boolean): Promise<IdentityModel> {
    if (unlisted || (this.fresh && !this.written.has(`${generation}:${batch.identity}`))) return new IdentityModel(batch.identity, batch.context);
    const stored = await this.store.load(generation, batch.identity);
    return IdentityModel.fromStored(batch.identity, batch.context, stored.meta, stored.records, stored.history);
  }

  private remember(key: string, model: IdentityModel): void {
    this.take(key);
    const bytes = model.heapEstimate();
    // A model larger than the byte bound by itself is not kept (nor does it push the others out): a miss costs a
    // load, not a wrong answer.
    if (bytes > this.cacheMaxBytes) return;
    this.cache.set(key, model); // Map order is recency order: the first key is the least recent
    this.cacheBytes += bytes;
    while (this.cache.size > this.cacheSize || this.cacheBytes > this.cacheMaxBytes) this.take(this.cache.keys().next().value!);
  }

  /**
   * Apply one identity's deliveries; retries on stale versions. Applies to one
   * identity from this worker run one after another (batches of several
   * partitions at once may share identities): the second finds the first's
   * model in the cache instead of racing it to a stale version.
   */
  async applyIdentity(generation: number, batch: IdentityBatch, stats: ApplyStats, guard?: PositionGuard, unlisted = false): Promise<void> {
    const key = `${generation}:${batch.identity}`;
    const before = this.turns.get(key);
    // Behind another turn (a batch of another partition), the identity may be written by the time this one runs.
    const mine = (before ?? Promise.resolve()).then(() => this.applyOnce(key, generation, batch, stats, guard, unlisted && before === undefined));
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    this.turns.set(key, settled);
    try {
      await mine;
    } finally {
      if (this.turns.get(key) === settled) this.turns.delete(key);
    }
  }

  private async applyOnce(key: string, generation: number, batch: IdentityBatch, stats: ApplyStats, guard: PositionGuard | undefined, unlisted: boolean): Promise<void> {
    let model = this.take(key); // a model is trusted again only after its writes land
    for (let attempt = 1; ; attempt++) {
      model ??= await this.load(generation, batch, unlisted && attempt === 1);
      const stored = model.version;
      const wasNew = stored === 0;
      const plan = model.plan(batch.deliveries, { feed: this.feed });
      const repeat = plan.reannounce === null ? null : feedChange(batch.identity, stored, plan.reannounce, model.parts, true);
      if (plan.applied === 0) {
        stats.duplicatesSkipped += plan.skipped;
        if (repeat !== null) stats.changes.push(repeat);
        this.remember(key, model);
        return;
      }
      try {
        const version = await this.store.apply(generation, batch.identity, stored, plan.watermarks, plan.ops, guard);
        if (repeat !== null) stats.changes.push(repeat);
        if (plan.change !== null) stats.changes.push(feedChange(batch.identity, version, plan.change, plan.nextParts, false));
        model.committed(plan, version);
        this.remember(key, model);
        if (this.fresh) this.written.add(key);
        stats.applied += plan.applied;
        stats.conflicting += plan.conflicting;
        stats.duplicatesSkipped += plan.skipped;
        if (wasNew) stats.newIdentities.push(batch.identity);
        return;
      } catch (err) {
        if (!(err instanceof StaleVersionError) || attempt >= this.casAttempts) throw err;
        stats.casRetries++;
        model = undefined; // another writer moved it: reload, the watermarks drop what it applied
        if (this.fresh) this.written.add(key); // it exists now: load it
      }
    }
  }

  /**
   * Apply groups of records that are decided only once their turn comes (`decide` runs inside the slot, so only
   * the groups in flight hold decided observations): a replay's chunk, grouped by Kafka key. Each group's
   * identities are indexed just before they are applied, one after another.
   *
   * Precondition: no identity comes out of two groups, and a group keeps each partition's records in offset
   * order. Groups run concurrently, so two groups of one identity could apply its later offsets first and the
   * watermark would then skip the earlier ones. Grouping by Kafka key holds it: a record is accepted only under
   * its scope's key, so all of an identity's records share one key (one key may still hold several identities).
   */
  async applyDeciding<G>(generation: number, groups: Iterable<G>, decide: (group: G) => readonly IdentityBatch[]): Promise<ApplyStats> {
    const stats = emptyApplyStats(0);
    await this.eachInSlots(groups, async (group) => {
      const batches = decide(group);
      if (batches.length === 0) return;
      stats.identities += batches.length;
      await this.store.addToIndex(generation, batches.map((b) => b.identity));
      for (const b of batches) await this.applyIdentity(generation, b, stats);
    });
    return stats;
  }

  /**
   * Apply waves of records one after another, each decided (`decide`) only once the wave before it is written:
   * the live fold's batch cut by keyWaves, so that only one wave's decided observations are alive at a time
   * (batch-router.ts, DECIDE_WAVE_RECORDS). Each wave is applied as applyAll applies a batch; the stats are
   * summed, changes in apply order. A failed wave fails the call and no later wave is decided. The `guard`
   * (the live fold's) goes with every apply: see PositionGuard.
   */
  async applyInWaves<W>(generation: number, waves: Iterable<W>, decide: (wave: W) => readonly IdentityBatch[], guard?: PositionGuard): Promise<ApplyStats> {
    const stats = emptyApplyStats(0);
    for (const wave of waves) {
      const batches = decide(wave);
      if (batches.length > 0) addApplyStats(stats, await this.applyAll(generation, batches, guard));
    }
    return stats;
  }

  /** Apply every identity of a batch, up to `inFlight` at once (Redis pipelines the calls). */
  async applyAll(generation: number, batches: readonly IdentityBatch[], guard?: PositionGuard): Promise<ApplyStats> {
    const stats = emptyApplyStats(batches.length);
    // Index first (idempotent): a crash after an apply must not leave an identity unlisted. A cached model with a
    // stored version is listed already (whoever wrote it indexed it first, and an index only grows): a batch of
    // known identities then costs no round trip for it. One the index had not listed has nothing stored: no load.
    const unlisted = await this.store.addToIndex(generation, batches.filter((b) => !this.listedInCache(generation, b.identity)).map((b) => b.identity));
    await this.eachInSlots(batches, (b) => this.applyIdentity(generation, b, stats, guard, unlisted.has(b.identity)));
    return stats;
  }

  /**
   * Run `work` for each item, up to `inFlight` at once. After a failure nothing more starts, and the call throws
   * the first failure once the started ones settle: no write lands after its caller has moved on (to retry it).
   */
  private async eachInSlots<T>(items: Iterable<T>, work: (item: T) => Promise<void>): Promise<void> {
    let failure: { error: unknown } | undefined;
    const started: Promise<void>[] = [];
    for (const item of items) {
      started.push(
        this.slot(async () => {
          if (failure !== undefined) return;
          await work(item).catch((error: unknown) => void (failure ??= { error }));
        }),
      );
    }
    await Promise.all(started);
    if (failure !== undefined) throw failure.error;
  }
}
