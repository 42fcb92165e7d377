/** Waiting with a deadline and a way out: no wait in mufold is unbounded. */
import { MufoldError } from "../../src/errors.js";

export class AbortedError extends MufoldError {
  constructor(what = "stopped by a signal") {
    super(what, { retriable: false });
  }
}

export function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(new AbortedError());
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError());
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Poll `done` until it holds. Fails when `failure()` returns an error (a
 * crashed consumer), when the signal aborts, or when `progress()` has not
 * changed for `stallSeconds` (nothing moves: an outage or a bug, never wait forever).
 */
export async function waitFor(
  what: string,
  done: () => boolean,
  opts: { progress: () => string; failure: () => unknown; stallSeconds: number; signal?: AbortSignal; pollMs?: number },
): Promise<void> {
  let last = opts.progress();
  let movedAt = Date.now();
  for (;;) {
    const failed = opts.failure();
    if (failed !== undefined) throw failed instanceof Error ? failed : new MufoldError(String(failed));
    if (done()) return;
    const now = opts.progress();
    if (now !== last) {
      last = now;
      movedAt = Date.now();
    } else if (Date.now() - movedAt > opts.stallSeconds * 1000) {
      throw new MufoldError(`${what}: no progress for ${opts.stallSeconds}s (${now})`);
    }
    await sleepUnlessAborted(opts.pollMs ?? 50, opts.signal);
  }
}
