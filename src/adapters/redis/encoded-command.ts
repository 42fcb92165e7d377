/**
 * A command written as RESP bytes straight from its arguments into one
 * Buffer, for the fold's applies on one node. ioredis builds the same bytes by
 * concatenating a string per argument, copying the argument list, and the
 * socket then flattens the result: short-lived strings per record. The Buffer
 * lives outside the V8 heap, so the collector neither copies nor marks it.
 *
 * Only where ioredis routes by the connection, not by the arguments: a Redis
 * Cluster picks a node from the command's keys, which this command does not
 * list (the store uses the plain call there).
 */
import { Command } from "ioredis";

/** Grown to the largest command seen; every command is copied out of it into a Buffer of its own. */
let scratch = Buffer.allocUnsafe(64 * 1024);

function reserve(bytes: number, used: number): void {
  if (used + bytes <= scratch.length) return;
  const grown = Buffer.allocUnsafe(Math.max(scratch.length * 2, used + bytes));
  scratch.copy(grown, 0, 0, used);
  scratch = grown;
}

/** The RESP array of bulk strings `name`, then every argument of `lists` in order: the bytes Redis reads as this command. */
export function encodeCommand(name: string, ...lists: readonly (readonly (string | number)[])[]): Buffer {
  reserve(32, 0);
  let at = 0;
  let count = 1;
  for (const list of lists) count += list.length;
  scratch[at++] = 0x2a; // *
  at = putCount(count, at);
  at = putBulk(name, at);
  for (const list of lists) for (const arg of list) at = putBulk(typeof arg === "string" ? arg : String(arg), at);
  // Its own copy: a command may wait in the offline queue and be written again after a reconnect.
  return Buffer.from(scratch.subarray(0, at));
}

/**
 * `n` in decimal (`digits` of them), then CRLF (no string made for the number, nor a view of the scratch: both would
 * be garbage per argument).
 */
function putCount(n: number, at: number, digits = digitsOf(n)): number {
  let end = at + digits;
  for (let i = end - 1; i >= at; i--) {
    scratch[i] = 0x30 + (n % 10);
    n = Math.floor(n / 10);
  }
  scratch[end++] = 0x0d;
  scratch[end++] = 0x0a;
  return end;
}

/** Decimal digits of a non-negative integer. */
function digitsOf(n: number): number {
  let size = 1;
  for (let x = n; x >= 10; x = Math.floor(x / 10)) size++;
  return size;
}

/**
 * `$<bytes>` CRLF, the text's UTF-8, CRLF. One pass over the text: it is written after a header sized for as many
 * bytes as it has UTF-16 units (its size exactly when ASCII, as a fold's text is), and moved in the rare case its
 * UTF-8 size has more digits. (Measuring it first with Buffer.byteLength was a second native pass per argument.)
 */
function putBulk(text: string, at: number): number {
  // UTF-8 takes at most 3 bytes a UTF-16 unit.
  reserve(3 * text.length + 32, at);
  const guess = 1 + digitsOf(text.length) + 2;
  const length = scratch.write(text, at + guess, "utf8");
  const digits = digitsOf(length);
  const header = 1 + digits + 2;
  if (header !== guess) scratch.copyWithin(at + header, at + guess, at + guess + length);
  scratch[at] = 0x24; // $
  at = putCount(length, at + 1, digits) + length;
  scratch[at++] = 0x0d;
  scratch[at++] = 0x0a;
  return at;
}

/** A command whose bytes are already encoded; its reply is read as ioredis reads `call`'s (UTF-8 strings). */
export class EncodedCommand extends Command {
  constructor(
    name: string,
    private readonly bytes: Buffer,
  ) {
    super(name, [], { replyEncoding: "utf8" });
  }

  override toWritable(): Buffer {
    return this.bytes;
  }
}
