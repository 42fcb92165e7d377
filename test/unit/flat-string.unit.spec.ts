/**
 * flat() must make V8 copy a concatenation into one sequential string, on every
 * pinned Node (it is in the runtime tier): the producer's values and the
 * fragments a cached model keeps would otherwise hold their trees of nodes. Measured
 * by the heap after full collections in a process of its own
 * (test/support/flat-probe.ts), not by time; a one-byte sequential string
 * costs about a byte a character.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { flat } from "../../src/core/flat-string.js";

const PROBE = fileURLToPath(new URL("../support/flat-probe.ts", import.meta.url));

function probe(mode: "flat" | "kept"): number {
  const run = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", PROBE, mode], { encoding: "utf8", timeout: 120_000 });
  if (run.status !== 0) throw new Error(`the probe failed (${run.status ?? run.signal}): ${run.stderr}`);
  return (JSON.parse(run.stdout) as { bytesPerChar: number }).bytesPerChar;
}

describe("flat", () => {
  it("returns the same string, unchanged", () => {
    let s = "";
    for (let i = 0; i < 100; i++) s += `piece ${i} \u00e9\u4e2d;`;
    const copy = s.split("").join("");
    expect(flat(s)).toBe(s);
    expect(s).toBe(copy);
    expect(flat("")).toBe("");
  });

  it("leaves one sequential string: about a byte a character, where the tree it was built as holds several", () => {
    const kept = probe("kept");
    const flattened = probe("flat");
    expect(kept).toBeGreaterThan(3); // the control: the probe sees a tree (~6 bytes a character)
    expect(flattened).toBeLessThan(1.5);
  });
});
