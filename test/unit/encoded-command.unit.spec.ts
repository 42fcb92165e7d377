/** The fold's pre-encoded commands carry exactly the bytes ioredis itself writes for the same call. */
import fc from "fast-check";
import { Command } from "ioredis";
import { describe, expect, it } from "vitest";
import { EncodedCommand, encodeCommand } from "../../src/adapters/redis/encoded-command.js";

/** ioredis's own encoding of `name args…` (a string or Buffer, as it writes it to the socket). */
function ioredisBytes(name: string, args: (string | number)[]): Buffer {
  const written = new Command(name, args).toWritable(undefined as never);
  return Buffer.isBuffer(written) ? written : Buffer.from(written, "utf8");
}

describe("encodeCommand", () => {
  it("writes the RESP bytes ioredis writes, for any strings and numbers, across argument lists", () => {
    const arg = fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme", maxLength: 50 }), fc.nat({ max: 1_000_000_000 }), fc.constant(""));
    fc.assert(
      fc.property(fc.array(fc.array(arg, { maxLength: 20 }), { maxLength: 4 }), (lists) => {
        expect(encodeCommand("FCALL", ...lists).equals(ioredisBytes("FCALL", lists.flat()))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("sizes a text by its UTF-8 bytes, also where they take more digits than its UTF-16 units", () => {
    // 5 units, 10 bytes; 40 units, 120 bytes; 9,999 units, 29,997 bytes; ASCII at 9 and 10 units.
    const texts = ["é".repeat(5), "€".repeat(40), "€".repeat(9_999), "x".repeat(9), "x".repeat(10)];
    for (const text of texts) expect(encodeCommand("SET", ["k", text]).equals(ioredisBytes("SET", ["k", text]))).toBe(true);
    expect(encodeCommand("SET", ["é".repeat(5)]).toString("utf8")).toBe(`*2\r\n$3\r\nSET\r\n$10\r\n${"é".repeat(5)}\r\n`);
  });

  it("grows past its scratch buffer, and each command keeps its own bytes", () => {
    const big = "é".repeat(100_000); // 200,000 bytes of UTF-8
    const first = encodeCommand("FCALL", ["f", 1, "k"], [big]);
    const copy = Buffer.from(first);
    const second = encodeCommand("FCALL", ["g", 0]);
    expect(first.equals(copy)).toBe(true);
    expect(first.equals(ioredisBytes("FCALL", ["f", 1, "k", big]))).toBe(true);
    expect(second.toString("latin1")).toBe("*3\r\n$5\r\nFCALL\r\n$1\r\ng\r\n$1\r\n0\r\n");
  });

  it("an EncodedCommand writes those bytes and reads replies as strings", () => {
    const bytes = encodeCommand("PING", []);
    const command = new EncodedCommand("PING", bytes);
    expect(command.toWritable()).toBe(bytes);
    command.resolve(Buffer.from("PONG"));
    return expect(command.promise).resolves.toBe("PONG");
  });
});
