/** FoldPositions, given/when/then: where a fold worker stands against the marks Redis holds. */
import { describe, expect, it } from "vitest";
import { FoldPositions } from "../../consumers/fold/fold-positions.js";

const marks = (entries: [number, bigint][]) => new Map(entries);

function folded(partitions: [number, bigint][]): FoldPositions {
  const positions = new FoldPositions();
  positions.assign(partitions.map(([p]) => p));
  positions.reconcile(marks(partitions), positions.seqs(), "behind_log");
  return positions;
}

describe("FoldPositions", () => {
  it("given a new assignment, every partition goes to its mark, or 0 without one; nothing is healing", () => {
    const positions = new FoldPositions();
    positions.assign([2, 0, 1]);
    const moves = positions.reconcile(marks([[0, 40n], [2, 7n]]), positions.seqs(), "behind_log");
    expect(moves).toEqual([
      { partition: 2, from: undefined, to: 7n, back: false },
      { partition: 0, from: undefined, to: 40n, back: false },
      { partition: 1, from: undefined, to: 0n, back: false },
    ]);
    expect(positions.partitions()).toEqual([0, 1, 2]);
    expect(positions.offset(1)).toBe(0n);
    expect(positions.healing()).toEqual([]);
  });

  it("given marks equal to the positions, nothing moves", () => {
    const positions = folded([[0, 10n], [1, 20n]]);
    expect(positions.reconcile(marks([[0, 10n], [1, 20n]]), positions.seqs(), "behind_log")).toEqual([]);
  });

  it("when a mark went back, the partition is sought to it and must refold up to where it stood", () => {
    const positions = folded([[0, 100n], [1, 50n]]);
    const moves = positions.reconcile(marks([[0, 60n], [1, 50n]]), positions.seqs(), "behind_log");
    expect(moves).toEqual([{ partition: 0, from: 100n, to: 60n, back: true }]);
    expect(positions.offset(0)).toBe(60n);
    expect(positions.healing()).toEqual([{ partition: 0, records: 40n, why: "behind_log" }]);
    expect(positions.sealed(0, 90n)).toBe(false);
    expect(positions.healing()).toEqual([{ partition: 0, records: 10n, why: "behind_log" }]);
    expect(positions.sealed(0, 100n)).toBe(true);
    expect(positions.healing()).toEqual([]);
  });

  it("when the marks are gone (a generation made anew), every partition refolds from 0, as a rebuild", () => {
    const positions = folded([[0, 5n], [1, 8n]]);
    positions.reconcile(new Map(), positions.seqs(), "rebuilding");
    expect(positions.healing()).toEqual([
      { partition: 0, records: 5n, why: "rebuilding" },
      { partition: 1, records: 8n, why: "rebuilding" },
    ]);
  });

  it("a mark ahead of the position moves the partition forward, and raises no target", () => {
    const positions = folded([[0, 5n]]);
    expect(positions.reconcile(marks([[0, 9n]]), positions.seqs(), "behind_log")).toEqual([{ partition: 0, from: 5n, to: 9n, back: false }]);
    expect(positions.healing()).toEqual([]);
  });

  it("a partition in a batch, or sealed after the marks were read, is left alone", () => {
    const positions = folded([[0, 10n], [1, 10n]]);
    const seqs = positions.seqs();
    positions.begin(0);
    positions.sealed(1, 20n); // sealed while the marks (still 10) were being read
    expect(positions.reconcile(marks([[0, 10n], [1, 10n]]), seqs, "behind_log")).toEqual([]);
    expect(positions.reconcile(marks([[0, 3n], [1, 10n]]), positions.seqs(), "behind_log")).toEqual([{ partition: 1, from: 20n, to: 10n, back: true }]);
    positions.end(0);
    expect(positions.reconcile(marks([[0, 3n], [1, 10n]]), positions.seqs(), "behind_log")).toEqual([{ partition: 0, from: 10n, to: 3n, back: true }]);
  });

  it("raise: the group committed past the mark; a target below the position is none", () => {
    const positions = folded([[0, 10n]]);
    positions.raise(0, 8n, "behind_log");
    expect(positions.healing()).toEqual([]);
    positions.raise(0, 25n, "behind_log");
    positions.raise(0, 20n, "behind_log");
    expect(positions.healing()).toEqual([{ partition: 0, records: 15n, why: "behind_log" }]);
  });

  it("a new assignment keeps the partitions still assigned and forgets the others", () => {
    const positions = folded([[0, 10n], [1, 20n]]);
    positions.assign([1, 2]);
    expect(positions.partitions()).toEqual([1, 2]);
    expect(positions.offset(1)).toBe(20n);
    expect(positions.offset(2)).toBeUndefined();
    expect(positions.offset(0)).toBeUndefined();
  });

  it("given committed offsets after a join: past a mark refolds to it, below commits the mark, none checks the origin", () => {
    const positions = folded([[0, 10n], [1, 20n], [2, 30n], [3, 0n], [4, 5n]]);
    positions.assign([0, 1, 2, 3, 4, 5]); // partition 5 not read yet: left alone
    const committed = new Map([[0, 10n], [1, 25n], [2, 12n], [3, -1n], [4, -1n], [5, 99n]]);
    expect(positions.compareCommitted(committed, "behind_log")).toEqual([
      { partition: 1, kind: "refold_to", committed: 25n, mark: 20n },
      { partition: 2, kind: "commit_mark", committed: 12n, mark: 30n },
      { partition: 4, kind: "check_origin" },
    ]);
    // Only the partition committed past its mark heals; the others are whole.
    expect(positions.healing()).toEqual([{ partition: 1, records: 5n, why: "behind_log" }]);
    expect(positions.sealed(1, 25n)).toBe(true);
    expect(positions.healing()).toEqual([]);
  });

  it("when a rebuild meets committed offsets, the partitions refold as a rebuild", () => {
    const positions = folded([[0, 0n], [1, 0n]]);
    expect(positions.compareCommitted(new Map([[0, 40n], [1, 0n]]), "rebuilding")).toEqual([{ partition: 0, kind: "refold_to", committed: 40n, mark: 0n }]);
    expect(positions.healing()).toEqual([{ partition: 0, records: 40n, why: "rebuilding" }]);
  });
});
