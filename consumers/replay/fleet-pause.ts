/**
 * A promote's (or verify's) hold on the live fold: a pause with a lease that
 * this process renews. If the process dies, the lease runs out and the folds
 * resume by themselves; a clean stop releases it at once.
 */
import type { Admin } from "kafkajs";
import { PauseLostError, type ControlStore } from "../../src/fold/control-store.js";
import { MufoldError } from "../../src/errors.js";
import type { Logger } from "../../src/observability/log.js";
import { sleepUnlessAborted } from "./waiting.js";

export class FleetPause {
  private renewal: NodeJS.Timeout | undefined;

  private constructor(
    private readonly control: ControlStore,
    readonly epoch: number,
    private readonly leaseMs: number,
    private readonly log: Logger,
  ) {}

  /** Pause the fleet with a new epoch (allocated atomically in Redis) and keep renewing the lease every third of it. */
  static async take(control: ControlStore, leaseSeconds: number, log: Logger): Promise<FleetPause> {
    const epoch = await control.pause(null, leaseSeconds * 1000);
    const pause = new FleetPause(control, epoch, leaseSeconds * 1000, log);
    await control.clearPauseAcks(); // acks of workers long gone would pile up; live ones ack again at once
    pause.renewal = setInterval(() => void pause.renew(), Math.max(200, Math.floor(pause.leaseMs / 3)));
    pause.renewal.unref();
    return pause;
  }

  private async renew(): Promise<void> {
    try {
      await this.control.pause(this.epoch, this.leaseMs);
    } catch (error) {
      // A missed renewal is survivable while the lease lasts; once it lapsed it is never taken back
      // (the folds may have resumed), and the promote, which re-checks the lease atomically, refuses.
      if (error instanceof PauseLostError) clearInterval(this.renewal);
      this.log.warn("could not renew the fleet pause", { error: error instanceof Error ? error.message : String(error) });
    }
  }

  /** Wait until every member of the fold group has acknowledged this epoch; `failure` (a replay worker died) ends the wait. */
  async awaitAcks(admin: Admin, group: string, timeoutSeconds: number, signal?: AbortSignal, failure?: () => unknown): Promise<void> {
    const deadline = Date.now() + timeoutSeconds * 1000;
    for (;;) {
      const failed = failure?.();
      if (failed !== undefined) throw failed instanceof Error ? failed : new MufoldError(String(failed));
      const members = (await admin.describeGroups([group])).groups[0]?.members.length ?? 0;
      const acks = Object.values(await this.control.pauseAcks()).filter((e) => Number(e) === this.epoch).length;
      if (acks >= members) return;
      if (Date.now() > deadline) throw new MufoldError(`only ${acks} of ${members} fold workers paused within ${timeoutSeconds}s; nothing was promoted`);
      await sleepUnlessAborted(200, signal);
    }
  }

  /** Stop renewing; release the pause unless a promote already cleared it. */
  async release(): Promise<void> {
    clearInterval(this.renewal);
    await this.control.unpause(this.epoch).catch((error) => this.log.warn("could not release the fleet pause; it expires with its lease", { error: String(error) }));
  }
}
