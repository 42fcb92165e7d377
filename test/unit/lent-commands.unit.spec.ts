/** A lent apply command goes back only once Redis replied to it (byte-lender.unit.spec.ts covers the slabs). */
import { Redis, type Command } from "ioredis";
import { describe, expect, it } from "vitest";
import { FunctionCaller } from "../../src/adapters/redis/function-call.js";
import { commandsOut, lend } from "../../src/adapters/redis/lent-commands.js";

/** A source of `length` bytes, each `fill`. */
function bytesOf(fill: number, length: number): Buffer {
  return Buffer.alloc(length, fill);
}

/** A node's client that answers each command itself, as `answer` says (no server: only the caller's bookkeeping is under test). */
function callerAnswering(answer: (command: Command) => void): FunctionCaller {
  const redis = new Redis({ lazyConnect: true });
  redis.sendCommand = ((command: Command) => {
    answer(command);
    return command.promise;
  }) as typeof redis.sendCommand;
  return new FunctionCaller(redis);
}

describe("lent apply commands", () => {
  it("a second giveBack does nothing: the room is another command's by then", () => {
    const size = 1000;
    const before = commandsOut();
    const first = lend(bytesOf(1, size), size);
    first.giveBack();
    const second = lend(bytesOf(2, size), size);
    first.giveBack();
    expect(commandsOut()).toBe(before + 1);
    lend(bytesOf(3, size), size);
    expect(second.bytes.equals(bytesOf(2, size))).toBe(true);
  });

  it("FunctionCaller.send gives the bytes back after a reply, and keeps them after an error (ioredis may still write them)", async () => {
    const size = 1000;
    const failing = callerAnswering((command) => command.reject(new Error("connection lost")));
    const replying = callerAnswering((command) => command.resolve(Buffer.from("1")));
    const before = commandsOut();
    await expect(replying.send("FCALL", "f", lend(bytesOf(5, size), size))).resolves.toBe("1");
    expect(commandsOut()).toBe(before);
    const kept = lend(bytesOf(4, size), size);
    await expect(failing.send("FCALL", "f", kept)).rejects.toThrow("connection lost");
    expect(commandsOut()).toBe(before + 1);
    for (let i = 0; i < 50; i++) lend(bytesOf(6, size), size).giveBack();
    expect(kept.bytes.equals(bytesOf(4, size))).toBe(true);
  });
});
