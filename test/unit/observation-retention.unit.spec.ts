/**
 * An observation read from a record's text must not keep that text alive: a
 * cached model holds its observations for as long as it stays cached, and in
 * V8 a substring of 13 characters or more is a view into its parent. Measured
 * by the heap after full collections in a process of its own
 * (test/support/retention-probe.ts), not by time.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { detached } from "../../src/core/flat-string.js";

const PROBE = fileURLToPath(new URL("../support/retention-probe.ts", import.meta.url));

function probe(tier: "canonical" | "plain"): { padding: number; perObservation: number } {
  const run = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", PROBE, tier], { encoding: "utf8", timeout: 60_000 });
  if (run.status !== 0) throw new Error(`the probe failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as { padding: number; perObservation: number };
}

describe("observations read from text do not keep the text", () => {
  it("detached copies every string exactly", () => {
    const base = "muo_0123456789abcdef\u00e9\u4e2d\ud83d\ude00\ud800 tail";
    for (let i = 0; i <= base.length; i++) {
      const s = (base + "x").slice(0, i);
      expect(detached(s)).toBe(s);
    }
  });

  // Each text sits inside `padding` spaces: keeping the text would keep more than the padding per observation
  // (measured before the fix: ~6,000 bytes canonical, ~5,000 plain; after: ~1,100-1,300).
  it.each(["canonical", "plain"] as const)("the %s tier's observations keep less than the padding around their text", (tier) => {
    const { padding, perObservation } = probe(tier);
    expect(perObservation).toBeGreaterThan(0);
    expect(perObservation).toBeLessThan(padding);
  });
});
