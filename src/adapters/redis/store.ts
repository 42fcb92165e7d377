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
import { Redis, type Cluster } from "ioredis";
import { opRuns, type PartOp } from "../../fold/delta.js";
import { CONTROL_FIELDS, INDEX_KEY_PATTERN, acksKey, changesKey, controlKey, generationOfIndexKey, identityKeys, indexKey, partIndex } from "../../fold/keys.js";
import type { IdentityStore, PositionGuard, StoredIdentity } from "../../fold/identity-store.js";
import { assertFcallRouting, isCluster, masterNodes } from "./connect.js";
import { APPLY_FUNCTION, CONTROL_FUNCTIONS, GUARDED_APPLY_FUNCTION, READ_FUNCTION } from "./functions.js";
import { applyResult, classifyRedisError, controlResult } from "./errors.js";
import { WRITE_GROUP, WriteCoalescer } from "./write-coalescing.js";
import { EncodedCommand, encodeCommand } from "./encoded-command.js";

export type { StoredIdentity };

export interface Control {
  generation: number | null;
  /** A promote holds the fleet still (and its lease has not expired). */
  paused: boolean;
  epoch: number;
  /** The live generation's reducer version (null without a live generation). */
  reducerVersion: string | null;
}

/** mufold_apply_v2's opcodes (mufold_v1.lua). */
const OPCODES: Record<PartOp["op"], string> = { HSET: "H", HDEL: "D", ZADD: "Z", ZREM: "R", DEL: "X" };

export interface RedisStoreOptions {
  /** Coalesce the loads', applies' and index writes in groups of this many (write-coalescing.ts); one node, not auto-pipelined, only. */
  writeGroup?: number;
}

/**
 * The store a writer folds through (the live fold's, a replay build's): its connection is not auto-pipelined, so
 * its writes leave in groups of WRITE_GROUP.
 */
export function writerStore(redis: Redis | Cluster, prefix: string): RedisStore {
  return new RedisStore(redis, prefix, { writeGroup: WRITE_GROUP });
}

export class RedisStore implements IdentityStore {
  private readonly coalescer: WriteCoalescer | null;
  /** Function calls go out as pre-encoded bytes (one node only). */
  private readonly encoded: boolean;

  constructor(
    readonly redis: Redis | Cluster,
    readonly prefix: string,
    options: RedisStoreOptions = {},
  ) {
    if (isCluster(redis)) assertFcallRouting();
    this.coalescer = options.writeGroup === undefined || isCluster(redis) ? null : new WriteCoalescer(redis as Redis, options.writeGroup);
    this.encoded = redis instanceof Redis; // a node's client (not a cluster's, nor a stand-in)
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
  async apply(generation: number, identity: string, expectedVersion: number, watermarks: ReadonlyMap<string, bigint>, ops: readonly PartOp[], guard?: PositionGuard): Promise<number> {
    const guarded = guard !== undefined && !isCluster(this.redis);
    const args: (string | number)[] = guarded ? [String(generation), guard.partition, guard.from.toString()] : [];
    args.push(String(expectedVersion), watermarks.size);
    for (const [field, offset] of watermarks) args.push(field, offset.toString());
    // mufold_apply_v2: a program of runs (one command each), then only the operands.
    const at = args.push("") - 1;
    let program = "";
    for (const run of opRuns(ops)) {
      program += `${program === "" ? "" : " "}${OPCODES[run.op]}${partIndex(run.part) + 1}*${run.ops.length}`;
      if (run.op === "HSET") for (const op of run.ops) args.push(op.field, op.value);
      else if (run.op !== "DEL") for (const op of run.ops) args.push(op.field);
    }
    args[at] = program;
    const keys = this.keys(generation, identity);
    if (guarded) keys.push(controlKey(this.prefix));
    this.coalescer?.beforeCommand();
    const reply = await this.fcall("FCALL", guarded ? GUARDED_APPLY_FUNCTION : APPLY_FUNCTION, keys, args);
    return applyResult(identity, reply, guarded ? { generation, guard } : undefined);
  }

  /** The packet bytes, exactly the reducer's, or null for an unknown identity. */
  async read(generation: number, identity: string): Promise<string | null> {
    const keys = this.keys(generation, identity);
    const reply = await this.fcall("FCALL_RO", READ_FUNCTION, keys, []);
    return reply === null ? null : String(reply);
  }

  /**
   * Call a library function. A Redis that lost the libraries (restart without
   * persistence, FLUSHALL, FUNCTION FLUSH) gets a FunctionsMissingError: loading
   * Lua is `mufold setup`'s (an admin's) job, not the fold's or a reader's.
   */
  private async fcall(command: "FCALL" | "FCALL_RO", fn: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      // One node: the command's RESP bytes written straight into one Buffer (encoded-command.ts); a cluster routes by
      // the keys among ioredis's arguments.
      if (this.encoded) return await this.redis.sendCommand(new EncodedCommand(command, encodeCommand(command, [fn, keys.length], keys, args)));
      return await this.redis.call(command, fn, keys.length, ...keys, ...args);
    } catch (err) {
      throw classifyRedisError(err, fn);
    }
  }

  async meta(generation: number, identity: string): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys(generation, identity)[partIndex("m")]!);
  }

  async addToIndex(generation: number, identities: readonly string[]): Promise<void> {
    if (identities.length === 0) return;
    // A replay's build indexes each group of a chunk as its turn comes: dozens of SADDs in one turn.
    this.coalescer?.beforeCommand();
    await this.redis.sadd(indexKey(this.prefix, generation), ...identities);
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

  /** The live generation, the effective pause (lease honoured) and the live generation's reducer version. */
  async control(): Promise<Control> {
    const [generation, paused, epoch, rv] = (await this.controlCall("FCALL_RO", CONTROL_FUNCTIONS.state, [])) as [number, number, number, string];
    return { generation: generation < 0 ? null : generation, paused: paused === 1, epoch, reducerVersion: rv === "" ? null : rv };
  }

  /** Make a live generation if there is none (with this reducer version); returns the live one and its reducer version. */
  async initGeneration(reducerVersion: string): Promise<{ generation: number; reducerVersion: string }> {
    const [generation, rv] = (await this.controlCall("FCALL", CONTROL_FUNCTIONS.init, [reducerVersion])) as [number, string];
    return { generation, reducerVersion: rv };
  }

  /** Reserve a new generation number for a rebuild (never reused, even after Redis lost everything). */
  async allocateGeneration(reducerVersion: string, buildToken: string, leaseMs = 60_000): Promise<number> {
    return Number(await this.controlCall("FCALL", CONTROL_FUNCTIONS.allocate, [reducerVersion, buildToken, String(leaseMs)]));
  }

  /** Renew a rebuild's lease; throws GenerationMovedError when its token is gone (Redis lost it, or it was promoted). */
  async renewBuild(generation: number, buildToken: string, leaseMs: number): Promise<void> {
    const code = Number(await this.controlCall("FCALL", CONTROL_FUNCTIONS.renewBuild, [String(generation), buildToken, String(leaseMs)]));
    controlResult(code, { generation });
  }

  /**
   * Check that `generation` is still the one being written ("live", or the
   * build token of a rebuild) and raise its per-partition marks (next offsets).
   * Throws GenerationMovedError when Redis lost or replaced it.
   */
  async seal(generation: number, mode: string, marks: ReadonlyMap<string, bigint>, firstOffsets: ReadonlyMap<string, bigint> = new Map()): Promise<void> {
    const args: string[] = [String(generation), mode];
    for (const [field, next] of marks) args.push(field, next.toString(), firstOffsets.get(field)?.toString() ?? "");
    const [code, current] = (await this.controlCall("FCALL", CONTROL_FUNCTIONS.seal, args)) as [number, number];
    const partition = marks.size === 1 ? [...marks.keys()][0] : undefined;
    controlResult(code, { generation, current, partition, from: partition === undefined ? undefined : firstOffsets.get(partition) });
  }

  /** Record (first writer) or check the fingerprint of a partition's record at offset 0; throws TopicOriginError when it differs. */
  async checkOrigin(generation: number, mode: string, partition: string, fingerprint: string): Promise<void> {
    const [code, current] = (await this.controlCall("FCALL", CONTROL_FUNCTIONS.origin, [String(generation), mode, partition, fingerprint])) as [number, number];
    controlResult(code, { generation, partition, current });
  }

  /** A generation's marks (`<topic>:<partition>` → next offset) or origins, from the control hash. */
  async generationFields(generation: number, kind: "mark" | "origin"): Promise<Map<string, string>> {
    const all = await this.redis.hgetall(controlKey(this.prefix));
    const head = `${kind}:${generation}:`;
    const out = new Map<string, string>();
    for (const [field, value] of Object.entries(all)) if (field.startsWith(head)) out.set(field.slice(head.length), value);
    return out;
  }

  /** Generations a replay is building and still renewing (a killed replay's lease runs out). */
  async buildingGenerations(): Promise<Set<number>> {
    const gens = (await this.controlCall("FCALL_RO", CONTROL_FUNCTIONS.building, [])) as string[];
    return new Set(gens.map(Number));
  }

  /** The live generation by a plain HGET (what any reader does; no function call, no TIME). */
  async liveGeneration(): Promise<number | null> {
    const g = await this.redis.hget(controlKey(this.prefix), CONTROL_FIELDS.generation);
    return g === null ? null : Number(g);
  }

  /**
   * Take a new fleet pause (`epoch` null: a new epoch, returned) or renew this
   * epoch's for `leaseMs`. Throws PauseLostError when another pause holds, or
   * when the one renewed no longer holds (a lapsed lease is never taken back).
   */
  async pause(epoch: number | null, leaseMs: number): Promise<number> {
    const [code, held] = (await this.controlCall("FCALL", CONTROL_FUNCTIONS.pause, [epoch === null ? "" : String(epoch), String(leaseMs)])) as [number, number];
    controlResult(code, { generation: 0 });
    return held;
  }

  /** Clear the pause if it is still this epoch's. */
  async unpause(epoch: number): Promise<void> {
    await this.controlCall("FCALL", CONTROL_FUNCTIONS.unpause, [String(epoch)]);
  }

  /**
   * Make a rebuilt generation live and clear the pause — only if its token is
   * held, the live generation is still `previous`, the pause (with an epoch)
   * still holds, and no live mark is past the rebuild's (unless `logChanged`:
   * the live generation folded another log). Idempotent.
   */
  async promote(generation: number, buildToken: string, epoch: number | null, previous: number | null, logChanged = false): Promise<void> {
    const args = [String(generation), buildToken, epoch === null ? "" : String(epoch), previous === null ? "" : String(previous), logChanged ? "1" : "0"];
    const [code] = (await this.controlCall("FCALL", CONTROL_FUNCTIONS.promote, args)) as [number];
    controlResult(code, { generation });
  }

  /** Forget the live generation's marks, if it is still `generation`: the fold folds the whole log into it again. */
  async rewind(generation: number): Promise<void> {
    const [code, current] = (await this.controlCall("FCALL", CONTROL_FUNCTIONS.rewind, [String(generation)])) as [number, number];
    controlResult(code, { generation, current });
  }

  /** Forget a dropped generation's control fields (reducer version, build token, marks, origins). */
  async forgetGeneration(generation: number): Promise<void> {
    await this.controlCall("FCALL", CONTROL_FUNCTIONS.forget, [String(generation)]);
  }

  /** Generations that have an identity index in Redis (live, rebuilding, or orphaned by a loss). */
  async indexedGenerations(): Promise<number[]> {
    const found = await this.scanKeys(INDEX_KEY_PATTERN(this.prefix));
    return found
      .map((k) => generationOfIndexKey(this.prefix, k))
      .filter((g): g is number => g !== null)
      .sort((a, b) => a - b);
  }

  private controlCall(command: "FCALL" | "FCALL_RO", fn: string, args: string[]): Promise<unknown> {
    return this.fcall(command, fn, [controlKey(this.prefix)], args);
  }

  async ackPause(member: string, epoch: number): Promise<void> {
    await this.redis.hset(acksKey(this.prefix), member, String(epoch));
  }

  /** Forget every acknowledgement (a new pause: each live worker acknowledges it again within a poll). */
  async clearPauseAcks(): Promise<void> {
    await this.redis.del(acksKey(this.prefix));
  }

  async pauseAcks(): Promise<Record<string, string>> {
    return this.redis.hgetall(acksKey(this.prefix));
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
    await this.forgetGeneration(generation);
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

