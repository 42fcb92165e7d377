/**
 * Command writes of one connection coalesced into few socket writes, without
 * holding them back: the fold's writer connection, which is not
 * auto-pipelined.
 *
 * Why not ioredis's auto-pipelining: it sends what was queued on setImmediate
 * and keeps one pipeline in flight per connection, so a batch's writes leave
 * only after every identity in flight is planned, and the next wave waits for
 * the whole previous one to be answered. Redis then idles while the worker
 * plans and the worker idles while Redis applies. Without it and without
 * this, ioredis writes each command on its own (one syscall each, and Redis
 * reads them one by one, at more CPU a record and more latency).
 *
 * Here the socket is corked at a turn's first command and uncorked after
 * every `every` commands and at the end of the turn (setImmediate): commands
 * leave in groups of `every` while the rest are still being planned.
 */
import type { Socket } from "node:net";
import type { Redis } from "ioredis";

/**
 * Commands (applies; loads of three) per group for the fold's writer: small
 * enough that Redis applies a group while the next is planned, large enough
 * to save the syscalls (16 folded fastest of 8, 16 and 64).
 */
export const WRITE_GROUP = 16;

export class WriteCoalescer {
  private corked: Socket | null = null;
  private count = 0;

  constructor(
    private readonly client: Redis,
    private readonly every: number,
  ) {}

  /** Call just before a command is handed to the client. */
  beforeCommand(): void {
    if (this.client.status !== "ready") return; // queued offline: ioredis writes it at connect
    const stream = this.client.stream as Socket;
    if (this.corked !== stream) {
      this.corked = stream;
      this.count = 0;
      stream.cork();
      setImmediate(() => this.release(stream));
      return;
    }
    if (++this.count >= this.every) {
      this.count = 0;
      stream.uncork(); // the group goes out in one write
      stream.cork();
    }
  }

  /** The end of the turn that corked `stream` (a socket replaced by a reconnect meanwhile is released too). */
  private release(stream: Socket): void {
    if (this.corked === stream) this.corked = null;
    stream.uncork();
  }
}
