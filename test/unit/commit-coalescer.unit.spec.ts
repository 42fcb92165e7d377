// The background commits: one OffsetCommit request at a time, carrying each partition's latest offset.
import { describe, expect, it } from "vitest";
import { CommitCoalescer, type OffsetCommit } from "../../src/adapters/kafka/commit-coalescer.js";

/** A coordinator that answers each request only when told to (or fails it). */
function coordinator() {
  const requests: OffsetCommit[][] = [];
  const answers: { resolve: () => void; reject: (e: Error) => void }[] = [];
  const send = (commits: OffsetCommit[]) =>
    new Promise<void>((resolve, reject) => {
      requests.push(commits.map((c) => ({ ...c })));
      answers.push({ resolve, reject });
    });
  /** Let queued microtasks run (the coalescer sends at the end of the turn). */
  const settle = () => new Promise<void>((r) => setImmediate(r));
  return { requests, answers, send, settle };
}

const at = (partition: number, offset: number): OffsetCommit => ({ topic: "t", partition, offset: String(offset) });

/** A coalescer over its own coordinator. */
function coalescing(onError: (error: unknown, topic: string, partition: number) => void = () => undefined) {
  const c = coordinator();
  return { c, coalescer: new CommitCoalescer(c.send, onError) };
}

describe("CommitCoalescer", () => {
  it("given no request in flight, when commits are asked for in one turn, then they go out together in one request", async () => {
    const { c, coalescer } = coalescing();
    coalescer.commit(at(0, 10));
    coalescer.commit(at(1, 7));
    await c.settle();
    expect(c.requests).toEqual([[at(0, 10), at(1, 7)]]);
  });

  it("given a request in flight, when partitions commit meanwhile, then the next request carries each one's latest offset, in one request", async () => {
    const { c, coalescer } = coalescing();
    coalescer.commit(at(0, 10));
    await c.settle();
    coalescer.commit(at(0, 20));
    coalescer.commit(at(1, 5));
    coalescer.commit(at(0, 30));
    await c.settle();
    expect(c.requests).toHaveLength(1); // nothing more while the first is unanswered
    c.answers[0]!.resolve();
    await c.settle();
    expect(c.requests).toEqual([[at(0, 10)], [at(0, 30), at(1, 5)]]);
    c.answers[1]!.resolve();
    await coalescer.flush();
    expect(c.requests).toHaveLength(2);
  });

  it("given a partition asked to commit a lower offset after a higher one (a seek back), then the last one asked for is what goes out", async () => {
    const { c, coalescer } = coalescing();
    coalescer.commit(at(0, 50));
    coalescer.commit(at(0, 40));
    await c.settle();
    expect(c.requests).toEqual([[at(0, 40)]]);
  });

  it("given a request that fails, then each of its partitions is reported, and later commits are still sent", async () => {
    const failed: string[] = [];
    const { c, coalescer } = coalescing((error, topic, partition) => failed.push(`${topic}:${partition} ${(error as Error).message}`));
    coalescer.commit(at(0, 10));
    coalescer.commit(at(3, 4));
    await c.settle();
    c.answers[0]!.reject(new Error("coordinator moved"));
    await coalescer.flush();
    expect(failed).toEqual(["t:0 coordinator moved", "t:3 coordinator moved"]);
    coalescer.commit(at(0, 11));
    await c.settle();
    expect(c.requests).toEqual([[at(0, 10), at(3, 4)], [at(0, 11)]]);
  });

  it("given commits asked for while a request is in flight, when flushed, then flush returns only after the last of them was answered", async () => {
    const { c, coalescer } = coalescing();
    coalescer.commit(at(0, 1));
    await c.settle();
    coalescer.commit(at(0, 2));
    let flushed = false;
    const flushing = coalescer.flush().then(() => (flushed = true));
    c.answers[0]!.resolve();
    await c.settle();
    expect(flushed).toBe(false); // the second request is out, unanswered
    expect(c.requests).toEqual([[at(0, 1)], [at(0, 2)]]);
    c.answers[1]!.resolve();
    await flushing;
    expect(flushed).toBe(true);
  });
});
