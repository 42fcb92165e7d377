/**
 * The Redis side of the fold: identity parts per generation, the version-
 * checked apply, the one-call readback, the identity index and the control
 * hash (current generation, pause flag). All Redis commands live here.
 *
 * It works on one node and on a Redis Cluster alike: the ten keys of an
 * identity share the hash tag `{mur_…}`, so each FCALL/FCALL_RO names keys of
 * one slot and ioredis sends it to the master owning that slot (routing by the
 * first key, checked by `assertFcallRouting`). The control hash, its acks and
 * the generation index are single-key commands, each routed by its own key.
 * Whatever walks the keyspace (`scanKeys`, `dropPrefix`) walks every master.
 */
import type { Cluster, Redis } from "ioredis";
import type { PartOp } from "../../fold/delta.js";
import { controlKey, generationPrefix, identityKeys, indexKey, partIndex } from "../../fold/keys.js";
import { assertFcallRouting, isCluster, masterNodes } from "./connect.js";
import { APPLY_FUNCTION, READ_FUNCTION, loadFunctions } from "./functions.js";
import { applyResult } from "./errors.js";

export interface StoredIdentity {
  meta: Record<string, string>;
  records: Map<string, string>;
}

/** One change-feed entry: its stream id and its fields. */
/**
 * The change feed of a generation: `<prefix>:g<N>:changes`, a capped Redis
 * Stream. It has no hash tag, so on a cluster it lives in its own slot.
 */
export function changesKey(prefix: string, generation: number): string {
  return `${generationPrefix(prefix, generation)}:changes`;
}

export interface Control {
  generation: number | null;
  paused: boolean;
  epoch: number;
}

export class RedisStore {
  /** One library reload at a time, shared by every call that found the library missing. */
  private reloading: Promise<void> | undefined;

  constructor(
    readonly redis: Redis | Cluster,
    readonly prefix: string,
  ) {
    if (isCluster(redis)) assertFcallRouting();
  }

  keys(generation: number, identity: string): string[] {
    return identityKeys(this.prefix, generation, identity);
  }

  async load(generation: number, identity: string): Promise<StoredIdentity> {
    const [m, d] = this.keys(generation, identity);
    // The records hash is read as a flat reply into a Map: an object per identity keyed by
    // observation ids would give V8 a new hidden class per id, a leak across 100k identities.
    const [meta, flat] = await Promise.all([this.redis.hgetall(m!), this.redis.call("HGETALL", d!) as Promise<string[]>]);
    const records = new Map<string, string>();
    for (let i = 0; i + 1 < flat.length; i += 2) records.set(flat[i]!, flat[i + 1]!);
    return { meta, records };
  }

  /** Apply writes if the identity is still at `expectedVersion`; returns the new version. */
  async apply(generation: number, identity: string, expectedVersion: number, watermarks: Map<string, bigint>, ops: readonly PartOp[]): Promise<number> {
    const args: (string | number)[] = [String(expectedVersion), watermarks.size];
    for (const [field, offset] of watermarks) args.push(field, offset.toString());
    for (const op of ops) args.push(op.op, partIndex(op.part) + 1, op.field, op.value);
    const keys = this.keys(generation, identity);
    const reply = await this.fcall("FCALL", APPLY_FUNCTION, keys, args);
    return applyResult(identity, reply);
  }

  /** The packet bytes, exactly the reducer's, or null for an unknown identity. */
  async read(generation: number, identity: string): Promise<string | null> {
    const keys = this.keys(generation, identity);
    const reply = await this.fcall("FCALL_RO", READ_FUNCTION, keys, []);
    return reply === null ? null : String(reply);
  }

  /**
   * Call a library function, loading the library again if Redis lost it
   * (restart, FLUSHALL, FUNCTION FLUSH). On a cluster the reload reaches every
   * master, so a single restarted master is covered; concurrent calls that
   * all found it missing share one reload.
   */
  private async fcall(command: "FCALL" | "FCALL_RO", fn: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await this.redis.call(command, fn, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !/Function not found/i.test(err.message)) throw err;
      await this.reloadFunctions();
      return this.redis.call(command, fn, keys.length, ...keys, ...args);
    }
  }

  private reloadFunctions(): Promise<void> {
    this.reloading ??= loadFunctions(this.redis).finally(() => (this.reloading = undefined));
    return this.reloading;
  }

  async meta(generation: number, identity: string): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys(generation, identity)[0]!);
  }

  async addToIndex(generation: number, identities: readonly string[]): Promise<void> {
    if (identities.length > 0) await this.redis.sadd(indexKey(this.prefix, generation), ...identities);
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

  /** Append entries (field/value lists) to the generation's change feed, trimmed to about `maxLen` (XADD MAXLEN ~). */
  async appendChanges(generation: number, maxLen: number, entries: readonly (readonly string[])[]): Promise<string[]> {
    if (entries.length === 0) return [];
    const key = changesKey(this.prefix, generation);
    const pipeline = this.redis.pipeline();
    for (const fields of entries) pipeline.xadd(key, "MAXLEN", "~", maxLen, "*", ...fields);
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([err, id]) => {
      if (err) throw err;
      return String(id);
    });
  }

  /** Delete a generation's change feed (with dropGeneration, after a promote or a verify-only replay). */
  async dropChanges(generation: number): Promise<number> {
    return this.redis.unlink(changesKey(this.prefix, generation));
  }

  async control(): Promise<Control> {
    const [generation, paused, epoch] = await this.redis.hmget(controlKey(this.prefix), "generation", "paused", "epoch");
    return { generation: generation === null ? null : Number(generation), paused: paused === "1", epoch: Number(epoch ?? "0") };
  }

  /** Create generation 1 if there is none yet; returns the current generation. */
  async initGeneration(): Promise<number> {
    const key = controlKey(this.prefix);
    if ((await this.redis.hsetnx(key, "generation", "1")) === 1) await this.redis.hsetnx(key, "last", "1");
    return (await this.control()).generation!;
  }

  /** Reserve a new generation number for a rebuild (never reused). */
  async allocateGeneration(): Promise<number> {
    const key = controlKey(this.prefix);
    const current = (await this.control()).generation ?? 0;
    await this.redis.hsetnx(key, "last", String(current));
    return this.redis.hincrby(key, "last", 1);
  }

  async setControl(fields: Partial<{ generation: number; paused: boolean; epoch: number }>): Promise<void> {
    const flat: string[] = [];
    if (fields.generation !== undefined) flat.push("generation", String(fields.generation));
    if (fields.paused !== undefined) flat.push("paused", fields.paused ? "1" : "0");
    if (fields.epoch !== undefined) flat.push("epoch", String(fields.epoch));
    if (flat.length > 0) await this.redis.hset(controlKey(this.prefix), ...flat);
  }

  async ackPause(member: string, epoch: number): Promise<void> {
    await this.redis.hset(`${controlKey(this.prefix)}:acks`, member, String(epoch));
  }

  async pauseAcks(): Promise<Record<string, string>> {
    return this.redis.hgetall(`${controlKey(this.prefix)}:acks`);
  }

  /** Delete every key of a generation (after a promote has moved past it). */
  async dropGeneration(generation: number): Promise<number> {
    let removed = 0;
    const ids = await this.listIdentities(generation);
    for (let i = 0; i < ids.length; i += 200) {
      // One UNLINK per identity: its ten keys share one slot.
      const counts = await Promise.all(ids.slice(i, i + 200).map((id) => this.redis.unlink(...this.keys(generation, id))));
      for (const n of counts) removed += n;
    }
    removed += await this.redis.unlink(indexKey(this.prefix, generation));
    return removed;
  }

  /** Every key under `<prefix>:` on every master (SCAN per node; the order is unspecified). */
  async scanKeys(match = `${this.prefix}:*`): Promise<string[]> {
    const out = new Set<string>();
    for (const node of await masterNodes(this.redis)) {
      let cursor = "0";
      do {
        const [next, batch] = await node.scan(cursor, "MATCH", match, "COUNT", 1000);
        for (const key of batch) out.add(key);
        cursor = next;
      } while (cursor !== "0");
    }
    return [...out];
  }

  /**
   * Delete every key under `<prefix>:` (all generations, the control hash and
   * its acks) on every master; returns how many were removed. Keys are
   * unlinked one by one through the client, which routes each by its slot.
   */
  async dropPrefix(): Promise<number> {
    const keys = await this.scanKeys();
    let removed = 0;
    for (let i = 0; i < keys.length; i += 1000) {
      const counts = await Promise.all(keys.slice(i, i + 1000).map((k) => this.redis.unlink(k)));
      for (const n of counts) removed += n;
    }
    return removed;
  }
}

