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

const instants = new Map<string, Instant>();
const MAX_CACHED = 20_000;

/** UTC instant of a validated `created_at`; memoized because sorts ask often. */
export function instantOf(createdAt: string): Instant {
  let instant = instants.get(createdAt);
  if (instant === undefined) {
    const parsed = parseContractTimestamp(createdAt);
    if (parsed === null || parsed.offsetMicros === null) throw new Error(`not a validated timestamp: ${createdAt}`);
    instant = utcInstant(parsed);
    if (instants.size >= MAX_CACHED) instants.clear();
    instants.set(createdAt, instant);
  }
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
