/** The fold worker's readiness checks (/readyz): each throws, with the reason, while the worker is not ready. */
import type { GroupConsumer } from "../../src/adapters/kafka/consumer.js";
import type { Healing } from "./fold-positions.js";
import type { OutageClock } from "./outage.js";

/** What the checks read of a worker, as it is at the time of the check. */
export interface ReadinessView {
  consumer(): GroupConsumer | undefined;
  group: string;
  topic: string;
  outages: OutageClock;
  /** Why the worker waits for `mufold setup`, if it does. */
  setupMissing(): Error | undefined;
  /** The worker's state (FoldWorker.state). */
  state(): string;
  healing(): { partition: number; records: bigint; why: Healing }[];
}

/** The broker answers heartbeats, this worker is in its group, no outage is ridden out, the partitions are whole and none is parked. */
export function foldReadinessChecks(view: ReadinessView): Record<string, () => Promise<void>> {
  return {
    kafka: async () => {
      const age = Date.now() - (view.consumer()?.lastHeartbeat ?? 0);
      if (age > 15_000) throw new Error(`no heartbeat accepted by the group coordinator for ${Math.round(age / 1000)}s`);
    },
    group: async () => {
      if (!view.consumer()?.joined) throw new Error(`not a member of group ${view.group} (joining, rebalancing or stopped)`);
    },
    outage: async () => {
      const ongoing = Object.entries(view.outages.ongoing());
      if (ongoing.length > 0) throw new Error(`riding out an outage: ${ongoing.map(([what, s]) => `${what} unreachable for ${s}s`).join(", ")}`);
    },
    position: async () => {
      const missing = view.setupMissing();
      if (missing !== undefined) throw new Error(`waiting_for_setup: ${missing.message}`);
      const healing = view.healing();
      if (healing.length === 0) return;
      const records = healing.reduce((n, h) => n + h.records, 0n);
      const cause = view.state() === "rebuilding" ? "rebuilding: Redis lost the generation; it is rebuilt from the log start" : "behind_log: Redis went back in time; the partitions are refolded from their marks";
      throw new Error(`${cause}: ${records} records to refold on ${healing.length} partitions (${healing.map((h) => `${view.topic}[${h.partition}] ${h.records}`).join(", ")})`);
    },
    parked: async () => {
      const parked = view.consumer()?.parked() ?? [];
      if (parked.length > 0) throw new Error(`partitions parked at a batch that cannot be decoded: ${parked.map((p) => `${p.topic}[${p.partition}]@${p.offset} (${p.reason})`).join("; ")}`);
    },
  };
}
