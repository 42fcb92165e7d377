/**
 * The IdentityStore port in memory: the unit tier's store, with the semantics
 * of the Redis adapter's Lua functions (src/adapters/redis/functions/mufold_v1.lua),
 * mirrored step by step (tokens expanded on read as the Lua `expand` does). Each identity has the same ten keys as in Redis, each
 * absent, a hash or a sorted set of score-0 members; the identity contract
 * suite (test/support/identity-store-contract.ts) runs against both stores.
 *
 * Redis details it keeps, because the packet bytes depend on them:
 *  - values are bytes: ioredis writes strings as UTF-8, so a lone surrogate is
 *    stored (and read back) as U+FFFD;
 *  - ZRANGE over equal scores is byte order (memcmp of UTF-8), not UTF-16 order;
 *  - an emptied hash or sorted set no longer exists, a type mismatch is WRONGTYPE;
 *  - a script is not rolled back: an op that fails leaves the earlier ones written.
 *
 * Pure: no IO.
 */
import { compareBytes } from "../../core/byte-order.js";
import { idOfMember } from "../../core/sort-keys.js";
import { MAX_PROJECTION_HISTORY, MAX_PROJECTION_REJECTIONS } from "../../core/projection-limits.js";
import { SKELETON_SEPARATOR } from "../../core/packet-parts.js";
import { expandTokens } from "../../core/compact-json.js";
import { fragmentText } from "../../core/fragment.js";
import { PartOps, opRuns, type PartOp } from "../../fold/delta.js";
import { PositionContradictedError, StaleVersionError, StateLostError, type IdentityStore, type PositionGuard, type StoredIdentity } from "../../fold/identity-store.js";
import { META_FIELDS, type StoredPart } from "../../fold/stored-names.js";
import type { MemoryControlStore } from "./control-store.js";

type Value = { kind: "hash"; fields: Map<string, string> } | { kind: "zset"; members: Set<string> } | { kind: "list"; items: string[] };
/** One identity's keys, by part (the ten and the offset index); an absent part is an absent key. */
type Keys = Map<StoredPart, Value>;
type IdentityPart = StoredPart;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** What Redis gives back for a string ioredis sent it (UTF-8 encoding replaces lone surrogates). */
function stored(text: string): string {
  return text.replace(LONE_SURROGATE, "\uFFFD");
}

/** memcmp order of the UTF-8 encodings, as ZRANGE returns score-0 members (re-exported for tests). */
export { compareBytes };

const wrongType = () => new Error("WRONGTYPE Operation against a key holding the wrong kind of value");

function hashOf(keys: Keys, part: IdentityPart): Map<string, string> | undefined {
  const value = keys.get(part);
  if (value !== undefined && value.kind !== "hash") throw wrongType();
  return value?.fields;
}

function zsetOf(keys: Keys, part: IdentityPart): Set<string> | undefined {
  const value = keys.get(part);
  if (value !== undefined && value.kind !== "zset") throw wrongType();
  return value?.members;
}

function hset(keys: Keys, part: IdentityPart, field: string, value: string): void {
  let fields = hashOf(keys, part);
  if (fields === undefined) keys.set(part, { kind: "hash", fields: (fields = new Map()) });
  fields.set(stored(field), stored(value));
}

function hdel(keys: Keys, part: IdentityPart, field: string): void {
  const fields = hashOf(keys, part);
  if (fields?.delete(stored(field)) && fields.size === 0) keys.delete(part);
}

function zadd(keys: Keys, part: IdentityPart, member: string): void {
  let members = zsetOf(keys, part);
  if (members === undefined) keys.set(part, { kind: "zset", members: (members = new Set()) });
  members.add(stored(member));
}

function zrem(keys: Keys, part: IdentityPart, member: string): void {
  const members = zsetOf(keys, part);
  if (members?.delete(stored(member)) && members.size === 0) keys.delete(part);
}

function rpush(keys: Keys, part: IdentityPart, item: string): void {
  const value = keys.get(part);
  if (value !== undefined && value.kind !== "list") throw wrongType();
  if (value === undefined) keys.set(part, { kind: "list", items: [stored(item)] });
  else value.items.push(stored(item));
}

/** LRANGE key 0 -1. */
function lrange(keys: Keys, part: IdentityPart): string[] {
  const value = keys.get(part);
  if (value !== undefined && value.kind !== "list") throw wrongType();
  return value === undefined ? [] : [...value.items];
}

/** ZRANGE key 0 -1 over score-0 members. */
function zrange(keys: Keys, part: IdentityPart): string[] {
  return [...(zsetOf(keys, part) ?? [])].sort(compareBytes);
}

function runOp(keys: Keys, op: PartOp): void {
  switch (op.op) {
    case "HSET":
      return hset(keys, op.part, op.field, fragmentText(op.value)); // held as text, as Redis would return it
    case "HDEL":
      return hdel(keys, op.part, op.field);
    case "ZADD":
      return zadd(keys, op.part, op.field);
    case "ZREM":
      return zrem(keys, op.part, op.field);
    case "DEL":
      keys.delete(op.part);
      return;
    case "RPUSH":
      return rpush(keys, op.part, op.field);
    default:
      throw new Error(`unknown op ${String((op as PartOp).op)}`);
  }
}

/** HMGET of the ids, the missing fields dropped, joined by commas (the Lua `fragments`). */
function fragments(keys: Keys, part: IdentityPart, ids: readonly (string | undefined)[]): string {
  const fields = hashOf(keys, part);
  const out: string[] = [];
  for (const id of ids) {
    const value = id === undefined ? undefined : fields?.get(id);
    if (value !== undefined) out.push(value);
  }
  return out.join(",");
}

/** The Lua `history_ids`: all members up to the bound; past it, every subject's latest entry and the newest others. */
function historyIds(keys: Keys, accepted: number): (string | undefined)[] {
  const members = zrange(keys, "hi");
  if (accepted <= MAX_PROJECTION_HISTORY) return members.map(idOfMember);
  // A latest member no longer in the order still takes a place, as in the Lua.
  const keep = new Set(hashOf(keys, "hl")?.values() ?? []);
  for (let i = members.length - 1; i >= 0 && keep.size < MAX_PROJECTION_HISTORY; i--) keep.add(members[i]!);
  return members.filter((m) => keep.has(m)).map(idOfMember);
}

/** The Lua `read`: the rejected packet, or the skeleton's five pieces around the four lists. */
function assemble(keys: Keys): string | null {
  const meta = hashOf(keys, "m");
  const rejected = meta?.get(META_FIELDS.rejected);
  if (rejected !== undefined) return expandTokens(rejected);
  const skeleton = meta?.get(META_FIELDS.skeleton);
  if (skeleton === undefined) return null;
  const pieces = skeleton.split(SKELETON_SEPARATOR);
  if (pieces.length < 5) throw new Error("mufold_read_v1: the skeleton has fewer than five pieces"); // Lua's concat fails on the hole
  const history = fragments(keys, "h", historyIds(keys, Number(meta?.get(META_FIELDS.accepted) ?? "0")));
  const rejections = fragments(keys, "c", zrange(keys, "ci").slice(0, MAX_PROJECTION_REJECTIONS));
  const subjectIds = zrange(keys, "si").map(idOfMember);
  const proposals = fragments(keys, "p", subjectIds);
  const subjects = fragments(keys, "s", subjectIds);
  return expandTokens(`${pieces[0]}[${history}]${pieces[1]}[${rejections}]${pieces[2]}[${proposals}]${pieces[3]}[${subjects}]${pieces[4]}`);
}

export class MemoryIdentityStore implements IdentityStore {
  readonly indexKeepsListings: boolean = true;
  /** `<generation>:<identity>` → its keys (an identity with no key left is dropped). */
  private readonly identities = new Map<string, Keys>();
  private readonly indexes = new Map<number, Set<string>>();

  /** `control`: what the position guard reads, as mufold_apply_v3 reads the control hash (none: an empty one, nothing is live). */
  constructor(private readonly control?: MemoryControlStore) {}

  private keys(generation: number, identity: string): Keys {
    return this.identities.get(`${generation}:${identity}`) ?? new Map();
  }

  async load(generation: number, identity: string): Promise<StoredIdentity> {
    const keys = this.keys(generation, identity);
    return { meta: Object.fromEntries(hashOf(keys, "m") ?? []), records: new Map(hashOf(keys, "d")), history: new Map(hashOf(keys, "h")) };
  }

  async apply(generation: number, identity: string, expectedVersion: number, watermarks: ReadonlyMap<string, bigint>, ops: PartOps | readonly PartOp[], guard?: PositionGuard): Promise<number> {
    const runs = opRuns(PartOps.from(ops)); // ops that do not commute are refused before anything is written, as by the Redis store
    if (guard !== undefined) {
      // mufold_apply_v3's guard, before the version check as there
      const refused = this.control === undefined ? "not_live" : this.control.guardRefusal(generation, guard.partition, guard.from);
      if (refused !== null) throw new PositionContradictedError(refused, generation, guard.partition, guard.from);
    }
    const key = `${generation}:${identity}`;
    const keys = this.keys(generation, identity);
    // Versions compare as the strings Redis holds, as in the Lua.
    const expected = String(expectedVersion);
    const current = hashOf(keys, "m")?.get(META_FIELDS.version);
    if (current === undefined && expected !== "0") throw new StateLostError(`identity ${identity} had state that the store no longer holds`);
    if (current !== undefined && current !== expected) throw new StaleVersionError(identity, Number(current));
    const version = Number(current ?? "0") + 1;
    this.identities.set(key, keys);
    try {
      for (const [field, offset] of watermarks) hset(keys, "m", field, offset.toString());
      for (const run of runs) for (const op of run.ops) runOp(keys, op);
      hset(keys, "m", META_FIELDS.version, String(version));
    } finally {
      if (keys.size === 0) this.identities.delete(key);
    }
    return version;
  }

  /** What mufold_as_of_v1 returns: the meta hash, `d`, `h` and the offset index. */
  async loadHistory(generation: number, identity: string): Promise<StoredIdentity & { index: string[] }> {
    const keys = this.keys(generation, identity);
    return { ...(await this.load(generation, identity)), index: lrange(keys, "x") };
  }

  async addToIndex(generation: number, identities: readonly string[]): Promise<ReadonlySet<string>> {
    let index = this.indexes.get(generation);
    if (index === undefined) this.indexes.set(generation, (index = new Set()));
    const added = new Set<string>();
    for (const identity of identities) {
      const key = stored(identity);
      if (!index.has(key)) added.add(identity);
      index.add(key);
    }
    return added;
  }

  async read(generation: number, identity: string): Promise<string | null> {
    return assemble(this.keys(generation, identity));
  }

  async listIdentities(generation: number): Promise<string[]> {
    return [...(this.indexes.get(generation) ?? [])].sort();
  }

  /** Forget an identity's keys, as a Redis that lost them (eviction, flush): for tests of the state-lost path. */
  lose(generation: number, identity: string): void {
    this.identities.delete(`${generation}:${identity}`);
  }
}
