/**
 * Redis key layout. Every key of one identity shares the hash tag `{mur_…}`,
 * so one script call can touch them all, on a single node or a cluster.
 *
 *   <prefix>:control                  hash: generation, paused, epoch, marks, origins
 *   <prefix>:control:acks             hash: member → the pause epoch it acknowledged
 *   <prefix>:g<N>:index               set of reducer identities in generation N
 *   <prefix>:g<N>:changes             change feed stream of generation N (capped; no hash tag)
 *   <prefix>:g<N>:{mur_…}:<part>      the identity's parts (see IDENTITY_PARTS)
 *
 * This module is the one place for these names; the Lua libraries receive the
 * keys as KEYS and the part order and meta field names in a header generated
 * from this module (src/adapters/redis/lua-header.ts).
 */
export const IDENTITY_PARTS = ["m", "d", "s", "si", "h", "hi", "hl", "c", "ci", "p"] as const;
export type IdentityPart = (typeof IDENTITY_PARTS)[number];

export function generationPrefix(prefix: string, generation: number): string {
  return `${prefix}:g${generation}`;
}

export function identityKeys(prefix: string, generation: number, identity: string): string[] {
  const base = `${generationPrefix(prefix, generation)}:{${identity}}`;
  return IDENTITY_PARTS.map((part) => `${base}:${part}`);
}

/** Fields of an identity's meta hash (part `m`). */
export const META_FIELDS = {
  /** The identity's version: every apply checks and bumps it. */
  version: "v",
  /** The whole packet when the identity is rejected (past 1,024 deliveries), compact form. */
  rejected: "rej",
  /** The packet with its four lists cut out (pieces joined by \x01). */
  skeleton: "skel",
  /** Accepted observations: decides whether the history is bounded (and `hl` kept). */
  accepted: "acc",
  /** The content digest (docs/architecture.md "Change feed"). */
  digest: "dig",
  /** Deliveries folded (every delivery, duplicates and conflicts included). */
  deliveries: "n",
  /** The last change's note, to announce it again after a redelivery. */
  change: "chg",
} as const;

/** Meta fields `w:<topic>:<partition>` hold a partition's watermark (the next offset to fold). */
export const WATERMARK_PREFIX = "w:";

/** Fields of the control hash that readers use: the live generation. The rest is the control library's (mufold_control_v1.lua). */
export const CONTROL_FIELDS = { generation: "generation" } as const;

export function partIndex(part: IdentityPart): number {
  return IDENTITY_PARTS.indexOf(part);
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

/** Generations with an index, from index key names (`<prefix>:g<N>:index`): the SCAN pattern and the parser. */
export const INDEX_KEY_PATTERN = (prefix: string): string => `${prefix}:g*:index`;
export function generationOfIndexKey(prefix: string, key: string): number | null {
  const head = `${prefix}:g`;
  if (!key.startsWith(head) || !key.endsWith(":index")) return null;
  const g = key.slice(head.length, key.length - ":index".length);
  return /^\d+$/.test(g) ? Number(g) : null;
}

export function indexKey(prefix: string, generation: number): string {
  return `${generationPrefix(prefix, generation)}:index`;
}

export function watermarkField(topic: string, partition: number): string {
  return `${WATERMARK_PREFIX}${topic}:${partition}`;
}
