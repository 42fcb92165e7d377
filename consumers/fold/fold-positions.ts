/**
 * Where a fold worker stands on each partition it is assigned, against the
 * marks Redis holds (the next offset the live generation has folded). The
 * position lives with the state: a partition is fetched from its mark, never
 * from what the consumer group committed, so a Redis that went back in time
 * (a restore, a promoted lagging replica) is refolded from where it stands.
 *
 * Pure bookkeeping; the worker reads Redis and seeks. A partition whose mark
 * fell behind what this worker had folded (or what the group committed) gets
 * a target: the fold is healing until the mark reaches it.
 */

/** Why a partition has a target: Redis went back in time, or lost the generation (a new one is rebuilt). */
export type Healing = "behind_log" | "rebuilding";

interface PartitionPosition {
  /** Where the next batch must start: the mark as this worker knows it (undefined: not read yet). */
  offset: bigint | undefined;
  /** Bumped at every change of `offset`, so a read of Redis that raced a seal is not acted upon. */
  seq: number;
  /** Batches of this partition being applied now. */
  busy: number;
  /** What the mark must reach before this partition is whole again, and why. */
  target?: { offset: bigint; why: Healing };
}

/** One partition to fetch from somewhere else. */
export interface Reposition {
  partition: number;
  from: bigint | undefined;
  to: bigint;
  /** The mark is below where this worker stood: Redis went back in time. */
  back: boolean;
}

/** What the group's committed offset of a partition asks for, against its mark. */
export type CommittedAction =
  /** Folded, yet the group has no offset (a new group, a recreated topic): fetch from 0 once, for the origin check. */
  | { partition: number; kind: "check_origin" }
  /** Committed past the mark: the partition must be refolded up to `committed` (its target is raised). */
  | { partition: number; kind: "refold_to"; committed: bigint; mark: bigint }
  /** Folded further than committed (a crash before the commit, an offset reset): commit the mark, as progress. */
  | { partition: number; kind: "commit_mark"; committed: bigint; mark: bigint };

export class FoldPositions {
  private readonly parts = new Map<number, PartitionPosition>();

  /** The partitions assigned at a join: positions of those kept stay, the others go. */
  assign(partitions: readonly number[]): void {
    for (const p of [...this.parts.keys()]) if (!partitions.includes(p)) this.parts.delete(p);
    for (const p of partitions) if (!this.parts.has(p)) this.parts.set(p, { offset: undefined, seq: 0, busy: 0 });
  }

  partitions(): number[] {
    return [...this.parts.keys()].sort((a, b) => a - b);
  }

  offset(partition: number): bigint | undefined {
    return this.parts.get(partition)?.offset;
  }

  /** The change counters now, to hand back to `reconcile` after a read of Redis. */
  seqs(): Map<number, number> {
    return new Map([...this.parts].map(([p, s]) => [p, s.seq]));
  }

  begin(partition: number): void {
    const s = this.parts.get(partition);
    if (s !== undefined) s.busy++;
  }

  end(partition: number): void {
    const s = this.parts.get(partition);
    if (s !== undefined) s.busy--;
  }

  /** A batch was sealed: the partition is folded up to `next`. Returns true when that healed it. */
  sealed(partition: number, next: bigint): boolean {
    const s = this.parts.get(partition);
    if (s === undefined) return false;
    if (s.offset === undefined || next > s.offset) {
      s.offset = next;
      s.seq++;
    }
    if (s.target !== undefined && next >= s.target.offset) {
      delete s.target;
      return true;
    }
    return false;
  }

  /**
   * Compare with the marks read from Redis (`marks`: partition → next offset; none means 0) after `seqs` was
   * taken; returns the partitions to seek. A partition in a batch, or whose position moved since `seqs`, is
   * left to its batch (the apply's guard and the seal see the same marks). A mark below this worker's
   * position raises the partition's target to that position (`why`).
   */
  reconcile(marks: ReadonlyMap<number, bigint>, seqs: ReadonlyMap<number, number>, why: Healing): Reposition[] {
    const out: Reposition[] = [];
    for (const [p, s] of this.parts) {
      if (s.busy > 0 || seqs.get(p) !== s.seq) continue;
      const mark = marks.get(p) ?? 0n;
      if (s.offset === mark) continue;
      const from = s.offset;
      const back = from !== undefined && mark < from;
      s.offset = mark;
      s.seq++;
      if (back) this.raise(p, from, why);
      out.push({ partition: p, from, to: mark, back });
    }
    return out;
  }

  /** The partition must be folded up to `offset` before it is whole (the group committed it, or this worker had folded it). */
  raise(partition: number, offset: bigint, why: Healing): void {
    const s = this.parts.get(partition);
    if (s === undefined || (s.offset !== undefined && s.offset >= offset)) return;
    if (s.target === undefined || s.target.offset < offset) s.target = { offset, why };
  }

  /**
   * After a join: the group's committed offsets (`committed`: partition → offset, negative for none) are
   * progress, the marks are what is folded. Raises the targets of partitions committed past their marks
   * (`why`) and returns what each partition that differs asks for; a partition not read yet is left alone.
   */
  compareCommitted(committed: ReadonlyMap<number, bigint>, why: Healing): CommittedAction[] {
    const out: CommittedAction[] = [];
    for (const partition of this.partitions()) {
      const c = committed.get(partition);
      const mark = this.offset(partition);
      if (c === undefined || mark === undefined || c === mark) continue;
      if (c < 0n) {
        if (mark > 0n) out.push({ partition, kind: "check_origin" });
      } else if (c > mark) {
        this.raise(partition, c, why);
        out.push({ partition, kind: "refold_to", committed: c, mark });
      } else {
        out.push({ partition, kind: "commit_mark", committed: c, mark });
      }
    }
    return out;
  }

  /** Partitions still healing: how many records each must refold (target − position), and why. */
  healing(): { partition: number; records: bigint; why: Healing }[] {
    const out: { partition: number; records: bigint; why: Healing }[] = [];
    for (const [p, s] of this.parts) {
      if (s.target === undefined) continue;
      out.push({ partition: p, records: s.target.offset - (s.offset ?? 0n), why: s.target.why });
    }
    return out.sort((a, b) => a.partition - b.partition);
  }
}
