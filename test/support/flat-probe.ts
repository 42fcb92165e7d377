/**
 * Run as `node --expose-gc --import tsx flat-probe.ts flat|kept`: prints the
 * heap bytes a string built by many concatenations keeps per character once
 * only the string is held, after full collections (flat-string.unit.spec.ts).
 * `flat`: each string passed through flat() when made; `kept`: as built, the
 * tree of concatenation nodes and its pieces (the control: what the probe must
 * tell apart). A process of its own, so the heap holds nothing but the probe.
 */
import { flat } from "../../src/core/flat-string.js";

const STRINGS = 2_000;
const PIECES = 200;
const gc = (globalThis as { gc?: () => void }).gc!;
const mode = process.argv[2];
if (mode !== "flat" && mode !== "kept") throw new Error("flat-probe.ts flat|kept");

gc();
gc();
const before = process.memoryUsage().heapUsed;
const held: string[] = [];
let chars = 0;
for (let i = 0; i < STRINGS; i++) {
  let s = "";
  for (let j = 0; j < PIECES; j++) s += `|${i}:${j}-piece`; // each piece a string of its own
  held.push(mode === "flat" ? flat(s) : s);
  chars += s.length;
}
gc();
gc();
const after = process.memoryUsage().heapUsed;
process.stdout.write(JSON.stringify({ bytesPerChar: (after - before) / chars, strings: held.length }) + "\n");
