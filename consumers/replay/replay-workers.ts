/**
 * The coordinator's side of `mufold replay --workers N`: the partitions are
 * split into N shares; the replay process reads the first itself, and N - 1
 * worker processes (consumers/replay/replay-worker.ts) read the others, all writing
 * the coordinator's generation under its build token from offset 0. To the
 * replay they look like one reader (`SplitReader`): positions are what each
 * reader has applied, targets are raised through them, and a worker that
 * fails or dies is the replay's failure, with its cause.
 *
 * Workers are `process.execPath bin/mufold.js replay --internal-worker`, so
 * they run the built CLI (dist/): `npm run build` before running from source.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Settings } from "../../src/config/settings.js";
import { WORKER_NODE_FLAGS, mufoldBin } from "../fold/fold-process.js";
import { MufoldError } from "../../src/errors.js";
import type { Logger } from "../../src/observability/log.js";
import { describeProgress, targetsReached } from "./log-reader.js";
import { addStats, emptyStats, type BuildStats, type ShadowReader } from "./replay-build.js";
import { settingsToWire, type FromWorker, type ToWorker } from "./replay-protocol.js";

/** How long a worker may take to stop when told before it is killed. */
const STOP_GRACE_MS = 30_000;

/** Partition p goes to worker (its rank among the sorted partitions) mod n: counts differ by at most one. */
export function splitPartitions(targets: ReadonlyMap<number, bigint>, n: number): Map<number, bigint>[] {
  const shares = Array.from({ length: n }, () => new Map<number, bigint>());
  [...targets.keys()].sort((a, b) => a - b).forEach((p, i) => shares[i % n]!.set(p, targets.get(p)!));
  return shares;
}

interface Worker {
  index: number;
  child: ChildProcess;
  share: Set<number>;
  stats: BuildStats;
  exited: Promise<void>;
  gone: boolean;
  /** Told to stop (an exit is then expected). */
  stopping: boolean;
  /** What it said when it failed. */
  failed?: { message: string; mufold: boolean };
}

export class WorkerPool implements ShadowReader {
  private readonly targets = new Map<number, bigint>();
  private readonly positions = new Map<number, bigint>();
  private readonly workers: Worker[] = [];
  private crash: unknown;

  private constructor(
    private readonly log: Logger,
    private readonly onAdvance: (() => void) | undefined,
    private readonly count: number,
  ) {}

  /** Spawn one worker per share; worker `i` (numbered from `firstIndex`) reads with the throwaway group `${groupPrefix}.${i}`. */
  static start(opts: {
    settings: Settings;
    generation: number;
    token: string;
    groupPrefix: string;
    shares: readonly ReadonlyMap<number, bigint>[];
    /** Every partition of the topic. */
    partitions: readonly number[];
    firstIndex: number;
    /** Readers of the replay in all (this process's own share included), for messages. */
    count: number;
    chunkBytes: number;
    log: Logger;
    onAdvance?(): void;
  }): WorkerPool {
    const pool = new WorkerPool(opts.log, opts.onAdvance, opts.count);
    opts.shares.forEach((share, i) => {
      const index = opts.firstIndex + i;
      for (const [p, t] of share) {
        pool.targets.set(p, t);
        pool.positions.set(p, 0n);
      }
      const job = {
        index,
        count: opts.count,
        settings: settingsToWire(opts.settings),
        generation: opts.generation,
        token: opts.token,
        groupId: `${opts.groupPrefix}.${index}`,
        targets: new Map(share),
        others: opts.partitions.filter((p) => !share.has(p)),
        chunkBytes: opts.chunkBytes,
      };
      pool.spawnWorker(index, new Set(share.keys()), (w) => pool.send(w, { type: "start", job }));
    });
    return pool;
  }

  private spawnWorker(index: number, share: Set<number>, onReady: (w: Worker) => void): void {
    // The V8 flags of every worker process (the fold's too): bin/mufold.js's shebang is not read when spawned this way.
    const child = spawn(process.execPath, [...WORKER_NODE_FLAGS, mufoldBin(), "replay", "--internal-worker"], {
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      serialization: "advanced",
    });
    let exited!: () => void;
    const worker: Worker = { index, child, share, stats: emptyStats(), exited: new Promise((r) => (exited = r)), gone: false, stopping: false };
    this.workers.push(worker);
    child.on("message", (m: FromWorker) => {
      if (m.type === "ready") onReady(worker);
      else if (m.type === "failed") worker.failed = { message: m.message, mufold: m.mufold };
      else this.advance(worker, m.positions, m.stats);
    });
    child.on("error", (error) => {
      this.crash ??= new Error(`replay worker ${index} could not run: ${error.message}`);
    });
    // "close", not "exit": it comes after the last message (a failing worker's cause) was read.
    child.on("close", (code, signal) => {
      worker.gone = true;
      exited();
      if (!worker.stopping) this.crash ??= this.workerError(worker, code, signal);
      else if (code !== 0) this.log.warn("a replay worker did not stop cleanly", { worker: index, error: this.workerError(worker, code, signal).message });
    });
    this.log.info("replay worker spawned", { worker: index, pid: child.pid, partitions: [...share] });
  }

  private workerError(w: Worker, code: number | null, signal: NodeJS.Signals | null): Error {
    const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
    const what = `replay worker ${w.index} of ${this.count} (pid ${w.child.pid}) ${how}`;
    if (w.failed === undefined) return new Error(what);
    const message = `${what}: ${w.failed.message}`;
    return w.failed.mufold ? new MufoldError(message) : new Error(message);
  }

  private send(w: Worker, message: ToWorker): void {
    if (!w.gone && w.child.connected) w.child.send(message);
  }

  private advance(w: Worker, positions: ReadonlyMap<number, bigint>, stats: BuildStats): void {
    for (const [p, next] of positions) if (w.share.has(p) && next > (this.positions.get(p) ?? 0n)) this.positions.set(p, next);
    w.stats = stats;
    this.onAdvance?.();
  }

  stats(): BuildStats {
    return this.workers.reduce((sum, w) => addStats(sum, w.stats), emptyStats());
  }

  /** A worker that failed or died (before it was told to stop) ends the replay. */
  failure(): unknown {
    return this.crash;
  }

  reached(): boolean {
    return targetsReached(this.positions, this.targets);
  }

  progress(): string {
    return describeProgress(this.positions, this.targets);
  }

  positionsNow(): Map<number, bigint> {
    return new Map(this.positions);
  }

  async raiseTargets(targets: ReadonlyMap<number, bigint>): Promise<void> {
    for (const [p, t] of targets) if (this.targets.has(p) && t > this.targets.get(p)!) this.targets.set(p, t);
    for (const w of this.workers) this.send(w, { type: "raise", targets: new Map([...this.targets].filter(([p]) => w.share.has(p))) });
  }

  /** Stop every worker and wait until each has exited (one that does not within the grace is killed). */
  async stop(): Promise<void> {
    await Promise.all(
      this.workers.map(async (w) => {
        if (w.gone) return;
        w.stopping = true;
        if (w.child.connected) this.send(w, { type: "stop" });
        else w.child.kill("SIGTERM");
        const timer = setTimeout(() => w.child.kill("SIGKILL"), STOP_GRACE_MS);
        await w.exited;
        clearTimeout(timer);
      }),
    );
  }
}

/** Several readers (this process's share and the worker pool) as one. */
export class SplitReader implements ShadowReader {
  constructor(private readonly parts: readonly ShadowReader[]) {}

  stats(): BuildStats {
    return this.parts.reduce((sum, p) => addStats(sum, p.stats()), emptyStats());
  }

  failure(): unknown {
    for (const p of this.parts) {
      const failed = p.failure();
      if (failed !== undefined) return failed;
    }
    return undefined;
  }

  reached(): boolean {
    return this.parts.every((p) => p.reached());
  }

  progress(): string {
    return this.parts.map((p) => p.progress()).join("; ");
  }

  positionsNow(): Map<number, bigint> {
    return new Map(this.parts.flatMap((p) => [...p.positionsNow()]));
  }

  /** Each part raises the partitions it reads and ignores the others. */
  async raiseTargets(targets: ReadonlyMap<number, bigint>): Promise<void> {
    await Promise.all(this.parts.map((p) => p.raiseTargets(targets)));
  }

  async stop(): Promise<void> {
    await Promise.all(this.parts.map((p) => p.stop()));
  }
}
