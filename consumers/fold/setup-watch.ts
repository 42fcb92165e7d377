/**
 * Whether Redis has mufold's function libraries (`mufold setup` has run on
 * it, with this build's). Without them nothing is folded: the worker is not
 * ready, and past the outage tolerance the fold ends with one clear error.
 */
import type { Cluster, Redis } from "ioredis";
import { FunctionsMissingError } from "../../src/adapters/redis/errors.js";
import { assertFunctionsLoaded } from "../../src/adapters/redis/functions.js";
import { MufoldError } from "../../src/errors.js";
import type { Logger } from "../../src/observability/log.js";
import { errorText, POLL_MS, sleep } from "./batch-hold.js";
import type { OutageClock } from "./outage.js";

export class SetupWatch {
  /** Set while Redis lacks the libraries. */
  missing: FunctionsMissingError | undefined;

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly outages: OutageClock,
    private readonly toleranceSeconds: number,
    private readonly log: Logger,
    /** Called when `missing` changes (the readiness gauges follow it). */
    private readonly changed: () => void,
  ) {}

  /** Redis answered without the libraries; throws once that has lasted past the outage tolerance. */
  lacking(error: FunctionsMissingError): void {
    if (this.missing === undefined) this.log.error("waiting for `mufold setup`: Redis lacks mufold's function libraries; nothing is folded meanwhile", { error: errorText(error) });
    this.missing = error;
    this.changed();
    try {
      this.outages.failed("setup", error);
    } catch {
      throw new MufoldError(`${error.message} (waited ${this.toleranceSeconds}s, MUFOLD_OUTAGE_TOLERANCE_SECONDS; start the fold again after setup)`, { retriable: false, cause: error });
    }
  }

  /** Redis answered with the libraries. */
  found(): void {
    if (this.missing === undefined) return;
    this.missing = undefined;
    this.outages.recovered("setup");
    this.log.warn("Redis has mufold's function libraries again; folding resumes");
    this.changed();
  }

  /** Wait for `mufold setup` (libraries missing, or another build's) within the outage tolerance. */
  async untilSetUp(): Promise<void> {
    for (;;) {
      try {
        await assertFunctionsLoaded(this.redis);
        this.found();
        return;
      } catch (error) {
        if (!(error instanceof FunctionsMissingError)) throw error;
        this.lacking(error);
        await sleep(POLL_MS * 4);
      }
    }
  }
}
