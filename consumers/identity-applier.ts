/**
 * Applies accepted deliveries to identities in one generation: a cached model
 * per identity, one version-checked Redis call per identity per batch, and on
 * a stale version a reload that drops what is already applied before retrying.
 * Shared by the live fold and the replay, so both write the same bytes.
 */
import type { ReducerContext } from "../src/core/index.js";
import { StaleVersionError } from "../src/adapters/redis/errors.js";
import type { RedisStore } from "../src/adapters/redis/store.js";
import { IdentityModel, type Delivery } from "../src/fold/identity-model.js";

export interface IdentityBatch {
  identity: string;
  context: ReducerContext;
  deliveries: Delivery[];
}

export interface ApplyStats {
  applied: number;
  duplicatesSkipped: number;
  conflicting: number;
  casRetries: number;
  identities: number;
  newIdentities: string[];
}

const MAX_CAS_ATTEMPTS = 20;

export class IdentityApplier {
  private cache = new Map<string, IdentityModel>();

  constructor(
    private readonly store: RedisStore,
    private readonly cacheSize: number,
  ) {}

  get cached(): number {
    return this.cache.size;
  }

  clear(): void {
    this.cache.clear();
  }

  private async load(generation: number, batch: IdentityBatch): Promise<IdentityModel> {
    const stored = await this.store.load(generation, batch.identity);
    return IdentityModel.fromStored(batch.identity, batch.context, stored.meta, stored.records);
  }

  private remember(key: string, model: IdentityModel): void {
    this.cache.delete(key);
    this.cache.set(key, model); // Map order is recency order: the first key is the least recent
    while (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
  }

  /** Apply one identity's deliveries; retries on stale versions. */
  async applyIdentity(generation: number, batch: IdentityBatch, stats: ApplyStats): Promise<void> {
    const key = `${generation}:${batch.identity}`;
    let model = this.cache.get(key);
    for (let attempt = 1; ; attempt++) {
      model ??= await this.load(generation, batch);
      this.cache.delete(key); // a model is trusted again only after its writes land
      const wasNew = model.version === 0;
      const plan = model.plan(batch.deliveries);
      if (plan.applied === 0) {
        stats.duplicatesSkipped += plan.skipped;
        this.remember(key, model);
        return;
      }
      try {
        const version = await this.store.apply(generation, batch.identity, model.version, plan.watermarks, plan.ops);
        model.committed(plan, version);
        this.remember(key, model);
        stats.applied += plan.applied;
        stats.conflicting += plan.conflicting;
        stats.duplicatesSkipped += plan.skipped;
        if (wasNew) stats.newIdentities.push(batch.identity);
        return;
      } catch (err) {
        if (!(err instanceof StaleVersionError) || attempt >= MAX_CAS_ATTEMPTS) throw err;
        stats.casRetries++;
        model = undefined; // another writer moved it: reload, the watermarks drop what it applied
      }
    }
  }

  /** Apply every identity of a batch concurrently (Redis pipelines the calls). */
  async applyAll(generation: number, batches: readonly IdentityBatch[]): Promise<ApplyStats> {
    const stats: ApplyStats = { applied: 0, duplicatesSkipped: 0, conflicting: 0, casRetries: 0, identities: batches.length, newIdentities: [] };
    // Index first (idempotent): a crash after an apply must not leave an identity unlisted.
    await this.store.addToIndex(generation, batches.map((b) => b.identity));
    await Promise.all(batches.map((b) => this.applyIdentity(generation, b, stats)));
    return stats;
  }
}
