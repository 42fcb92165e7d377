/**
 * Answers about an identity's past, read from its stored payloads and offset
 * index (src/fold/offset-index.ts) with one atomic call: the packet as of a
 * point, the explanation of every delivery (src/fold/provenance.ts), and the
 * difference between two points (src/fold/projection-diff.ts). One
 * identity's records, never a scan of the topic.
 */
import type { Cluster, Redis } from "ioredis";
import { pyFromIsoFormat, type ReducerContext } from "../core/index.js";
import type { RedisIdentityStore } from "../adapters/redis/identity-store.js";
import { controlKey, markField } from "../adapters/redis/keys.js";
import { IndexError, indexedDeliveries, lastUsed, type AsOfPoint, type IndexedDelivery, type LogPosition } from "../fold/offset-index.js";
import { META_FIELDS } from "../fold/stored-names.js";
import { MufoldError } from "../errors.js";

/** An as-of point by time: a Date, or an ISO 8601 date-time with its offset (`2026-12-05T09:30:00Z`). */
export interface AsOfTime {
  time: Date | string;
}

/** A point of an identity's past: positions on partitions of the topic, or a time. */
export type AsOf = LogPosition | readonly LogPosition[] | AsOfTime;

/** What an as-of answer used. */
export interface AsOfUsed {
  /** The positions asked for (empty for a time). */
  points: LogPosition[];
  /** The time asked for, as ISO 8601 UTC with milliseconds (absent for positions). */
  time?: string;
  /** The identity's indexed deliveries at or before the point: the records the packet is the reducer over (at most 1,025: past the index's bound the packet is the constant rejected one). */
  deliveries: number;
  /** Per partition, the offset of the last of those deliveries: the offsets the answer used. */
  used: LogPosition[];
}

/** An as-of point the live generation cannot answer; `available` names what it can. */
export class AsOfNotAvailableError extends MufoldError {
  readonly code = "as_of_not_available";
  constructor(
    message: string,
    /** Per partition named: the offsets that can be asked for (`from` to `to`, inclusive), or null when none. */
    readonly available: { partition: number; from: bigint; to: bigint } | null,
  ) {
    super(`as_of_not_available: ${message}`, { retriable: false });
  }
}

/** The accepted forms of an as-of time, for error messages. */
export const AS_OF_TIME_FORM = "an ISO 8601 date-time with its UTC offset, like 2026-12-05T09:30:00Z or 2026-12-05T11:30:00.250+02:00";

/**
 * An ISO 8601 date-time with its UTC offset (as Python's datetime.fromisoformat reads it: a real calendar date)
 * as ms since the epoch, rounded down (record timestamps are whole ms); null for anything else, a naive time included.
 */
export function parseAsOfTime(text: string): number | null {
  const dt = pyFromIsoFormat(text);
  if (dt === null || dt.offsetMicros === null || !text.includes("T")) return null;
  // Date.UTC maps years 0-99 to 1900-1999: set the full year afterwards.
  const day = new Date(Date.UTC(2000, dt.month - 1, dt.day, dt.hour, dt.minute, dt.second));
  day.setUTCFullYear(dt.year);
  const ms = day.getTime() + Math.floor(dt.microsecond / 1000) - dt.offsetMicros / 1000;
  return Number.isFinite(ms) ? Math.floor(ms) : null;
}

/** The accepted form of as-of positions, for error messages. */
export const AS_OF_OFFSET_FORM = "PARTITION:OFFSET[,PARTITION:OFFSET…] with non-negative integers, e.g. 3:1200 or 0:17,5:40";

/** Positions as text (`3:1200` or `0:17,5:40`, each partition once), or why the text is not that. */
export function parsePositions(text: string): LogPosition[] | { error: string } {
  const points: LogPosition[] = [];
  for (const part of text.split(",")) {
    const m = /^(\d{1,9}):(\d{1,19})$/.exec(part);
    const offset = m === null ? -1n : BigInt(m[2]!);
    if (m === null || offset > 0x7fffffffffffffffn) return { error: `expected ${AS_OF_OFFSET_FORM}` };
    const partition = Number(m[1]);
    if (points.some((p) => p.partition === partition)) return { error: `partition ${partition} is named twice` };
    points.push({ partition, offset });
  }
  return points;
}

/** An AsOf checked; throws MufoldError naming the accepted forms. */
export function asOfPoint(asOf: AsOf): AsOfPoint {
  if ("time" in asOf) {
    const time = asOf.time instanceof Date ? asOf.time.getTime() : typeof asOf.time === "string" ? parseAsOfTime(asOf.time) : null;
    if (time === null || !Number.isFinite(time)) {
      throw new MufoldError(`invalid as-of time ${JSON.stringify(String(asOf.time).slice(0, 80))}: a valid Date, or ${AS_OF_TIME_FORM}`);
    }
    return { time };
  }
  const points = Array.isArray(asOf) ? [...(asOf as readonly LogPosition[])] : [asOf as LogPosition];
  if (points.length === 0) throw new MufoldError("an as-of read needs at least one partition:offset");
  for (const p of points) {
    if (!Number.isSafeInteger(p.partition) || p.partition < 0 || typeof p.offset !== "bigint" || p.offset < 0n) {
      throw new MufoldError(`invalid as-of point ${String(p.partition)}:${String(p.offset)}: a partition and an offset, both non-negative integers (the offset a bigint)`);
    }
  }
  return { points };
}

/** What AsOfUsed says of a point and the deliveries it includes. */
export function asOfUsed(point: AsOfPoint, all: readonly IndexedDelivery[], deliveries: number): AsOfUsed {
  const used = lastUsed(all, point);
  return "points" in point ? { points: [...point.points], deliveries, used } : { points: [], time: new Date(point.time).toISOString(), deliveries, used };
}

/** An identity's past as stored in one generation. */
export interface StoredPast {
  generation: number;
  version: number;
  context: ReducerContext;
  /** Every indexed delivery, in the order applied, with its payload. */
  deliveries: IndexedDelivery[];
  /** Deliveries past the index's bound (counted in the meta, not indexed). */
  notIndexed: number;
}

/** Where the past is read from: the reader's connection, store and settings. */
export interface PastSource {
  redis: Redis | Cluster;
  prefix: string;
  topic: string;
  store: RedisIdentityStore;
  /** The live generation; throws when there is none. */
  generation(): Promise<number>;
}

const READ_ATTEMPTS = 5;

/**
 * Load an identity's past for the points (null: no point, its whole indexed past): the live generation's marks
 * bound the positions that can be asked for (read first: everything before a mark is applied), a time must not
 * be later than now; then one atomic call reads the payloads and the index. Null for an unknown identity.
 */
export async function loadPast(source: PastSource, identity: string, points: readonly (AsOfPoint | null)[]): Promise<StoredPast | null> {
  for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
    const generation = await source.generation();
    for (const point of points) {
      if (point === null) continue;
      if ("points" in point) await assertFolded(source, generation, point.points);
      else if (point.time > Date.now()) {
        throw new AsOfNotAvailableError(`${new Date(point.time).toISOString()} is later than now: records at or before it may still be written`, null);
      }
    }
    const stored = await source.store.loadHistory(generation, identity);
    const version = stored.meta[META_FIELDS.version];
    const context = stored.meta.ctx;
    if (version === undefined || context === undefined) {
      if ((await source.generation()) === generation) return null;
      continue; // a promote moved the generation under the read
    }
    const count = Number(stored.meta[META_FIELDS.deliveries] ?? "0");
    const parsed = JSON.parse(context) as ReducerContext;
    try {
      const deliveries = indexedDeliveries({ context: parsed, deliveries: count, records: stored.records, history: stored.history, index: stored.index });
      return { generation, version: Number(version), context: parsed, deliveries, notIndexed: count - deliveries.length };
    } catch (err) {
      if (err instanceof IndexError) throw new AsOfNotAvailableError(`${identity}: ${err.message}`, null);
      throw err;
    }
  }
  throw new MufoldError(`the generation of ${identity} changed during ${READ_ATTEMPTS} reads in a row: retry`, { retriable: true });
}

/** Refuse positions the generation has not folded: everything before a mark is applied, nothing at or after it. */
async function assertFolded(source: PastSource, generation: number, points: readonly LogPosition[]): Promise<void> {
  for (const p of points) {
    const mark = await source.redis.hget(controlKey(source.prefix), markField(generation, source.topic, p.partition));
    const next = mark === null ? 0n : BigInt(mark);
    if (p.offset < next) continue;
    throw new AsOfNotAvailableError(
      next === 0n
        ? `generation ${generation} has folded nothing of ${source.topic} partition ${p.partition}`
        : `generation ${generation} has folded ${source.topic} partition ${p.partition} up to offset ${next - 1n}: as-of offsets 0 to ${next - 1n} are available there, not ${p.offset}`,
      next === 0n ? null : { partition: p.partition, from: 0n, to: next - 1n },
    );
  }
}

/** Run a step over the indexed deliveries; an IndexError (the index cannot answer this point) is as_of_not_available. */
export function answerable<T>(identity: string, step: () => T): T {
  try {
    return step();
  } catch (err) {
    if (err instanceof IndexError) throw new AsOfNotAvailableError(`${identity}: ${err.message}`, null);
    throw err;
  }
}

/** The error for a point before the delivery that crossed the bound: the payloads it needs are dropped. */
export function pastTheBound(identity: string): AsOfNotAvailableError {
  return new AsOfNotAvailableError(
    `${identity} passed the delivery bound: its payloads are dropped, so only points that include the delivery that crossed it (the packet is then the rejected one) are available`,
    null,
  );
}
