/**
 * The port of the generation control protocol: which generation is live,
 * which rebuilds hold a build lease, how far each generation has folded each
 * partition (marks) and from which log (origins), and the fleet pause a
 * promote holds. Two adapters implement it: Redis
 * (src/adapters/redis/control-store.ts, the functions of mufold_control_v1.lua,
 * which is the specification) and memory (src/adapters/memory/control-store.ts);
 * test/support/control-store-contract.ts holds both to the same behaviour.
 *
 * A writer names itself by its mode: "live" for the live fold, otherwise the
 * build token of the rebuild writing the generation. Partitions are named
 * `<topic>:<partition>`; offsets are next offsets (the first one not folded).
 * A live seal that contradicts the stored marks throws the identity port's
 * PositionContradictedError (src/fold/identity-store.ts). Pure: no IO.
 */
import { MufoldError } from "../errors.js";

/** The mode of the live fold's seals and origin checks (a rebuild's is its build token). */
export const LIVE_MODE = "live";

/** A batch's entries for the change stream of its generation: each a list of field, value strings. */
export interface ChangeEntries {
  /** The stream's approximate cap (MAXLEN ~). */
  maxLen: number;
  entries: readonly (readonly string[])[];
}

export interface ControlState {
  /** The live generation (null: none, never made or lost). */
  generation: number | null;
  /** A promote holds the fleet still (and its lease has not expired). */
  paused: boolean;
  /** The latest pause's epoch (0: never paused). */
  epoch: number;
  /** The live generation's reducer version (null without a live generation). */
  reducerVersion: string | null;
}

/** The generation named is not (or no longer) live, or a rebuild lost its build token (the store lost it, or it was promoted). */
export class GenerationMovedError extends MufoldError {
  constructor(
    readonly generation: number,
    readonly current: number | null,
  ) {
    super(`generation ${generation} is no longer the one written to (now ${current ?? "none"}): Redis lost it or it was replaced`, { retriable: true });
  }
}

/**
 * The record at offset 0 of a partition is not the one the generation folded:
 * the topic was deleted and recreated (or truncated and refilled). Folding on
 * would skip the new records as duplicates of the old ones.
 */
export class TopicOriginError extends MufoldError {
  constructor(
    readonly partition: string,
    readonly generation: number,
  ) {
    super(
      `partition ${partition} starts with a different record than generation ${generation} folded: the topic was deleted and recreated, or truncated. ` +
        "The projections no longer describe this log. Stop the folds, run `mufold replay --promote` to rebuild from the topic as it is now, then start the folds again",
      { retriable: false },
    );
  }
}

/** The live fold sealed a partition past the rebuild while it caught up: catch up again before promoting. */
export class PromoteBehindError extends MufoldError {
  constructor() {
    super("the live fold sealed records the rebuild has not read yet; catching up again", { retriable: true });
  }
}

/**
 * The pause did not hold: the promote's lease expired or another promote took
 * it (nothing was flipped), or a live seal met a pause (the batch waits).
 */
export class PauseLostError extends MufoldError {
  constructor() {
    super("the fleet pause lease expired or another promote took it; nothing was promoted", { retriable: true });
  }
}

export interface ControlStore {
  /** The live generation, the effective pause (lease honoured), the epoch and the live generation's reducer version. */
  state(): Promise<ControlState>;

  /** The live generation by a plain read (what any reader does). */
  liveGeneration(): Promise<number | null>;

  /**
   * Make a live generation if there is none, holding `reducerVersion`; returns the live one and its reducer
   * version (a live generation without one takes this one). Generation numbers are never reused, even after
   * the store lost everything: a new one is past every number allocated before and past the clock (µs).
   */
  initGeneration(reducerVersion: string): Promise<{ generation: number; reducerVersion: string }>;

  /** Reserve a new generation for a rebuild, with its build token and a build lease of `leaseMs`. */
  allocateGeneration(reducerVersion: string, buildToken: string, leaseMs: number): Promise<number>;

  /** @throws GenerationMovedError the token is not held (the store lost it, or the generation was promoted). */
  renewBuild(generation: number, buildToken: string, leaseMs: number): Promise<void>;

  /** Generations whose build lease holds (a killed rebuild's runs out). */
  buildingGenerations(): Promise<Set<number>>;

  /**
   * Check that `generation` is still written by `mode` (live: the live one, and no pause holds; a build token:
   * still held) and raise its marks (`<topic>:<partition>` → next offset; a mark never goes down). Every check
   * comes before any write: a refusal raises no mark and appends nothing.
   *
   * @param firstOffsets where each live batch started: one that starts past the stored mark is refused.
   * @param changes change entries to append to the generation's change stream before the marks move (a
   *   store whose stream cannot be written in the same call appends them first, then seals).
   * @throws GenerationMovedError the generation is not (or no longer) the one written by `mode`.
   * @throws PauseLostError a live seal while a pause holds (the batch waits and is applied again).
   * @throws PositionContradictedError ("behind") a live batch starts past its mark: the store went back in time.
   */
  seal(generation: number, mode: string, marks: ReadonlyMap<string, bigint>, firstOffsets?: ReadonlyMap<string, bigint>, changes?: ChangeEntries): Promise<void>;

  /**
   * Record (the first writer wins) or check the fingerprint of a partition's record at offset 0.
   *
   * @throws GenerationMovedError as for `seal` (a pause does not matter here).
   * @throws TopicOriginError the recorded fingerprint differs: another log.
   */
  checkOrigin(generation: number, mode: string, partition: string, fingerprint: string): Promise<void>;

  /** A generation's marks (`<topic>:<partition>` → next offset, decimal) or origins (→ fingerprint). */
  generationFields(generation: number, kind: "mark" | "origin"): Promise<Map<string, string>>;

  /**
   * Take a new fleet pause (`epoch` null: a new epoch, returned) or renew this epoch's for `leaseMs`.
   *
   * @throws PauseLostError another pause holds, or the one renewed no longer holds (a lapsed lease is never taken back).
   */
  pause(epoch: number | null, leaseMs: number): Promise<number>;

  /** Clear the pause if it is still this epoch's (else nothing). */
  unpause(epoch: number): Promise<void>;

  /** A fold member acknowledges that it holds still for this epoch. */
  ackPause(member: string, epoch: number): Promise<void>;

  /** Forget every acknowledgement (a new pause: each live member acknowledges it again). */
  clearPauseAcks(): Promise<void>;

  /** member → the epoch it acknowledged last. */
  pauseAcks(): Promise<Record<string, string>>;

  /**
   * Make a rebuilt generation live (and clear the pause, with an epoch). Idempotent: a generation already
   * promoted (live, its token gone) is accepted again whatever the other arguments.
   *
   * @param previous the live generation it replaces (null: none).
   * @param logChanged the live generation folded another log (a recreated topic): its marks bound nothing.
   * @throws GenerationMovedError the build token is not held, or the live generation is not `previous`.
   * @throws PauseLostError with an epoch: that pause no longer holds.
   * @throws PromoteBehindError a live mark is past the rebuild's (unless `logChanged`).
   */
  promote(generation: number, buildToken: string, epoch: number | null, previous: number | null, logChanged?: boolean): Promise<void>;

  /**
   * Forget every mark of the live generation, if it is still `generation`: the fold folds the whole log into it
   * again (what it does when the store lost an identity that the marks say was folded).
   *
   * @throws GenerationMovedError `generation` is not the live one.
   */
  rewind(generation: number): Promise<void>;

  /** Forget a dropped generation's fields: reducer version, build token and lease, marks, origins (never the live pointer). */
  forgetGeneration(generation: number): Promise<void>;
}
