/**
 * What a cached identity model keeps of an observation must not keep the
 * record's text alive: a model lives as long as it stays cached, and in V8 a
 * substring of 13 characters or more is a view into its parent. Measured by
 * the heap after full collections in a process of its own
 * (test/support/retention-probe.ts), not by time.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { detached } from "../../src/core/flat-string.js";
import { contextOfObservation } from "../../src/core/index.js";
import { ownedContext, ownedObservation } from "../../src/core/owned-observation.js";
import type { Observation } from "../../src/core/observation-model.js";
import { observation } from "../support/fixtures.js";

const PROBE = fileURLToPath(new URL("../support/retention-probe.ts", import.meta.url));
/** A child process that compiles the core and folds 4,000 observations: well past the unit tier's 5 s default on a busy machine. */
const PROBE_TIMEOUT_MS = 120_000;

function probe(tier: "canonical" | "bytes" | "plain" | "slow"): { padding: number; perObservation: number } {
  const run = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", PROBE, tier], { encoding: "utf8", timeout: PROBE_TIMEOUT_MS });
  if (run.status !== 0) throw new Error(`the probe failed (${run.status ?? run.signal}): ${run.stderr}`);
  return JSON.parse(run.stdout) as { padding: number; perObservation: number };
}

describe("a cached model does not keep the text its observations were read from", () => {
  it("detached copies every string exactly", () => {
    const base = "muo_0123456789abcdef\u00e9\u4e2d\ud83d\ude00\ud800 tail";
    for (let i = 0; i <= base.length; i++) {
      const s = (base + "x").slice(0, i);
      expect(detached(s)).toBe(s);
    }
  });

  it("an owned observation equals the original, field for field and in the same property order", () => {
    const o = observation();
    const own = ownedObservation(o, ownedContext(contextOfObservation(o, "memory_utility_reducer_v0")));
    expect(own).toStrictEqual(o);
    expect(Object.keys(own)).toEqual(Object.keys(o));
    expect(Object.keys(own.scope)).toEqual(Object.keys(o.scope));
    expect(own.memory_ref_digests).not.toBe(o.memory_ref_digests);
  });

  it("an owned observation takes its identity's scope and refs from the owned context, and only when they are its own", () => {
    const o = observation();
    const context = ownedContext(contextOfObservation(o, "memory_utility_reducer_v0"));
    const own = ownedObservation(o, context);
    expect(own).toStrictEqual(o);
    expect(own.scope).toBe(context.scope);
    const other = ownedContext({ ...context, scope: { ...context.scope, agent_id: "another-agent" } });
    const apart = ownedObservation(o, other);
    expect(apart).toStrictEqual(o);
    expect(apart.scope).not.toBe(other.scope);
  });

  it("owned observations share the values they repeat (digests, reason codes, evaluator) and equal the originals", () => {
    // Two observations cut from JSON texts of their own, as the readers cut them: equal values, distinct strings.
    const cut = (o: Observation): Observation => JSON.parse(JSON.stringify(o)) as Observation;
    const a = cut(observation({ reason_codes: ["signal:helpful_long"], evaluator_ref: "evaluator:shared-one" }));
    const b = cut({ ...a, observation_id: "muo_" + "b".repeat(64), memory_ref_digests: [...a.memory_ref_digests] });
    const context = ownedContext(contextOfObservation(a, "memory_utility_reducer_v0"));
    const [ownA, ownB] = [ownedObservation(a, context), ownedObservation(b, context)];
    expect([ownA, ownB]).toStrictEqual([a, b]);
    expect(ownB.memory_ref_digests).toBe(ownA.memory_ref_digests); // one list of one digest, kept once
    expect(ownB.reason_codes).toBe(ownA.reason_codes);
    expect(ownB.evaluator_ref).toBe(ownA.evaluator_ref);
    expect(Object.isFrozen(ownA.reason_codes)).toBe(true);
    expect(() => ownA.reason_codes.push("x")).toThrow(TypeError); // shared lists cannot be changed through one observation
    expect(ownA.evidence_refs).toEqual(a.evidence_refs);
  });

  it("values stay equal once the pool has been emptied for being full", () => {
    const context = ownedContext(contextOfObservation(observation(), "memory_utility_reducer_v0"));
    const owned: Observation[] = [];
    const originals: Observation[] = [];
    for (let i = 0; i < 20_000; i++) {
      const o = observation({ reason_codes: [`reason:${i}-padding`], evaluator_ref: `evaluator:${i % 3}-padding` });
      originals.push(o);
      owned.push(ownedObservation(o, context));
    }
    expect(owned).toStrictEqual(originals);
  });

  // Each text sits after `padding` spaces: a model keeping its texts would keep more than the padding per
  // observation (measured on 095928c: ~21,700 bytes in all three; now ~6,500, the model's own parts included).
  it.each(["canonical", "bytes", "plain", "slow"] as const)(
    "folding what the %s path reads keeps less than the padding per observation",
    (tier) => {
      const { padding, perObservation } = probe(tier);
      expect(perObservation).toBeGreaterThan(0);
      expect(perObservation).toBeLessThan(padding);
    },
    PROBE_TIMEOUT_MS,
  );
});
