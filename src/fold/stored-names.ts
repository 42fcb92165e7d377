/**
 * What the engine stores of an identity, by name: its ten parts, the fields of
 * its meta hash and its watermark fields. Where they live (Redis keys, hash
 * tags, the part order the Lua functions take) is the Redis adapter's:
 * src/adapters/redis/keys.ts. The Lua libraries receive these names in a
 * header generated from this module (src/adapters/redis/lua-header.ts).
 *
 * Parts: `m` meta hash, `d` delivery records, `s`/`si` subjects and their
 * order, `h`/`hi`/`hl` history fragments, their order and each subject's
 * latest, `c`/`ci` rejections and their order, `p` proposals.
 */
import { flat } from "../core/flat-string.js";

export const IDENTITY_PARTS = ["m", "d", "s", "si", "h", "hi", "hl", "c", "ci", "p"] as const;
export type IdentityPart = (typeof IDENTITY_PARTS)[number];

/**
 * The offset index (offset-index.ts): a list beside the ten parts, written by mufold_apply_v4 only. Not one of
 * IDENTITY_PARTS, whose order the earlier functions take their keys in; it is the eleventh key of v4.
 */
export const OFFSET_INDEX_PART = "x";
/** Every part an apply writes: the ten, then the offset index. */
export const STORED_PARTS = [...IDENTITY_PARTS, OFFSET_INDEX_PART] as const;
export type StoredPart = (typeof STORED_PARTS)[number];

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

/**
 * The field of a partition's watermark. Made once per (topic, partition) and reused: a plan asks once per
 * delivery, and a fresh template string (joined, then flattened to key a Map) was ~100 bytes of garbage a record.
 */
export function watermarkField(topic: string, partition: number): string {
  let fields = FIELDS_BY_TOPIC.get(topic);
  if (fields === undefined) {
    if (FIELDS_BY_TOPIC.size >= MEMO_TOPICS) FIELDS_BY_TOPIC.clear(); // a worker reads few topics; a test many
    FIELDS_BY_TOPIC.set(topic, (fields = []));
  }
  return (fields[partition] ??= flat(`${WATERMARK_PREFIX}${topic}:${partition}`));
}

const MEMO_TOPICS = 64;
const FIELDS_BY_TOPIC = new Map<string, string[]>();
