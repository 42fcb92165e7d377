/** Process IO for commands: read an input file or stdin, write output that fully drains. */
import { readFile } from "node:fs/promises";

export class InputReadError extends Error {}

/** Standard output was closed by the reader (`| head`): the command ends quietly. */
export class ClosedPipeError extends Error {}

/** The exit code of a command whose standard output was closed: 128 + SIGPIPE, as `cat` killed by it. */
export const EXIT_CLOSED_PIPE = 141;

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

// ignoreBOM keeps a leading U+FEFF in the text, as Python's read_text("utf-8") does,
// so the JSON parser refuses it exactly like the reference ("Unexpected UTF-8 BOM").
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Strict UTF-8, a BOM kept as U+FEFF; throws a TypeError on invalid bytes. */
export function decodeUtf8(bytes: Uint8Array): string {
  return strictUtf8.decode(bytes);
}

/**
 * Read `path` (or stdin for "-") as Python's `Path.read_text("utf-8")` would:
 * strict UTF-8, a BOM kept, and universal newlines.
 */
export async function readInputText(path: string): Promise<string> {
  return inputText(await readInputBytes(path));
}

/** The bytes of `path` (or stdin for "-"); an InputReadError when it cannot be read. */
export async function readInputBytes(path: string): Promise<Buffer> {
  try {
    return path === "-" ? await readStdin() : await readFile(path);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new InputReadError(`cannot read input JSON: [Errno ${e.errno ?? "?"}] ${e.code ?? ""}: '${path}'`);
  }
}

/** The text of input bytes, as readInputText reads them. */
export function inputText(bytes: Uint8Array): string {
  let text: string;
  try {
    text = decodeUtf8(bytes);
  } catch {
    throw new InputReadError("input is not valid UTF-8");
  }
  return text.includes("\r") ? text.replace(/\r\n?/g, "\n") : text;
}

const isClosedPipe = (err: unknown): boolean => (err as NodeJS.ErrnoException | null)?.code === "EPIPE";

/** Write and wait for the data to be flushed, so piped output is never cut short; a closed pipe is a ClosedPipeError. */
export function writeOut(text: string | Uint8Array, stream: NodeJS.WritableStream = process.stdout): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(text, (err) => (err ? reject(isClosedPipe(err) ? new ClosedPipeError("standard output was closed") : err) : resolve()));
  });
}

let guarded = false;

/** A closed stdout or stderr must not crash the process with an EPIPE stack: writeOut reports it, later writes are dropped. */
export function guardClosedPipes(): void {
  if (guarded) return;
  guarded = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (err) => {
      if (!isClosedPipe(err)) throw err;
    });
  }
}
