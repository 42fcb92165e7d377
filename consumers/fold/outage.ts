/**
 * How long a dependency (Redis, Kafka) has been unreachable, against the
 * configured tolerance: the fold holds its batch and reports not-ready while
 * an outage lasts, and gives up with one clear error past the tolerance.
 */
import { MufoldError } from "../../src/errors.js";

export class OutageExceededError extends MufoldError {
  constructor(what: string, seconds: number, cause: unknown) {
    super(`${what} unreachable for more than ${seconds}s (MUFOLD_OUTAGE_TOLERANCE_SECONDS); exiting so a supervisor can restart the fold`, { retriable: false, cause });
  }
}

export class OutageClock {
  private readonly since = new Map<string, number>();
  private readonly lastError = new Map<string, unknown>();

  constructor(
    private readonly toleranceSeconds: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Record a failure of `what`; throws OutageExceededError once the outage is longer than the tolerance. */
  failed(what: string, error: unknown): void {
    const started = this.since.get(what) ?? this.now();
    this.since.set(what, started);
    this.lastError.set(what, error);
    if (this.now() - started > this.toleranceSeconds * 1000) throw new OutageExceededError(what, this.toleranceSeconds, error);
  }

  /** `what` answered: its outage (if any) is over. Returns the outage's length in ms, or 0. */
  recovered(what: string): number {
    const started = this.since.get(what);
    this.since.delete(what);
    this.lastError.delete(what);
    return started === undefined ? 0 : this.now() - started;
  }

  /** Ongoing outages: dependency → seconds so far. */
  ongoing(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [what, started] of this.since) out[what] = Math.round((this.now() - started) / 1000);
    return out;
  }
}
