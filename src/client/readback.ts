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
import { identityKey } from "../adapters/redis/keys.js";
import { packetOf, stateAsOf, type AsOfPoint } from "../fold/offset-index.js";
import { explainDeliveries, type ExplainedDelivery, type DecisionCounts } from "../fold/provenance.js";
import { diffExplanations, type ProjectionDiff } from "../fold/projection-diff.js";
import { META_FIELDS } from "../fold/stored-names.js";
import { etagOf } from "../core/digest.js";
import { statingRefForm } from "../core/fields.js";
import { MufoldError } from "../errors.js";
import { followChanges, type FeedEvent, type SubscribeOptions } from "./change-feed.js";
import { settingsOf, type ClientOptions } from "./options.js";
import { SETTINGS } from "../config/settings.js";
import type { Projection } from "./projection.js";
import { answerable, asOfPoint, asOfUsed, loadPast, pastTheBound, type AsOf, type AsOfUsed, type PastSource, type StoredPast } from "./past.js";

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
   * The projection as of a point of the past. Positions: the reducer over the identity's records at or before
   * the offset on each named partition of the reader's topic (a partition not named contributes none of its
   * records). A time: over its records whose Kafka timestamp (the topic's timestamp type) is at or before it.
   * Throws AsOfNotAvailableError (code `as_of_not_available`) for a position the live generation has not
   * folded, a time later than now, or a point its stored state cannot rebuild.
   */
  asOf?: AsOf;
}

/** An identity's deliveries explained (ProjectionReader.explain). */
export interface ProjectionExplanation {
  identity: string;
  generation: number;
  version: number;
  /** The packet's status at the point. */
  status: string;
  /** The packet the deliveries make: the as-of read's bytes (the live packet without a point). */
  text: string;
  etag: string;
  /** Every indexed delivery the point includes, in the order applied (src/fold/provenance.ts says what each decision means). */
  deliveries: ExplainedDelivery[];
  /** The decisions counted: equal to the packet's counters of the same names. */
  counts: DecisionCounts;
  /** The identity's deliveries past the index's bound (1,025 kept): counted in its meta, never listed, whatever the point. */
  notIndexed: number;
  asOf?: AsOfUsed;
}

/** Where an explain looks: a point of the past, or (absent) the identity's whole indexed past. */
export interface ExplainOptions {
  asOf?: AsOf;
}

const READ_ATTEMPTS = 5;
const DEFAULT_TOPIC = SETTINGS.topic.default;

/** What changed between two points of an identity's past (ProjectionReader.diff), with both explanations. */
export interface ProjectionChange extends ProjectionDiff {
  identity: string;
  from: ProjectionExplanation;
  to: ProjectionExplanation;
}

function checkIdentity(identity: string): void {
  if (!IDENTITY_PATTERN.test(identity)) throw new MufoldError(`invalid identity ${JSON.stringify(identity.slice(0, 80))}: must be mur_ followed by 64 lowercase hex digits`);
}

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
    checkIdentity(identity);
    if (options.asOf !== undefined) return this.getAsOf(identity, asOfPoint(options.asOf), options);
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
   * The as-of read (GetOptions.asOf): the reducer over the deliveries the point includes, rebuilt from the
   * identity's stored payloads and offset index (src/client/past.ts).
   */
  private async getAsOf(identity: string, point: AsOfPoint, options: GetOptions): Promise<ProjectionRead | null> {
    const past = await loadPast(this.pastSource(), identity, [point]);
    if (past === null) return null;
    const asOf = answerable(identity, () => stateAsOf(past.deliveries, point));
    if (asOf === null) throw pastTheBound(identity);
    const text = packetOf(past.context, asOf.state);
    if (options.validate === true) validateProjection(parsePyJson(text));
    const projection = JSON.parse(text) as Projection;
    return { identity, generation: past.generation, version: past.version, text, projection, etag: etagOf(text), asOf: asOfUsed(point, past.deliveries, asOf.used) };
  }

  /**
   * Every delivery that reached an identity (up to a point of its past, or all of them): its position, Kafka
   * timestamp and observation id, what the fold made of it and which parts of the packet it feeds. Null for an
   * unknown identity; AsOfNotAvailableError as for an as-of read.
   *
   * ```ts
   * const why = await reader.explain("mur_…");
   * for (const d of why?.deliveries ?? []) console.log(d.partition, d.offset, d.observation_id, d.decision);
   * ```
   */
  async explain(identity: string, options: ExplainOptions = {}): Promise<ProjectionExplanation | null> {
    checkIdentity(identity);
    const point = options.asOf === undefined ? null : asOfPoint(options.asOf);
    const past = await loadPast(this.pastSource(), identity, [point]);
    if (past === null) return null;
    return this.explained(identity, past, point);
  }

  /**
   * What changed in an identity's packet between two points of its past and which deliveries changed it.
   * `from` absent: before its first delivery; `to` absent: its whole indexed past. Null for an unknown identity.
   */
  async diff(identity: string, from: AsOf | undefined, to: AsOf | undefined): Promise<ProjectionChange | null> {
    checkIdentity(identity);
    const start: AsOfPoint = from === undefined ? { points: [] } : asOfPoint(from);
    const end = to === undefined ? null : asOfPoint(to);
    const past = await loadPast(this.pastSource(), identity, [start, end]);
    if (past === null) return null;
    const a = this.explained(identity, past, start);
    const b = this.explained(identity, past, end);
    return { identity, ...diffExplanations({ ...a, packet: a.text }, { ...b, packet: b.text }), from: a, to: b };
  }

  private explained(identity: string, past: StoredPast, point: AsOfPoint | null): ProjectionExplanation {
    const explanation = answerable(identity, () => explainDeliveries(past.context, past.deliveries, point));
    if (explanation === null) throw pastTheBound(identity);
    const { packet, status, deliveries, counts } = explanation;
    const base = { identity, generation: past.generation, version: past.version, status, text: packet, etag: etagOf(packet), deliveries, counts, notIndexed: past.notIndexed };
    return point === null ? base : { ...base, asOf: asOfUsed(point, past.deliveries, deliveries.length) };
  }

  private pastSource(): PastSource {
    return { redis: this.redis, prefix: this.prefix, topic: this.topic, store: this.store, generation: () => this.generation() };
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
