/**
 * Reading projections back, for Node callers: find the current generation,
 * compute an identity from scope + snapshot refs, and fetch the packet bytes
 * with one Redis call. `get` adds the typed packet, its ETag and its version;
 * `subscribe` follows the change feed. Uses only the reader ACL role's
 * commands (FCALL_RO, HGET, SSCAN, XREAD).
 */
import type { Cluster, Redis } from "ioredis";
import { IDENTITY_PATTERN, normalizeContext, parsePyJson, reducerIdentity, validateProjection, DEFAULT_REDUCER_VERSION, type PyObject, type Scope } from "../core/index.js";
import { openRedis, readerClientSettings } from "../adapters/redis/connect.js";
import { RedisControlStore } from "../adapters/redis/control-store.js";
import { RedisIdentityStore } from "../adapters/redis/identity-store.js";
import { controlKey, identityKey, markField } from "../adapters/redis/keys.js";
import { IndexError, packetAsOf, type LogPosition } from "../fold/offset-index.js";
import { META_FIELDS } from "../fold/stored-names.js";
import { etagOf } from "../core/digest.js";
import { statingRefForm } from "../core/fields.js";
import { MufoldError } from "../errors.js";
import { followChanges, type FeedEvent, type SubscribeOptions } from "./change-feed.js";
import { settingsOf, type ClientOptions } from "./options.js";
import { SETTINGS } from "../config/settings.js";
import type { Projection } from "./projection.js";

/** What names a projection without its identity: the scope, the two snapshots and the reducer version. */
export interface ScopeRef {
  scope: Scope;
  retrieval_snapshot_ref: string;
  policy_snapshot_ref: string;
  /** Default: the reader's reducer version (memory_utility_reducer_v0 unless configured). */
  reducer_version?: string;
}

/** The identity a consumer computes itself from what it knows; throws ContractError for a ref that is not canonical. */
export function identityOf(ref: ScopeRef, defaultReducerVersion: string = DEFAULT_REDUCER_VERSION): string {
  try {
    return reducerIdentity(
      normalizeContext({
        scope: { ...ref.scope },
        retrieval_snapshot_ref: ref.retrieval_snapshot_ref,
        policy_snapshot_ref: ref.policy_snapshot_ref,
        reducer_version: ref.reducer_version ?? defaultReducerVersion,
      }),
    );
  } catch (err) {
    throw statingRefForm(err);
  }
}

/** One packet as read. */
export interface ProjectionRead {
  identity: string;
  /** The generation it was read from. */
  generation: number;
  /** The identity's version in that generation (every applied change adds 1). Versions of different generations are not comparable. */
  version: number;
  /** The packet: canonical JSON, exactly the reducer's bytes (UTF-8). */
  text: string;
  /** The packet parsed. */
  projection: Projection;
  /** `"<sha256 hex of the packet bytes>"`, the ETag `mufold serve` sends for it. */
  etag: string;
  /** For an as-of read (GetOptions.asOf): the points and the deliveries the packet is the reducer over. */
  asOf?: AsOfUsed;
}

export interface GetOptions {
  /** Run the fail-closed readback validator first (throws ContractError if the packet is not valid). */
  validate?: boolean;
  /**
   * The projection as of a point of the log: the reducer over the identity's records at or before the offset
   * on each named partition of the reader's topic (a partition not named contributes none of its records).
   * Throws AsOfNotAvailableError (code `as_of_not_available`) for a point the live generation has not folded,
   * or one its stored state cannot rebuild.
   */
  asOf?: LogPosition | readonly LogPosition[];
}

/** What an as-of read used. */
export interface AsOfUsed {
  /** The points asked for. */
  points: LogPosition[];
  /** The identity's deliveries at or before them: the records the packet is the reducer over. */
  deliveries: number;
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

const READ_ATTEMPTS = 5;
const DEFAULT_TOPIC = SETTINGS.topic.default;

/**
 * Reads packets from Redis: `ProjectionReader.connect(options)` opens a
 * reader's connection of its own; `new ProjectionReader(redis, prefix)` uses
 * one you have.
 */
export class ProjectionReader {
  /** @internal The storage adapter, for mufold's own commands and tests. */
  readonly store: RedisIdentityStore;
  /** Only for the live generation, by a plain HGET (the reader role runs no control function). */
  private readonly control: RedisControlStore;
  private owned = false;

  constructor(
    readonly redis: Redis | Cluster,
    readonly prefix = "mufold",
    /** The reducer version of by-scope reads that do not name one. */
    readonly reducerVersion: string = DEFAULT_REDUCER_VERSION,
    /** The observation topic whose offsets as-of reads name. */
    readonly topic: string = DEFAULT_TOPIC,
  ) {
    this.store = new RedisIdentityStore(redis, prefix);
    this.control = new RedisControlStore(redis, prefix);
  }

  /**
   * Connect with a reader's connection (options, else the environment, else
   * the defaults); `close()` ends it. Fails with a retriable MufoldError naming
   * the endpoint at once when the port refuses the connection (nothing listens
   * there: the caller decides when to try again), else when Redis stays silent
   * for MUFOLD_CONNECT_TIMEOUT_MS; with a non-retriable one when Redis refuses
   * the credentials.
   */
  static async connect(options: ClientOptions = {}): Promise<ProjectionReader> {
    const settings = settingsOf(options);
    const redis = await openRedis(readerClientSettings(settings), settings.connectTimeoutMs, { refusedIsFinal: true });
    const reader = new ProjectionReader(redis, settings.prefix, settings.reducerVersion, settings.topic);
    reader.owned = true;
    return reader;
  }

  /** The live generation; throws a MufoldError when there is none. */
  async generation(): Promise<number> {
    const generation = await this.control.liveGeneration();
    if (generation === null) throw new MufoldError("no mufold generation in Redis: nothing has been folded, or the state was lost (run `mufold replay --promote`)");
    return generation;
  }

  /** The packet's canonical JSON bytes, or null for an unknown identity. */
  async read(identity: string, generation?: number): Promise<string | null> {
    return this.store.read(generation ?? (await this.generation()), identity);
  }

  /** The packet's canonical JSON bytes for a scope and its snapshots (the identity as identityOf computes it), or null when there is none. */
  async readByScope(ref: ScopeRef): Promise<string | null> {
    return this.read(identityOf(ref, this.reducerVersion));
  }

  /** Read and run the readback validator; throws ContractError if the packet is not valid. */
  async readValidated(identity: string): Promise<PyObject | null> {
    const text = await this.read(identity);
    return text === null ? null : validateProjection(parsePyJson(text));
  }

  /**
   * One packet by identity (`mur_…`) or by scope, with its version and ETag;
   * null when there is no projection for it. The packet and the version are
   * read consistently (the version is read before and after; a change in
   * between reads again).
   */
  async get(target: string | ScopeRef, options: GetOptions = {}): Promise<ProjectionRead | null> {
    const identity = typeof target === "string" ? target : identityOf(target, this.reducerVersion);
    if (!IDENTITY_PATTERN.test(identity)) throw new MufoldError(`invalid identity ${JSON.stringify(identity.slice(0, 80))}: must be mur_ followed by 64 lowercase hex digits`);
    if (options.asOf !== undefined) return this.getAsOf(identity, Array.isArray(options.asOf) ? [...(options.asOf as LogPosition[])] : [options.asOf as LogPosition], options);
    for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      const generation = await this.generation();
      const meta = identityKey(this.prefix, generation, identity, "m");
      const before = await this.redis.hget(meta, META_FIELDS.version);
      const text = await this.store.read(generation, identity);
      const after = await this.redis.hget(meta, META_FIELDS.version);
      if (text === null) {
        // Unknown here, unless a promote moved the generation under the read.
        if ((await this.generation()) === generation) return null;
        continue;
      }
      if (before === null || before !== after) continue;
      if (options.validate === true) validateProjection(parsePyJson(text));
      const projection = JSON.parse(text) as Projection;
      if (projection.schema_version !== "memory_utility_projection_v0") throw new MufoldError(`the packet of ${identity} is not a memory_utility_projection_v0 packet`);
      return { identity, generation, version: Number(after), text, projection, etag: etagOf(text) };
    }
    throw new MufoldError(`the projection ${identity} changed during ${READ_ATTEMPTS} reads in a row: retry`, { retriable: true });
  }

  /**
   * The as-of read: the live generation's marks bound what can be asked for (read first: everything before a
   * mark is applied), then one atomic call reads the identity's payloads and offset index, and the reducer runs
   * over the deliveries at or before the points (src/fold/offset-index.ts). One identity's records, no topic scan.
   */
  private async getAsOf(identity: string, points: LogPosition[], options: GetOptions): Promise<ProjectionRead | null> {
    if (points.length === 0) throw new MufoldError("an as-of read needs at least one partition:offset");
    for (const p of points) {
      if (!Number.isSafeInteger(p.partition) || p.partition < 0 || typeof p.offset !== "bigint" || p.offset < 0n) {
        throw new MufoldError(`invalid as-of point ${String(p.partition)}:${String(p.offset)}: a partition and an offset, both non-negative integers (the offset a bigint)`);
      }
    }
    for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      const generation = await this.generation();
      for (const p of points) {
        const mark = await this.redis.hget(controlKey(this.prefix), markField(generation, this.topic, p.partition));
        const next = mark === null ? 0n : BigInt(mark);
        if (p.offset >= next) {
          throw new AsOfNotAvailableError(
            next === 0n
              ? `generation ${generation} has folded nothing of ${this.topic} partition ${p.partition}`
              : `generation ${generation} has folded ${this.topic} partition ${p.partition} up to offset ${next - 1n}: as-of offsets 0 to ${next - 1n} are available there, not ${p.offset}`,
            next === 0n ? null : { partition: p.partition, from: 0n, to: next - 1n },
          );
        }
      }
      const stored = await this.store.loadHistory(generation, identity);
      const version = stored.meta[META_FIELDS.version];
      const context = stored.meta.ctx;
      if (version === undefined || context === undefined) {
        if ((await this.generation()) === generation) return null;
        continue; // a promote moved the generation under the read
      }
      let asOf: { packet: string; used: number } | null;
      try {
        asOf = packetAsOf(
          { context: JSON.parse(context) as never, deliveries: Number(stored.meta[META_FIELDS.deliveries] ?? "0"), records: stored.records, history: stored.history, index: stored.index },
          points,
        );
      } catch (err) {
        if (err instanceof IndexError) throw new AsOfNotAvailableError(`${identity}: ${err.message}`, null);
        throw err;
      }
      if (asOf === null) {
        throw new AsOfNotAvailableError(`${identity} passed the delivery bound: its payloads are dropped, so only points that include the delivery that crossed it (the packet is then the rejected one) are available`, null);
      }
      const text = asOf.packet;
      if (options.validate === true) validateProjection(parsePyJson(text));
      const projection = JSON.parse(text) as Projection;
      return { identity, generation, version: Number(version), text, projection, etag: etagOf(text), asOf: { points, deliveries: asOf.used } };
    }
    throw new MufoldError(`the generation of ${identity} changed during ${READ_ATTEMPTS} reads in a row: retry`, { retriable: true });
  }

  /** The identities with a packet in a generation (default: the live one). */
  async identities(generation?: number): Promise<string[]> {
    return this.store.listIdentities(generation ?? (await this.generation()));
  }

  /**
   * Follow the change feed: a GenerationEvent first (and after each promote),
   * then a ChangeEvent per applied change, newest version per identity only.
   *
   * ```ts
   * for await (const event of reader.subscribe({ signal })) {
   *   if (event.type === "change") console.log(event.identity, event.version, event.status);
   * }
   * ```
   */
  subscribe(options: SubscribeOptions = {}): AsyncGenerator<FeedEvent, void, undefined> {
    return followChanges(this.redis, this.prefix, options);
  }

  /** Close the connection if `connect` opened it (a connection passed to the constructor stays the caller's). */
  async close(): Promise<void> {
    if (this.owned) await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
