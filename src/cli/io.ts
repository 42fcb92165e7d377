/** Process IO for commands: read an input file or stdin, write output that fully drains. */
import { readFile } from "node:fs/promises";

export class InputReadError extends Error {}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Read `path` (or stdin for "-") as Python's `Path.read_text("utf-8")` would:
 * strict UTF-8 and universal newlines.
 */
export async function readInputText(path: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = path === "-" ? await readStdin() : await readFile(path);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new InputReadError(`cannot read input JSON: [Errno ${e.errno ?? "?"}] ${e.code ?? ""}: '${path}'`);
  }
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new InputReadError("input is not valid UTF-8");
  }
  return text.includes("\r") ? text.replace(/\r\n?/g, "\n") : text;
}

/** Write and wait for the data to be flushed, so piped output is never cut short. */
export function writeOut(text: string, stream: NodeJS.WritableStream = process.stdout): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(text, (err) => (err ? reject(err) : resolve()));
  });
}
