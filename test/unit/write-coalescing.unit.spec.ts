/**
 * WriteCoalescer against a stand-in socket that records cork/uncork: commands
 * of one turn leave in groups of `every` (an uncork between groups) and the
 * rest at the end of the turn; a client that is not ready is left alone (its
 * commands wait in ioredis's offline queue, written at connect).
 */
import { describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { WriteCoalescer } from "../../src/adapters/redis/write-coalescing.js";

class FakeSocket {
  depth = 0;
  events: string[] = [];
  cork(): void {
    this.depth++;
    this.events.push("cork");
  }
  uncork(): void {
    this.depth--;
    this.events.push("uncork");
  }
}

const client = (stream: FakeSocket, status = "ready") => ({ status, stream }) as unknown as Redis;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("WriteCoalescer", () => {
  it("corks at a turn's first command, lets a group out every `every` commands and the rest at the end of the turn", async () => {
    const socket = new FakeSocket();
    const c = new WriteCoalescer(client(socket), 3);
    for (let i = 0; i < 8; i++) c.beforeCommand();
    // 1st command corks; the 4th and 7th end a group of three after it.
    expect(socket.events).toEqual(["cork", "uncork", "cork", "uncork", "cork"]);
    expect(socket.depth).toBe(1);
    await nextTurn();
    expect(socket.depth).toBe(0);
    expect(socket.events.at(-1)).toBe("uncork");
  });

  it("a new turn corks again; a replaced socket (reconnect) is corked on its own and the old one released once", async () => {
    const first = new FakeSocket();
    const target = client(first) as unknown as { stream: FakeSocket };
    const c = new WriteCoalescer(target as unknown as Redis, 10);
    c.beforeCommand();
    await nextTurn();
    c.beforeCommand();
    expect(first.events).toEqual(["cork", "uncork", "cork"]);
    const second = new FakeSocket();
    target.stream = second;
    c.beforeCommand();
    expect(second.events).toEqual(["cork"]);
    await nextTurn();
    expect(second.depth).toBe(0);
    // The old socket's pending release still runs: nothing stays corked on it either.
    expect(first.depth).toBe(0);
  });

  it("leaves a client that is not ready alone", async () => {
    const socket = new FakeSocket();
    const c = new WriteCoalescer(client(socket, "connecting"), 2);
    for (let i = 0; i < 5; i++) c.beforeCommand();
    await nextTurn();
    expect(socket.events).toEqual([]);
  });
});
