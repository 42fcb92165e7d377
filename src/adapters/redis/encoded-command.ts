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
import { lend, type LentBytes } from "./lent-commands.js";

/** Grown to the largest command seen; every command is copied out of it, into a Buffer of its own (`end`) or lent (`endLent`). */
let scratch = Buffer.allocUnsafe(64 * 1024);

function reserve(bytes: number, used: number): void {
  if (used + bytes <= scratch.length) return;
  const grown = Buffer.allocUnsafe(Math.max(scratch.length * 2, used + bytes));
  scratch.copy(grown, 0, 0, used);
  scratch = grown;
}

/** The RESP array of bulk strings `name`, then every argument of `lists` in order: the bytes Redis reads as this command. */
export function encodeCommand(name: string, ...lists: readonly (readonly (string | number | Buffer)[])[]): Buffer {
  let count = 1;
  for (const list of lists) count += list.length;
  const out = startCommand(count).bulk(name);
  for (const list of lists) for (const arg of list) out.bulkOf(typeof arg === "number" ? String(arg) : arg);
  return out.end();
}

/** Where the command being written ends. */
let cursor = 0;

/**
 * A command written one argument at a time into the scratch, for a caller that has its arguments as pieces
 * (apply-command.ts): `startCommand(count)`, then exactly `count` bulk strings, then `end()`. One at a time.
 */
export interface CommandWriter {
  /** One argument. */
  bulk(text: string): CommandWriter;
  /** One argument, its bytes as they are. */
  bulkBytes(bytes: Uint8Array): CommandWriter;
  /** One argument: `bulk` of text, `bulkBytes` of bytes. */
  bulkOf(arg: string | Uint8Array): CommandWriter;
  /** One argument, the text of `a`, `b` and `c` joined (without joining them). */
  bulkOf3(a: string, b: string, c: string): CommandWriter;
  /** One argument, a non-negative safe integer in decimal. */
  bulkInteger(n: number): CommandWriter;
  /**
   * One argument of exactly `bytes` ASCII bytes, written by `write` (the caller counts them first); a count
   * that does not match is a bug, and throws.
   */
  bulkAscii(bytes: number, write: (piece: AsciiPiece) => void): CommandWriter;
  /** The command's bytes, in a Buffer of its own: a command may wait in the offline queue and be written again after a reconnect. */
  end(): Buffer;
  /** The command's bytes, lent (lent-commands.ts): give them back once Redis has replied to them. */
  endLent(): LentBytes;
}

/** What bulkAscii's writer appends: ASCII text (not checked), or a non-negative integer. */
export interface AsciiPiece {
  ascii(text: string): void;
  integer(n: number): void;
}

const writer: CommandWriter = {
  bulk(text: string): CommandWriter {
    cursor = putBulk(text, cursor);
    return writer;
  },
  bulkBytes(bytes: Uint8Array): CommandWriter {
    const n = bytes.length;
    reserve(n + 32, cursor);
    scratch[cursor] = 0x24; // $
    cursor = putCount(n, cursor + 1);
    scratch.set(bytes, cursor);
    cursor += n;
    scratch[cursor++] = 0x0d;
    scratch[cursor++] = 0x0a;
    return writer;
  },
  bulkOf(arg: string | Uint8Array): CommandWriter {
    return typeof arg === "string" ? writer.bulk(arg) : writer.bulkBytes(arg);
  },
  bulkOf3(a: string, b: string, c: string): CommandWriter {
    reserve(3 * (a.length + b.length + c.length) + 32, cursor);
    const units = a.length + b.length + c.length;
    const guess = 1 + digitsOf(units) + 2;
    let end = cursor + guess;
    end += scratch.write(a, end, "utf8");
    end += scratch.write(b, end, "utf8");
    end += scratch.write(c, end, "utf8");
    cursor = closeBulk(cursor, guess, end - cursor - guess);
    return writer;
  },
  bulkInteger(n: number): CommandWriter {
    if (!Number.isSafeInteger(n) || n < 0) return writer.bulk(String(n));
    const digits = digitsOf(n);
    reserve(digits + 32, cursor);
    scratch[cursor] = 0x24; // $
    cursor = putCount(digits, cursor + 1);
    cursor = putCount(n, cursor, digits);
    return writer;
  },
  bulkAscii(bytes: number, write: (piece: AsciiPiece) => void): CommandWriter {
    reserve(bytes + 32, cursor);
    scratch[cursor] = 0x24; // $
    const start = putCount(bytes, cursor + 1);
    cursor = start;
    write(asciiPiece);
    if (cursor - start !== bytes) throw new Error(`an ASCII argument of ${cursor - start} bytes was counted as ${bytes}`);
    scratch[cursor++] = 0x0d;
    scratch[cursor++] = 0x0a;
    return writer;
  },
  end(): Buffer {
    return Buffer.from(scratch.subarray(0, cursor));
  },
  endLent(): LentBytes {
    return lend(scratch, cursor);
  },
};

const asciiPiece: AsciiPiece = {
  ascii(text: string): void {
    for (let i = 0; i < text.length; i++) scratch[cursor++] = text.charCodeAt(i);
  },
  integer(n: number): void {
    cursor = putDigits(n, cursor, digitsOf(n));
  },
};

/** Start a command of `count` arguments (its name among them). */
export function startCommand(count: number): CommandWriter {
  reserve(32, 0);
  scratch[0] = 0x2a; // *
  cursor = putCount(count, 1);
  return writer;
}

/**
 * `n` in decimal (`digits` of them), then CRLF (no string made for the number, nor a view of the scratch: both would
 * be garbage per argument).
 */
function putCount(n: number, at: number, digits = digitsOf(n)): number {
  let end = putDigits(n, at, digits);
  scratch[end++] = 0x0d;
  scratch[end++] = 0x0a;
  return end;
}

/** `n` in decimal, `digits` of them, at `at`; returns where they end. */
function putDigits(n: number, at: number, digits: number): number {
  const end = at + digits;
  for (let i = end - 1; i >= at; i--) {
    scratch[i] = 0x30 + (n % 10);
    n = Math.floor(n / 10);
  }
  return end;
}

/** Decimal digits of a non-negative integer. */
export function digitsOf(n: number): number {
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
  return closeBulk(at, guess, scratch.write(text, at + guess, "utf8"));
}

/** The header and CRLF around `length` bytes written at `at + guess`, moved when the header is not `guess` bytes. */
function closeBulk(at: number, guess: number, length: number): number {
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
