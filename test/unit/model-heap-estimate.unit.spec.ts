/**
 * The cache's byte bound counts each model by MODEL_HEAP_BYTES (identity-model.ts). That estimate must stay above what
 * a model really holds on the heap, or a full cache holds more than MUFOLD_CACHE_MAX_BYTES: models are built as the
 * fold builds them, their records dropped, and the heap they keep measured after full collections (as
 * bench/model-memory.bench.ts does, which prints the breakdown).
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { routeRecords } from "../../src/fold/batch-router.js";
import { IdentityModel } from "../../src/fold/identity-model.js";
import { simulate } from "../../producers/simulation.js";
import { sourceRecord } from "../support/source-record.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const heapUsed = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const DECISION = { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 65_536 };

/** Fold `agents` identities of `perAgent` deliveries each into models, in batches of 400 records; the records die with this frame. */
function foldInto(models: Map<string, IdentityModel>, agents: number, perAgent: number, seed: number): void {
  const records = [...simulate({ agents, observationsPerAgent: perAgent, snapshotEvery: perAgent, duplicateRate: 0.1, conflictRate: 0.01, seed })].map((d, i) =>
    sourceRecord(d.observation, 0, i),
  );
  for (let i = 0; i < records.length; i += 400) {
    for (const batch of routeRecords(records.slice(i, i + 400), DECISION).identities) {
      let model = models.get(batch.identity);
      if (model === undefined) models.set(batch.identity, (model = new IdentityModel(batch.identity, batch.context)));
      model.committed(model.plan(batch.deliveries, { feed: true }), model.version + 1);
    }
  }
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
});
