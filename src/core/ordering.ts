/**
 * The reference's observation order key: (UTC instant, raw `created_at`,
 * `observation_id`). The raw string breaks ties between equal instants
 * written with different offsets, so retry order never picks the survivor.
 */
import { parseContractTimestamp } from "./fields.js";
import { commonUtcSeconds, utcInstant, utcMicros, type Instant } from "./iso-timestamp.js";
import { PACKED_ORDER_MAX_ITEMS, indexesByPackedKeys } from "./packed-order.js";
import { pyStrCompare } from "./pyvalue.js";

export interface Ordered {
  readonly created_at: string;
  readonly observation_id: string;
}

/**
 * UTC instant of a validated `created_at`. Parsed on every ask: the common
 * shape parses in ~50 ns, less than a memo's lookup (a 1,024-slot table
 * missed ~60% of asks at 1,000 observations and cost ~70 ns a hit), and a memo
 * kept strings and instants that outlived the young generation.
 */
export function instantOf(createdAt: string): Instant {
  const parsed = parseContractTimestamp(createdAt);
  if (parsed === null || parsed.offsetMicros === null) throw new Error(`not a validated timestamp: ${createdAt}`);
  return utcInstant(parsed);
}

/**
 * The UTC seconds of a validated `created_at`, its microseconds then in
 * `utcMicros()`: the common shape read without making an object (two per
 * comparison were ~350 bytes of young garbage a folded record), any other
 * through instantOf.
 */
export function utcSecondsOfCreated(createdAt: string): number {
  const seconds = commonUtcSeconds(createdAt);
  return seconds === seconds ? seconds : instantOf(createdAt).seconds; // utcInstant sets utcMicros() too
}

export function compareOrder(a: Ordered, b: Ordered): number {
  if (a.created_at !== b.created_at) {
    const secondsA = utcSecondsOfCreated(a.created_at);
    const microsA = utcMicros();
    const secondsB = utcSecondsOfCreated(b.created_at);
    const byInstant = secondsA !== secondsB ? secondsA - secondsB : microsA - utcMicros();
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
 * `items` sorted by compareOrder. Each instant is looked up once, and the items are ordered by their whole seconds
 * since the earliest with the native numeric sort (packed-order.ts); items whose seconds tie are then put in order
 * by the whole comparison (any span of years 1 to 9999 is below 2^39 seconds). Too many items to pack take the
 * comparison sort.
 */
export function sortedInOrder<T extends Ordered>(items: readonly T[]): T[] {
  return indexesInOrder(items).map((i) => items[i]!);
}

/** The indexes of `items` in sortedInOrder's order (a caller with arrays beside `items` reads them by index). */
export function indexesInOrder(items: readonly Ordered[]): number[] {
  const n = items.length;
  const byItem = (x: number, y: number) => compareOrder(items[x]!, items[y]!);
  if (n > PACKED_ORDER_MAX_ITEMS) return Array.from({ length: n }, (_, i) => i).sort(byItem);
  const seconds: number[] = new Array<number>(n);
  let earliest = Infinity;
  for (let i = 0; i < n; i++) {
    const s = utcSecondsOfCreated(items[i]!.created_at);
    seconds[i] = s;
    if (s < earliest) earliest = s;
  }
  for (let i = 0; i < n; i++) seconds[i] = seconds[i]! - earliest;
  return indexesByPackedKeys(seconds, byItem);
}
