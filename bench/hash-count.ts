/**
 * The engine's sha256 calls, counted (bench/engine.bench.ts --hashes): imported
 * before any mufold module, it wraps node:crypto's one-shot `hash` (what
 * src/core/digest.ts and part-hash.ts call) when `--hashes` is on the command
 * line, and records each call's input length and output encoding. `replay`
 * then makes the same calls again over bytes of those lengths, alone, so a
 * run can say what its hashing costs at least: the calls without the engine
 * around them (warm caches, no collector), a floor of the engine's CPU that
 * no change to its data structures removes.
 */
import * as crypto from "node:crypto";
import { createRequire, syncBuiltinESMExports } from "node:module";

type Encoding = "hex" | "binary" | "base64" | "buffer" | undefined;
type OneShot = (algorithm: string, data: string | Uint8Array, encoding?: Encoding) => string | Buffer;

const lengths: number[] = [];
const encodings: Encoding[] = [];
export const counting = process.argv.includes("--hashes");
const mutable = createRequire(import.meta.url)("node:crypto") as { hash: OneShot };
/** The unwrapped one-shot, for the replay. */
const original = mutable.hash;

if (counting) {
  mutable.hash = (algorithm, data, encoding) => {
    lengths.push(typeof data === "string" ? Buffer.byteLength(data) : data.byteLength);
    encodings.push(encoding);
    return original(algorithm, data, encoding);
  };
  syncBuiltinESMExports(); // `import { hash } from "node:crypto"` and namespace imports see the wrapper
}

export interface HashCalls {
  calls: number;
  bytes: number;
  /** CPU of the same calls made again alone, µs. */
  aloneUs: number;
}

/** Forget the calls recorded so far (the workload's own, made while building it). */
export function forgetHashCalls(): void {
  lengths.length = 0;
  encodings.length = 0;
}

/** The calls recorded since the last forget or take, made again alone over bytes of their lengths; the record is emptied. */
export function takeAndReplay(): HashCalls {
  let longest = 0;
  let bytes = 0;
  for (const n of lengths) {
    bytes += n;
    if (n > longest) longest = n;
  }
  const input = crypto.randomBytes(Math.max(1, longest));
  const views = new Map<number, Buffer>();
  const viewOf = (n: number) => views.get(n) ?? views.set(n, input.subarray(0, n)).get(n)!;
  const hash = original;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < lengths.length; i++) hash("sha256", viewOf(lengths[i]!), encodings[i]);
  const cpu = process.cpuUsage(cpu0);
  const calls = lengths.length;
  forgetHashCalls();
  return { calls, bytes, aloneUs: cpu.user + cpu.system };
}
