/**
 * Errors of the Redis functions: their numeric return codes map to errors here and nowhere else. The errors
 * the engine and the applications tell apart belong to the ports (src/fold/identity-store.ts,
 * src/fold/control-store.ts); the ones here are Redis's own (setup, permissions, key layout).
 */
import { MufoldError } from "../../errors.js";
import { GenerationMovedError, PauseLostError, PromoteBehindError, TopicOriginError } from "../../fold/control-store.js";
import { PositionContradictedError, StaleVersionError, StateLostError, type PositionGuard } from "../../fold/identity-store.js";

export { MufoldError };

/**
 * Redis lacks mufold's function libraries (never set up, or lost them: a
 * restart without persistence, FLUSHALL, FUNCTION FLUSH), or holds another
 * build's. Only `mufold setup`, an admin step, loads them; the fold rides this
 * out like an outage until it has run.
 */
export class FunctionsMissingError extends MufoldError {
  constructor(detail: string, options: { cause?: unknown } = {}) {
    super(`${detail}: run \`mufold setup\` (as a Redis admin) to load mufold's function libraries`, { retriable: true, cause: options.cause });
  }
}

/** Redis refused a command to this user (ACL `NOPERM`): a grant is missing; retrying cannot help. */
export class RedisPermissionError extends MufoldError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { retriable: false, cause: options.cause });
  }
}

/** A command named keys of several slots (`CROSSSLOT`): a key-layout bug, never a passing fault. */
export class KeyLayoutError extends MufoldError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(`${message} (keys of one call must share a hash tag: a bug in mufold's key layout)`, { retriable: false, cause: options.cause });
  }
}

/**
 * The one place a Redis error reply is read by its text: the reply's error
 * code (the first word, as the protocol defines it) picks a typed error. Other
 * errors (connection loss, timeouts, unknown replies) are returned unchanged,
 * for the caller's outage handling.
 */
export function classifyRedisError(err: unknown, fn?: string): unknown {
  if (!(err instanceof Error) || err instanceof MufoldError) return err;
  const code = /^[A-Z]+/.exec(err.message)?.[0];
  if (code === "NOPERM") return new RedisPermissionError(err.message, { cause: err });
  if (code === "CROSSSLOT") return new KeyLayoutError(err.message, { cause: err });
  if (code === "ERR" && /^ERR Function not found/i.test(err.message)) return new FunctionsMissingError(`Redis has no function ${fn ?? "(unknown)"}`, { cause: err });
  return err;
}

export const APPLY_OK = 1;
export const APPLY_STALE = -1;
export const APPLY_STATE_LOST = -2;
export const CONTROL_NOT_HELD = -3;
export const CONTROL_ORIGIN_DIFFERS = -4;
export const CONTROL_PAUSE_LOST = -5;
export const CONTROL_ROLLED_BACK = -6;
export const CONTROL_PROMOTE_BEHIND = -7;

export const APPLY_NOT_LIVE = -3;
export const APPLY_POSITION_BEHIND = -4;

/** Map a `mufold_apply_v2`/`_v3` reply to the new version or an error (`at`: the generation and the v3 guard). */
export function applyResult(identity: string, reply: unknown, at?: { generation: number; guard: PositionGuard }): number {
  const [code, version] = reply as [number, number];
  if (code === APPLY_OK) return version;
  if (code === APPLY_STALE) throw new StaleVersionError(identity, version);
  if (code === APPLY_STATE_LOST) throw new StateLostError(`identity ${identity} had state that Redis no longer holds`);
  if (at !== undefined && (code === APPLY_NOT_LIVE || code === APPLY_POSITION_BEHIND)) {
    throw new PositionContradictedError(code === APPLY_NOT_LIVE ? "not_live" : "behind", at.generation, at.guard.partition, at.guard.from);
  }
  throw new MufoldError(`mufold_apply returned unknown code ${String(code)}`);
}

/** Map a control function's code; `what` says which generation and partition it concerned. */
export function controlResult(code: number, what: { generation: number; current?: number; partition?: string; from?: bigint }): void {
  if (code === APPLY_OK) return;
  if (code === CONTROL_NOT_HELD) throw new GenerationMovedError(what.generation, what.current === undefined || what.current < 0 ? null : what.current);
  if (code === CONTROL_ORIGIN_DIFFERS) throw new TopicOriginError(what.partition ?? "?", what.generation);
  if (code === CONTROL_PAUSE_LOST) throw new PauseLostError();
  // A batch that starts past the partition's mark: Redis went back in time while it was applied.
  if (code === CONTROL_ROLLED_BACK) throw new PositionContradictedError("behind", what.generation, what.partition ?? "?", what.from ?? 0n);
  if (code === CONTROL_PROMOTE_BEHIND) throw new PromoteBehindError();
  throw new MufoldError(`mufold control function returned unknown code ${String(code)}`);
}
