/** Errors of the Redis functions: their numeric return codes map to errors here and nowhere else. */
import { MufoldError } from "../../errors.js";

export { MufoldError };

/** The identity moved on since it was loaded: reload, drop what is applied, recompute, retry. */
export class StaleVersionError extends MufoldError {
  constructor(
    readonly identity: string,
    readonly storedVersion: number,
  ) {
    super(`identity ${identity} is at version ${storedVersion}, not the expected one`, { retriable: true });
  }
}

/** Redis lost state that the fold had written: only a replay can restore it. */
export class StateLostError extends MufoldError {
  constructor(message: string) {
    super(`${message}; restore it with \`mufold replay --promote\``, { retriable: false });
  }
}

export const APPLY_OK = 1;
export const APPLY_STALE = -1;
export const APPLY_STATE_LOST = -2;

/** Map a `mufold_apply_v1` reply to the new version or an error. */
export function applyResult(identity: string, reply: unknown): number {
  const [code, version] = reply as [number, number];
  if (code === APPLY_OK) return version;
  if (code === APPLY_STALE) throw new StaleVersionError(identity, version);
  if (code === APPLY_STATE_LOST) throw new StateLostError(`identity ${identity} had state that Redis no longer holds`);
  throw new MufoldError(`mufold_apply_v1 returned unknown code ${String(code)}`);
}
