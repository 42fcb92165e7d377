/**
 * The engine's sha256 calls, counted (bench/engine.bench.ts --hashes): imported
 * before any mufold module, it wraps node:crypto's one-shot `hash` (what
 * src/core/digest.ts, part-hash.ts and identity-parts.ts call) when `--hashes` is on the command
 * line, and records each call's input length and output encoding, in typed
 * arrays (outside the V8 heap: the run's heap traffic stays the engine's).
 * `takeAndReplay` then makes the same calls again over bytes of those lengths,
 * alone, so a run can say what these calls cost at least: without the engine
 * around them (warm caches, no collector, a Buffer where the engine hashed a
 * string and paid for encoding it). The wrapper's own work runs inside the
 * measured loop: with `--hashes`, the engine's CPU in the first table is a
 * little higher than without.
 */
import * as crypto from "node:crypto";
import { createRequire, syncBuiltinESMExports } from "node:module";

type Encoding = "hex" | "binary" | "base64" | "buffer" | undefined;
type OneShot = (algorithm: string, data: string | Uint8Array, encoding?: Encoding) => string | Buffer;

const ENCODINGS: readonly Encoding[] = ["hex", "binary", "base64", "buffer", undefined];
let lengths = new Int32Array(1 << 20);
let encodings = new Uint8Array(1 << 20);
let recorded = 0;

export const counting = process.argv.includes("--hashes");
const mutable = createRequire(import.meta.url)("node:crypto") as { hash: OneShot };
/** The unwrapped one-shot, for the replay. */
const original = mutable.hash;

function record(length: number, encoding: Encoding): void {
  if (recorded === lengths.length) {
    const longer = new Int32Array(2 * recorded);
    longer.set(lengths);
    lengths = longer;
    const wider = new Uint8Array(2 * recorded);
    wider.set(encodings);
    encodings = wider;
  }
  lengths[recorded] = length;
  encodings[recorded] = ENCODINGS.indexOf(encoding);
  recorded++;
}

if (counting) {
  mutable.hash = (algorithm, data, encoding) => {
    // The replay makes sha256 calls: the engine makes no other (a string's length is its UTF-8 bytes').
    if (algorithm === "sha256") record(typeof data === "string" ? Buffer.byteLength(data) : data.byteLength, encoding);
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
  recorded = 0;
}

/** The calls recorded since the last forget or take, made again alone over bytes of their lengths; the record is emptied. */
export function takeAndReplay(): HashCalls {
  let longest = 0;
  let bytes = 0;
  for (let i = 0; i < recorded; i++) {
    bytes += lengths[i]!;
    if (lengths[i]! > longest) longest = lengths[i]!;
  }
  const input = crypto.randomBytes(Math.max(1, longest));
  const views = new Map<number, Buffer>();
  const viewOf = (n: number) => views.get(n) ?? views.set(n, input.subarray(0, n)).get(n)!;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < recorded; i++) original("sha256", viewOf(lengths[i]!), ENCODINGS[encodings[i]!]);
  const cpu = process.cpuUsage(cpu0);
  const calls = recorded;
  forgetHashCalls();
  return { calls, bytes, aloneUs: cpu.user + cpu.system };
}
