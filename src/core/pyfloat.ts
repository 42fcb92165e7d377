/**
 * Python float semantics that JavaScript does not share: `repr` formatting
 * and `round(x, 6)` (exact decimal rounding, ties to even on the binary value).
 */

import { remember } from "./bounded-memo.js";

/**
 * Reprs of values met before. A fold writes the same few thousand confidences
 * and estimates over and over (~7 a record, 3.6k distinct values in the pipeline
 * bench's 100k records): a lookup instead of a number-to-text conversion and its
 * string. Bounded and emptied when full, so a value is formatted again at worst.
 * Zero, NaN and the infinities never get here (a Map does not tell -0 from 0).
 */
const REPR_MEMO_MAX = 8192;
const reprMemo = new Map<number, string>();

/** `repr(float)` as CPython writes it (`1.0`, `1e-05`, `1e+16`, `-0.0`, `inf`, `nan`). */
export function pyFloatRepr(x: number): string {
  if (x !== x) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  return reprMemo.get(x) ?? remember(reprMemo, REPR_MEMO_MAX, x, finiteRepr(x));
}

function finiteRepr(x: number): string {
  const ax = Math.abs(x);
  if (ax >= 1e-4 && ax < 1e16) {
    // JS also writes this range in fixed notation with the shortest digits.
    const s = String(x);
    return s.includes(".") ? s : s + ".0";
  }
  const e = ax.toExponential(); // shortest round-trip digits, e.g. "1.5e+16"
  const ePos = e.indexOf("e");
  const mantissa = e.slice(0, ePos);
  const exp = Number(e.slice(ePos + 1));
  const sign = x < 0 ? "-" : "";
  const expText = (exp < 0 ? "-" : "+") + String(Math.abs(exp)).padStart(2, "0");
  return `${sign}${mantissa}e${expText}`;
}

const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Exact binary decomposition: |x| = mantissa * 2^exponent. */
function decompose(x: number): { mantissa: bigint; exponent: number } {
  F64[0] = Math.abs(x);
  const hi = U32[LITTLE ? 1 : 0]!;
  const lo = U32[LITTLE ? 0 : 1]!;
  const biased = (hi >>> 20) & 0x7ff;
  const fracHi = hi & 0xfffff;
  let mantissa = (BigInt(fracHi) << 32n) | BigInt(lo);
  let exponent: number;
  if (biased === 0) {
    exponent = -1074;
  } else {
    mantissa |= 1n << 52n;
    exponent = biased - 1075;
  }
  return { mantissa, exponent };
}

const SCALE = 1_000_000;

/** Python's `round(x, 6)` for a finite float. */
export function pyRound6(x: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const ax = Math.abs(x);
  if (ax < 1e3) {
    // Fast path: decide from the scaled value unless it sits near a half.
    const y = ax * SCALE;
    const fl = Math.floor(y);
    const frac = y - fl;
    if (Math.abs(frac - 0.5) > 1e-6) {
      const n = frac < 0.5 ? fl : fl + 1;
      const r = n / SCALE;
      return x < 0 ? -r : r;
    }
  }
  return exactRound6(x);
}

function exactRound6(x: number): number {
  const { mantissa, exponent } = decompose(x);
  let n: bigint;
  if (exponent >= 0) {
    n = (mantissa << BigInt(exponent)) * 1_000_000n;
  } else {
    const num = mantissa * 1_000_000n;
    const den = 1n << BigInt(-exponent);
    const q = num / den;
    const r2 = (num % den) * 2n;
    n = r2 > den || (r2 === den && (q & 1n) === 1n) ? q + 1n : q;
  }
  const r = Number(`${n}e-6`);
  return x < 0 ? -r : r;
}
