/**
 * The port the fold engine stores identities through: exactly what the
 * applier (src/fold/identity-applier.ts) needs, plus `read` and
 * `listIdentities` for the contract suite. Two adapters implement it: Redis
 * (src/adapters/redis/identity-store.ts, the Lua functions of mufold_v1.lua) and memory
 * (src/adapters/memory/identity-store.ts); test/support/identity-store-contract.ts
 * holds both to the same behaviour.
 *
 * An identity's state is ten parts (src/fold/stored-names.ts): the meta hash `m`
 * (`v` version, `w:<topic>:<partition>` watermarks, `n`, `acc`, `skel`, `rej`,
 * `ctx`, `dig`, `chg`), the delivery records `d`, and the packet fragments and
 * their orders. Pure: no IO.
 */
import { MufoldError } from "../errors.js";
import type { PartOp, PartOps } from "./delta.js";

/**
 * What `load` returns: the meta hash, the delivery records (`d`: observation
 * id → record, only for ids delivered more than once or with conflicting
 * payloads) and the history fragments (`h`: every accepted id's entry, which
 * holds its observation).
 */
export interface StoredIdentity {
  meta: Record<string, string>;
  records: Map<string, string>;
  history: Map<string, string>;
}

/** The identity moved on since it was loaded: reload, drop what is applied, recompute, retry. */
export class StaleVersionError extends MufoldError {
  constructor(
    readonly identity: string,
    readonly storedVersion: number,
  ) {
    super(`identity ${identity} is at version ${storedVersion}, not the expected one`, { retriable: true });
  }
}

/** The store lost state that the fold had written while its marks say it was folded: the log is folded into it again. */
export class StateLostError extends MufoldError {
  constructor(message: string) {
    super(`${message}; the live fold folds the log into the generation again from offset 0`, { retriable: false });
  }
}

/**
 * Where the batch being applied starts: the live fold names it, so that the write happens only while the
 * generation is live and its mark for the partition (the next offset it has folded) is at or past `from`.
 * The position lives with the state: a batch that starts past the mark would fold on top of a state that
 * lacks the records before it.
 */
export interface PositionGuard {
  /** `<topic>:<partition>`, as the marks name it. */
  partition: string;
  /** The offset the batch was fetched from. */
  from: bigint;
}

/** The guard refused an apply before anything was written: the store's position contradicts the batch. */
export class PositionContradictedError extends MufoldError {
  constructor(
    readonly reason: "not_live" | "behind",
    readonly generation: number,
    readonly partition: string,
    readonly from: bigint,
  ) {
    super(
      reason === "not_live"
        ? `generation ${generation} is no longer the live one; nothing of the batch from ${partition}@${from} was written`
        : `the live generation ${generation} has not folded ${partition} up to ${from} (Redis went back in time); nothing of the batch was written`,
      { retriable: true },
    );
  }
}

export interface IdentityStore {
  /**
   * A listing in the index lasts as long as the identity's own writes (one node holds both). Not on a Redis
   * Cluster: the index and an identity live on different nodes, and a failover of the index's node can lose a
   * listing its identity's node kept, which only listing again repairs.
   */
  readonly indexKeepsListings: boolean;

  /** The meta hash, delivery records and history fragments of one identity; all empty for an identity never written. */
  load(generation: number, identity: string): Promise<StoredIdentity>;

  /** What `load` returns and the offset index (offset-index.ts), read at once: what an answer about the past needs. */
  loadHistory(generation: number, identity: string): Promise<StoredIdentity & { index: string[] }>;

  /**
   * Atomically, if the stored version is `expectedVersion` (0: nothing
   * stored): set the watermarks in meta (field → decimal offset), run `ops`,
   * set version + 1 and return it. Nothing is written otherwise. The ops
   * must commute (`opRuns`, src/fold/delta.ts: they run grouped by opcode and
   * part); ops that do not are refused before anything is written.
   *
   * With a `guard`, the same call first checks that `generation` is live and its mark for the guard's
   * partition is at or past the guard's offset (a store that cannot check it atomically, a Redis Cluster,
   * does not; docs/operations.md).
   *
   * @throws StaleVersionError the stored version differs (it carries the stored one).
   * @throws StateLostError a version above 0 was expected but the identity has no version.
   * @throws PositionContradictedError the guard failed; nothing was written.
   */
  apply(generation: number, identity: string, expectedVersion: number, watermarks: ReadonlyMap<string, bigint>, ops: PartOps | readonly PartOp[], guard?: PositionGuard): Promise<number>;

  /**
   * List identities in the generation's index (idempotent). Returns those it listed for the first time. Every
   * write to an identity is preceded by listing it and an index only grows, so those have nothing stored: the
   * fold creates them without a load (the version check of their first write still catches a store that
   * disagrees).
   */
  addToIndex(generation: number, identities: readonly string[]): Promise<ReadonlySet<string>>;

  /** The packet bytes assembled from the parts (or the stored rejected packet); null without a skeleton. */
  read(generation: number, identity: string): Promise<string | null>;

  /** The generation's indexed identities, sorted. */
  listIdentities(generation: number): Promise<string[]>;
}
