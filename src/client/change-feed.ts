/**
 * Following the change feed (docs/architecture.md "Change feed"): each
 * generation's capped stream `<prefix>:g<N>:changes` with one entry per
 * change the fold applied. Delivery is at least once and, with several
 * workers, possibly out of version order, so the follower keeps the highest
 * version per identity and drops entries at or below it. A promote moves the
 * live generation: the follower announces it and continues on the new
 * generation's stream from its start (resynchronize from the packets there).
 * Uses only commands of the reader ACL role (HGET, XREAD).
 */
import type { RedisClient } from "../adapters/redis/connect.js";
import { CONTROL_FIELDS, changesKey, controlKey } from "../adapters/redis/keys.js";
import { MufoldError } from "../errors.js";
import { PROJECTION_STATUSES, type ProjectionStatus } from "./projection.js";

/** A change applied to one identity. */
export interface ChangeEvent {
  type: "change";
  generation: number;
  /** The stream entry id: pass it as `after` to resume after this entry. */
  id: string;
  identity: string;
  /** The identity's version in this generation after the change. */
  version: number;
  status: ProjectionStatus;
  /** The identity's content digest (not the ETag): equal for equal content in any generation. */
  digest: string;
  /** Deliveries this change applied. */
  deliveries: number;
  /** Announced again after a crash between the apply and its announcement. */
  repeated: boolean;
}

/** The live generation, first when the feed starts and again after each promote: (re)read the packets you keep. */
export interface GenerationEvent {
  type: "generation";
  generation: number;
  previous: number | null;
}

/** What `ProjectionReader.subscribe` yields: narrow on `type`. */
export type FeedEvent = ChangeEvent | GenerationEvent;

/** Where `ProjectionReader.subscribe` starts, how it reads, and what stops it. */
export interface SubscribeOptions {
  /**
   * Resume after this entry (a ChangeEvent's generation and id). If that
   * generation is no longer live, the feed starts with a GenerationEvent whose
   * `previous` is it, from the live stream's start. Default: the live stream's
   * oldest entry still kept (the stream is capped).
   */
  after?: { generation: number; id: string };
  /** How long one XREAD waits for entries, in ms, before the generation is checked again (default 1000). */
  blockMs?: number;
  /** Entries per XREAD (default 100). */
  count?: number;
  /** Yield every entry, repeats and older versions included (default false: only a newer version per identity). */
  everyEntry?: boolean;
  /** Stops the iteration (also while it waits). */
  signal?: AbortSignal;
}

const STATUS_SET: ReadonlySet<string> = new Set(PROJECTION_STATUSES);

async function liveGeneration(redis: RedisClient, prefix: string): Promise<number | null> {
  const g = await redis.hget(controlKey(prefix), CONTROL_FIELDS.generation);
  return g === null ? null : Number(g);
}

/** One stream entry as a ChangeEvent; a malformed entry is an error, never skipped. */
export function parseChangeEntry(generation: number, id: string, flat: readonly string[]): ChangeEvent {
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) f.set(flat[i]!, flat[i + 1]!);
  const identity = f.get("identity");
  const version = Number(f.get("version"));
  const status = f.get("status");
  const digest = f.get("digest");
  const deliveries = Number(f.get("deliveries"));
  if (identity === undefined || !Number.isSafeInteger(version) || status === undefined || !STATUS_SET.has(status) || digest === undefined || !Number.isSafeInteger(deliveries)) {
    throw new MufoldError(`malformed change feed entry ${id} in generation ${generation}: ${JSON.stringify(Object.fromEntries(f))}`);
  }
  return { type: "change", generation, id, identity, version, status: status as ProjectionStatus, digest, deliveries, repeated: f.get("repeated") === "1" };
}

/** The change feed of `prefix` as an async iterator; see SubscribeOptions. */
export async function* followChanges(redis: RedisClient, prefix: string, options: SubscribeOptions = {}): AsyncGenerator<FeedEvent, void, undefined> {
  const blockMs = options.blockMs ?? 1000;
  const count = options.count ?? 100;
  const signal = options.signal;
  const aborted = (): boolean => signal?.aborted === true;
  // XREAD BLOCK holds its connection: a connection of its own, so the reader's other calls go on.
  const blocking = redis.duplicate();
  blocking.on("error", () => undefined);
  const stop = () => blocking.disconnect();
  signal?.addEventListener("abort", stop, { once: true });
  try {
    let generation: number | null = options.after?.generation ?? null;
    let cursor = options.after?.id ?? "0";
    let announced = false;
    const highest = new Map<string, number>();
    while (!aborted()) {
      const live = await liveGeneration(redis, prefix);
      if (live === null) {
        // Nothing folded yet (or the state was lost): wait for a generation.
        await new Promise((resolve) => setTimeout(resolve, blockMs));
        continue;
      }
      if (live !== generation || !announced) {
        if (live !== generation) {
          cursor = "0";
          highest.clear();
        }
        const previous = announced || live !== generation ? generation : null;
        yield { type: "generation", generation: live, previous };
        generation = live;
        announced = true;
      }
      let reply: [string, [string, string[]][]][] | null;
      try {
        reply = (await blocking.xread("COUNT", count, "BLOCK", blockMs, "STREAMS", changesKey(prefix, generation), cursor)) as typeof reply;
      } catch (err) {
        if (aborted()) return;
        throw err;
      }
      for (const [, entries] of reply ?? []) {
        for (const [id, flat] of entries) {
          cursor = id;
          const change = parseChangeEntry(generation, id, flat);
          if (options.everyEntry !== true) {
            if (change.version <= (highest.get(change.identity) ?? -1)) continue;
            highest.set(change.identity, change.version);
          }
          yield change;
          if (aborted()) return;
        }
      }
    }
  } finally {
    signal?.removeEventListener("abort", stop);
    blocking.disconnect();
  }
}
