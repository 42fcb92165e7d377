/**
 * The IdentityStore port on Redis: identity parts per generation, the
 * version-checked apply (mufold_v1.lua), the one-call readback, the identity
 * index and the change feed of each generation.
 *
 * It works on one node and on a Redis Cluster alike: the ten keys of an
 * identity share the hash tag `{mur_…}`, so each FCALL/FCALL_RO names keys of
 * one slot and ioredis sends it to the master owning that slot
 * (function-call.ts). The index and the change feed are single-key commands,
 * each routed by its own key.
 */
import type { Redis, Cluster } from "ioredis";
import { PartOps, type PartOp } from "../../fold/delta.js";
import { applyCommandBytes, applyKeysAndArguments, type ApplyCall } from "./apply-command.js";
import type { IdentityStore, PositionGuard, StoredIdentity } from "../../fold/identity-store.js";
import { INDEX_KEY_PATTERN, changesKey, generationOfIndexKey, identityKeys, indexKey, partIndex, storedKeys } from "./keys.js";
import { isCluster } from "./connect.js";
import { AS_OF_FUNCTION, INDEXED_APPLY_FUNCTION, READ_FUNCTION } from "./functions.js";
import { applyResult } from "./errors.js";
import { FunctionCaller } from "./function-call.js";
import { scanKeys } from "./keyspace.js";
import { WRITE_GROUP, WriteCoalescer } from "./write-coalescing.js";

export interface RedisIdentityStoreOptions {
  /** Coalesce the loads', applies' and index writes in groups of this many (write-coalescing.ts); one node, not auto-pipelined, only. */
  writeGroup?: number;
}

/**
 * The identity store a writer folds through (the live fold's, a replay build's): its connection is not
 * auto-pipelined, so its writes leave in groups of WRITE_GROUP.
 */
export function writerStore(redis: Redis | Cluster, prefix: string): RedisIdentityStore {
  return new RedisIdentityStore(redis, prefix, { writeGroup: WRITE_GROUP });
}

export class RedisIdentityStore implements IdentityStore {
  readonly indexKeepsListings: boolean;
  private readonly coalescer: WriteCoalescer | null;
  private readonly functions: FunctionCaller;

  constructor(
    readonly redis: Redis | Cluster,
    readonly prefix: string,
    options: RedisIdentityStoreOptions = {},
  ) {
    this.functions = new FunctionCaller(redis);
    this.indexKeepsListings = !isCluster(redis);
    this.coalescer = options.writeGroup === undefined || isCluster(redis) ? null : new WriteCoalescer(redis as Redis, options.writeGroup);
  }

  keys(generation: number, identity: string): string[] {
    return identityKeys(this.prefix, generation, identity);
  }

  async load(generation: number, identity: string): Promise<StoredIdentity> {
    const keys = this.keys(generation, identity);
    // Hashes keyed by observation ids are read as flat replies into Maps: an object per identity keyed by
    // ids would give V8 a new hidden class per id, a leak across 100k identities.
    this.coalescer?.beforeCommand(); // a cold cache loads a whole wave of identities in one turn
    const [meta, d, h] = await Promise.all([
      this.redis.hgetall(keys[partIndex("m")]!),
      this.redis.call("HGETALL", keys[partIndex("d")]!) as Promise<string[]>,
      this.redis.call("HGETALL", keys[partIndex("h")]!) as Promise<string[]>,
    ]);
    const pairs = (flat: string[]) => {
      const out = new Map<string, string>();
      for (let i = 0; i + 1 < flat.length; i += 2) out.set(flat[i]!, flat[i + 1]!);
      return out;
    };
    return { meta, records: pairs(d), history: pairs(h) };
  }

  /**
   * Apply writes if the identity is still at `expectedVersion`; returns the new version. With a guard
   * (mufold_apply_v3), only while the generation is live and its mark for the guard's partition is at or
   * past the guard's offset, checked in the same call, on one node; a cluster keeps the control hash in
   * another slot, so there the guard is the fold's check before the batch and the seal after it.
   */
  async apply(generation: number, identity: string, expectedVersion: number, watermarks: ReadonlyMap<string, bigint>, ops: PartOps | readonly PartOp[], guard?: PositionGuard): Promise<number> {
    const guarded = guard !== undefined && !isCluster(this.redis);
    const call: ApplyCall = { generation, identity, expectedVersion, watermarks, ops: PartOps.from(ops), guard: guarded ? guard : null };
    let reply: Promise<unknown>;
    if (this.functions.encoded) {
      const lent = applyCommandBytes(INDEXED_APPLY_FUNCTION, this.prefix, call);
      this.coalescer?.beforeCommand();
      reply = this.functions.send("FCALL", INDEXED_APPLY_FUNCTION, lent);
    } else {
      const { keys, args } = applyKeysAndArguments(this.prefix, call);
      this.coalescer?.beforeCommand();
      reply = this.functions.call("FCALL", INDEXED_APPLY_FUNCTION, keys, args);
    }
    return applyResult(identity, await reply, guarded ? { generation, guard } : undefined);
  }

  /** The packet bytes, exactly the reducer's, or null for an unknown identity. */
  async read(generation: number, identity: string): Promise<string | null> {
    const reply = await this.functions.call("FCALL_RO", READ_FUNCTION, this.keys(generation, identity), []);
    return reply === null ? null : String(reply);
  }

  /** The meta hash, `d`, `h` and the offset index of one identity, read in one atomic call (mufold_as_of_v1). */
  async loadHistory(generation: number, identity: string): Promise<StoredIdentity & { index: string[] }> {
    const reply = (await this.functions.call("FCALL_RO", AS_OF_FUNCTION, storedKeys(this.prefix, generation, identity), [])) as [string[], string[], string[], string[]];
    const pairs = (flat: string[]) => {
      const out = new Map<string, string>();
      for (let i = 0; i + 1 < flat.length; i += 2) out.set(flat[i]!, flat[i + 1]!);
      return out;
    };
    return { meta: Object.fromEntries(pairs(reply[0])), records: pairs(reply[1]), history: pairs(reply[2]), index: reply[3] };
  }

  async meta(generation: number, identity: string): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys(generation, identity)[partIndex("m")]!);
  }

  async addToIndex(generation: number, identities: readonly string[]): Promise<ReadonlySet<string>> {
    if (identities.length === 0) return new Set();
    const key = indexKey(this.prefix, generation);
    // A replay's build indexes each group of a chunk as its turn comes: dozens of SADDs in one turn.
    this.coalescer?.beforeCommand();
    // One SADD per identity says which were added (a SADD of many only counts them): a pipeline, one write, one
    // slot on a cluster (they all name the index).
    const pipeline = this.redis.pipeline();
    for (const identity of identities) pipeline.sadd(key, identity);
    const replies = (await pipeline.exec()) ?? [];
    const added = new Set<string>();
    replies.forEach(([error, reply], i) => {
      if (error) throw error;
      if (reply === 1) added.add(identities[i]!);
    });
    return added;
  }

  async listIdentities(generation: number): Promise<string[]> {
    const out: string[] = [];
    let cursor = "0";
    do {
      const [next, batch] = await this.redis.sscan(indexKey(this.prefix, generation), cursor, "COUNT", 1000);
      out.push(...batch);
      cursor = next;
    } while (cursor !== "0");
    return out.sort();
  }

  /** Generations that have an identity index in Redis (live, rebuilding, or orphaned by a loss). */
  async indexedGenerations(): Promise<number[]> {
    const found = await scanKeys(this.redis, INDEX_KEY_PATTERN(this.prefix));
    return found
      .map((k) => generationOfIndexKey(this.prefix, k))
      .filter((g): g is number => g !== null)
      .sort((a, b) => a - b);
  }

  /**
   * Delete every identity of a generation and its index (after a promote has moved past it); returns the keys
   * removed. Its control fields are the control store's (forgetGeneration), its change feed `dropChanges`.
   */
  async dropGeneration(generation: number): Promise<number> {
    let removed = 0;
    const ids = await this.listIdentities(generation);
    for (let i = 0; i < ids.length; i += 200) {
      // One UNLINK per identity: its keys share one slot.
      const counts = await Promise.all(ids.slice(i, i + 200).map((id) => this.redis.unlink(...storedKeys(this.prefix, generation, id))));
      for (const n of counts) removed += n;
    }
    removed += await this.redis.unlink(indexKey(this.prefix, generation));
    return removed;
  }

  /** Delete a generation's change feed (with dropGeneration, after a promote or a verify-only replay). */
  async dropChanges(generation: number): Promise<number> {
    return this.redis.unlink(changesKey(this.prefix, generation));
  }
}
