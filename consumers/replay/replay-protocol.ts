/**
 * The messages between `mufold replay --workers N` and its worker processes,
 * over the IPC channel Node opens for a child (advanced serialization: Maps
 * and bigints go as they are). The settings travel whole, credentials
 * included, over that private channel: never in argv or the environment.
 */
import { Secret, type Settings } from "../../src/config/settings.js";
import type { BuildStats } from "./replay-build.js";

/** Settings as they cross the channel: credentials as plain strings (a Secret does not survive structured cloning). */
export type WireSettings = Omit<Settings, "kafkaSaslPassword" | "redisPassword"> & { kafkaSaslPassword: string | undefined; redisPassword: string | undefined };

export function settingsToWire(s: Settings): WireSettings {
  return { ...s, kafkaSaslPassword: s.kafkaSaslPassword?.reveal(), redisPassword: s.redisPassword?.reveal() };
}

export function settingsFromWire(w: WireSettings): Settings {
  return {
    ...w,
    kafkaSaslPassword: w.kafkaSaslPassword === undefined ? undefined : new Secret(w.kafkaSaslPassword),
    redisPassword: w.redisPassword === undefined ? undefined : new Secret(w.redisPassword),
  };
}

/** What one worker builds: its partitions of the log into the coordinator's generation, under its build token. */
export interface WorkerJob {
  /** 1-based, for messages. */
  index: number;
  count: number;
  settings: WireSettings;
  generation: number;
  token: string;
  groupId: string;
  targets: Map<number, bigint>;
  /** The topic's partitions that other readers read. */
  others: number[];
  chunkBytes: number;
}

export type ToWorker = { type: "start"; job: WorkerJob } | { type: "raise"; targets: Map<number, bigint> } | { type: "stop" };

export type FromWorker =
  /** Listening: the job may be sent. */
  | { type: "ready" }
  /** Applied positions of its partitions and its totals, after every chunk. */
  | { type: "progress"; positions: Map<number, bigint>; stats: BuildStats }
  /** Why it stops (then it exits non-zero); `mufold` tells a MufoldError (exit 2) from anything else (exit 1). */
  | { type: "failed"; message: string; mufold: boolean }
  /** Stopped on request, everything it applied reported. */
  | { type: "stopped"; positions: Map<number, bigint>; stats: BuildStats };
