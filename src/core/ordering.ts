/**
 * The reference's observation order key: (UTC instant, raw `created_at`,
 * `observation_id`). The raw string breaks ties between equal instants
 * written with different offsets, so retry order never picks the survivor.
 */
import { parseContractTimestamp } from "./fields.js";
import { compareInstants, utcInstant, type Instant } from "./iso-timestamp.js";
import { pyStrCompare } from "./pyvalue.js";

export interface Ordered {
  readonly created_at: string;
  readonly observation_id: string;
}

/**
 * The instants of recently asked timestamps, direct-mapped by a hash of their
 * last characters: sorts and comparisons ask for the same few again and again.
 * A fold meets a new timestamp with nearly every record, and a Map memo of
 * 20,000 of them was rebuilt as it filled and promoted with its entries
 * (~0.2 KB a record, bench/alloc-sites.ts --survivors); a slot is overwritten
 * instead, so at most SLOTS instants are held.
 */
const SLOTS = 1024;
const slotText: (string | undefined)[] = new Array<string | undefined>(SLOTS).fill(undefined);
const slotInstant: (Instant | undefined)[] = new Array<Instant | undefined>(SLOTS).fill(undefined);

function slotOf(text: string): number {
  let h = text.length;
  for (let i = Math.max(0, text.length - 12); i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0;
  return (h ^ (h >>> 10)) & (SLOTS - 1);
}

/** UTC instant of a validated `created_at`; remembered (above) because sorts ask often. */
export function instantOf(createdAt: string): Instant {
  const slot = slotOf(createdAt);
  if (slotText[slot] === createdAt) return slotInstant[slot]!;
  const parsed = parseContractTimestamp(createdAt);
  if (parsed === null || parsed.offsetMicros === null) throw new Error(`not a validated timestamp: ${createdAt}`);
  const instant = utcInstant(parsed);
  slotText[slot] = createdAt;
  slotInstant[slot] = instant;
  return instant;
}

const instantOfItem = (item: Ordered): Instant => instantOf(item.created_at);

export function compareOrder(a: Ordered, b: Ordered): number {
  return compareWithInstants(a, b, instantOfItem);
}

/** The order key comparison, each created_at's instant from `instant` (looked up only when the two differ). */
function compareWithInstants<T extends Ordered>(a: T, b: T, instant: (item: T) => Instant): number {
  if (a.created_at !== b.created_at) {
    const byInstant = compareInstants(instant(a), instant(b));
    if (byInstant !== 0) return byInstant;
    return pyStrCompare(a.created_at, b.created_at);
  }
  return pyStrCompare(a.observation_id, b.observation_id);
}

/** `_latest`: created_at and id of the last item in order, or nulls. */
export function latestOf(items: readonly Ordered[]): [string | null, string | null] {
  let latest: Ordered | undefined;
  for (const item of items) if (latest === undefined || compareOrder(item, latest) >= 0) latest = item;
  return latest === undefined ? [null, null] : [latest.created_at, latest.observation_id];
}

/**
 * `items` sorted by compareOrder, each instant looked up once (not twice per
 * comparison): the subject recheck sorts every subject of a packet this way.
 */
export function sortedInOrder<T extends Ordered>(items: readonly T[]): T[] {
  const instants = new Map(items.map((item) => [item, instantOf(item.created_at)]));
  return [...items].sort((a, b) => compareWithInstants(a, b, (item) => instants.get(item)!));
}
