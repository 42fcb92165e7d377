/**
 * The cache's byte bound counts each model by MODEL_HEAP_BYTES (identity-model.ts). That estimate must stay above what
 * a model really holds, on the heap and in its shelf (ArrayBuffers), or a full cache holds more than MUFOLD_CACHE_MAX_BYTES:
 * models are built as the fold builds them, their records dropped, and what they keep measured after full collections (as
 * bench/model-memory.bench.ts does, which prints the breakdown).
 */
import { describe, expect, it } from "vitest";
import type { IdentityModel } from "../../src/fold/identity-model.js";
import { simulate } from "../../producers/simulation.js";
import { foldIntoModels, heapUsed } from "../support/model-heap.js";
import { sourceRecord } from "../support/source-record.js";

/** `agents` identities of `perAgent` deliveries each, folded into `models`; the records die with this frame. */
function foldInto(models: Map<string, IdentityModel>, agents: number, perAgent: number, seed: number): void {
  foldIntoModels(models, [...simulate({ agents, observationsPerAgent: perAgent, snapshotEvery: perAgent, duplicateRate: 0.1, conflictRate: 0.01, seed })].map((d, i) => sourceRecord(d.observation, 0, i)));
}

describe("the cache's estimate of a model's heap", () => {
  it.each([
    ["one delivery each", 3000, 1],
    ["~45 accepted observations each", 150, 50],
  ])("is above what models of %s hold", (_, agents, perAgent) => {
    // First a few models thrown away: the first fold also allocates what is made once (bytecode, feedback, pools),
    // which would count as the models' heap in whichever case runs first (~2.4 MB: 8.3 against 7.5 KB a model).
    foldInto(new Map(), 40, perAgent, 99);
    const models = new Map<string, IdentityModel>();
    const before = heapUsed();
    foldInto(models, agents, perAgent, 7);
    const held = heapUsed() - before;
    let estimated = 0;
    for (const m of models.values()) estimated += m.heapEstimate();
    expect(models.size).toBe(agents);
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThan(estimated);
    // Not so far above that the bound wastes most of the memory it allows.
    expect(held).toBeGreaterThan(estimated / 2);
  });

  it("is above what models past the delivery bound hold (they keep no observations)", () => {
    // Measured as what dropping them frees: folding 1,100 deliveries an identity also fills bounded pools
    // and memos shared by every model, which a difference from before the fold would count as theirs.
    const models = new Map<string, IdentityModel>();
    foldInto(models, 30, 1_100, 8);
    expect([...models.values()].every((m) => m.sealed)).toBe(true);
    let estimated = 0;
    for (const m of models.values()) estimated += m.heapEstimate();
    const withModels = heapUsed();
    models.clear();
    const held = withModels - heapUsed();
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThan(estimated);
  });
});
