/**
 * The Redis key layout of one prefix. Every key of one identity shares the
 * hash tag `{mur_…}`, so one function call can touch them all, on a single
 * node or a cluster.
 *
 *   <prefix>:control                  hash: generation, paused, epoch, marks, origins (mufold_control_v1.lua)
 *   <prefix>:control:acks             hash: member → the pause epoch it acknowledged
 *   <prefix>:g<N>:index               set of reducer identities in generation N
 *   <prefix>:g<N>:changes             change feed stream of generation N (capped; no hash tag)
 *   <prefix>:g<N>:{mur_…}:<part>      the identity's parts, in IDENTITY_PARTS order (src/fold/stored-names.ts)
 *   <prefix>:g<N>:{mur_…}:x           list: the identity's offset index, where its deliveries are (src/fold/offset-index.ts)
 *
 * This module is the one place for these names; the Lua libraries receive the
 * keys as KEYS, in this order.
 */
import { IDENTITY_PARTS, OFFSET_INDEX_PART, STORED_PARTS, type IdentityPart } from "../../fold/stored-names.js";

function generationPrefix(prefix: string, generation: number): string {
  return `${prefix}:g${generation}`;
}

/** An identity's ten keys, in the order the identity library's functions take them. */
export function identityKeys(prefix: string, generation: number, identity: string): string[] {
  const base = `${generationPrefix(prefix, generation)}:{${identity}}`;
  return IDENTITY_PARTS.map((part) => `${base}:${part}`);
}

/**
 * The keys mufold_apply_v4 and mufold_as_of_v1 take: the ten, then the offset index (a list, same hash tag).
 * Every key an identity has: dropping one unlinks these.
 */
export function storedKeys(prefix: string, generation: number, identity: string): string[] {
  return [...identityKeys(prefix, generation, identity), offsetIndexKey(prefix, generation, identity)];
}

/**
 * storedKeys in pieces: key i is `head + identity + STORED_KEY_TAILS[i]`, for a writer that puts the
 * pieces into a command without joining them (apply-command.ts).
 */
export function storedKeyHead(prefix: string, generation: number): string {
  return `${generationPrefix(prefix, generation)}:{`;
}

export const STORED_KEY_TAILS: readonly string[] = STORED_PARTS.map((part) => `}:${part}`);

/** The identity's offset index (src/fold/offset-index.ts). */
export function offsetIndexKey(prefix: string, generation: number, identity: string): string {
  return `${generationPrefix(prefix, generation)}:{${identity}}:${OFFSET_INDEX_PART}`;
}

/** The position of a part among an identity's keys (the Lua's `PART`, 0-based). */
export function partIndex(part: IdentityPart): number {
  return IDENTITY_PARTS.indexOf(part);
}

/** One part's key. */
export function identityKey(prefix: string, generation: number, identity: string, part: IdentityPart): string {
  return identityKeys(prefix, generation, identity)[partIndex(part)]!;
}

/** Fields of the control hash that readers use: the live generation. The rest is the control library's (mufold_control_v1.lua). */
export const CONTROL_FIELDS = { generation: "generation" } as const;

/** The control hash's field of generation N's mark for a partition: the next offset it has folded (mufold_control_v1.lua). */
export function markField(generation: number, topic: string, partition: number): string {
  return `mark:${generation}:${topic}:${partition}`;
}

export function controlKey(prefix: string): string {
  return `${prefix}:control`;
}

/** Pause acknowledgements: one field per fold member. */
export function acksKey(prefix: string): string {
  return `${controlKey(prefix)}:acks`;
}

/**
 * The change feed of a generation: a capped Redis Stream. It has no hash tag,
 * so on a cluster it lives in its own slot.
 */
export function changesKey(prefix: string, generation: number): string {
  return `${generationPrefix(prefix, generation)}:changes`;
}

export function indexKey(prefix: string, generation: number): string {
  return `${generationPrefix(prefix, generation)}:index`;
}

/** Generations with an index, from index key names (`<prefix>:g<N>:index`): the SCAN pattern and the parser. */
export const INDEX_KEY_PATTERN = (prefix: string): string => `${prefix}:g*:index`;
export function generationOfIndexKey(prefix: string, key: string): number | null {
  const head = `${prefix}:g`;
  if (!key.startsWith(head) || !key.endsWith(":index")) return null;
  const g = key.slice(head.length, key.length - ":index".length);
  return /^\d+$/.test(g) ? Number(g) : null;
}
