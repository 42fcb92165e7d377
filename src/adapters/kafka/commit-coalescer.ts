/**
 * The group's offset commits, one request at a time: a commit asked for while
 * another is in flight waits for it and goes out with every other partition's
 * latest, in one OffsetCommit. The offsets are progress only (the fold's
 * position is its marks in Redis), but each request costs the worker and the
 * group coordinator: one per batch was one per few records at a few thousand
 * records a second. Per partition, the last offset asked for wins, in the
 * order asked (never an older one after a newer one).
 */

export interface OffsetCommit {
  topic: string;
  partition: number;
  offset: string;
}

export class CommitCoalescer {
  /** The latest offset asked for per partition, not yet sent. */
  private pending = new Map<string, OffsetCommit>();
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly send: (commits: OffsetCommit[]) => Promise<void>,
    private readonly onError: (error: unknown, topic: string, partition: number) => void,
  ) {}

  /** Commit this offset: at the end of this turn if no request is in flight (with the turn's others), else with the next one. */
  commit(c: OffsetCommit): void {
    this.pending.set(`${c.topic}:${c.partition}`, c);
    this.inFlight ??= Promise.resolve().then(() => this.drain());
  }

  /** Wait until every commit asked for so far has been sent (or has failed). */
  async flush(): Promise<void> {
    while (this.inFlight !== undefined) await this.inFlight;
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.size > 0) {
        const commits = [...this.pending.values()];
        this.pending = new Map();
        try {
          await this.send(commits);
        } catch (error) {
          for (const c of commits) this.onError(error, c.topic, c.partition);
        }
      }
    } finally {
      this.inFlight = undefined;
    }
  }
}
