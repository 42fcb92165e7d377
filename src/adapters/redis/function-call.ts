/**
 * Calling mufold's Redis functions over one connection, shared by the identity
 * store and the control store. A Redis that lost the libraries (restart
 * without persistence, FLUSHALL, FUNCTION FLUSH) gets a FunctionsMissingError:
 * loading Lua is `mufold setup`'s (an admin's) job, not the fold's or a reader's.
 *
 * On a cluster ioredis sends each call to the master owning its first key's
 * slot (checked once by `assertFcallRouting`); every call names keys of one slot.
 */
import { Redis, type Cluster } from "ioredis";
import { assertFcallRouting, isCluster } from "./connect.js";
import { classifyRedisError } from "./errors.js";
import { EncodedCommand, encodeCommand } from "./encoded-command.js";
import type { LentBytes } from "./lent-commands.js";

export type FunctionCommand = "FCALL" | "FCALL_RO";

export class FunctionCaller {
  /** Calls go out as pre-encoded bytes (one node only): `send` takes them. */
  readonly encoded: boolean;

  constructor(private readonly redis: Redis | Cluster) {
    if (isCluster(redis)) assertFcallRouting();
    this.encoded = redis instanceof Redis; // a node's client (not a cluster's, nor a stand-in)
  }

  async call(command: FunctionCommand, fn: string, keys: readonly string[], args: readonly (string | number | Buffer)[]): Promise<unknown> {
    try {
      // One node: the command's RESP bytes written straight into one Buffer (encoded-command.ts); a cluster routes by
      // the keys among ioredis's arguments.
      if (this.encoded) return await this.redis.sendCommand(new EncodedCommand(command, encodeCommand(command, [fn, keys.length], keys, args)));
      return await this.redis.call(command, fn, keys.length, ...keys, ...args);
    } catch (err) {
      throw classifyRedisError(err, fn);
    }
  }

  /**
   * A call of `fn` already encoded (one node only: `encoded`), e.g. by apply-command.ts. Its lent bytes
   * (lent-commands.ts) are given back once Redis replied; after an error they are kept, as ioredis may still write them.
   */
  async send(command: FunctionCommand, fn: string, lent: LentBytes): Promise<unknown> {
    if (!this.encoded) throw new Error(`${fn}: pre-encoded calls go to one node only`);
    try {
      const reply = await this.redis.sendCommand(new EncodedCommand(command, lent.bytes));
      lent.giveBack();
      return reply;
    } catch (err) {
      throw classifyRedisError(err, fn);
    }
  }
}
