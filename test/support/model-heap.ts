/**
 * Identity models built as a fold worker builds them, and the heap they keep:
 * for bench/model-memory.bench.ts and the unit test of the cache's estimate.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { routeRecords } from "../../src/fold/batch-router.js";
import { IdentityModel } from "../../src/fold/identity-model.js";
import type { SourceRecord } from "../../src/fold/source-record.js";

setFlagsFromString("--expose-gc");
const gc = ((globalThis as { gc?: () => void }).gc ?? runInNewContext("gc")) as () => void;

/**
 * Bytes in use after two full collections: the V8 heap's, and the ArrayBuffers' outside it (a model's shelf
 * of observation bytes, shelved-observation.ts), which the cache's estimate counts too.
 */
export function heapUsed(): number {
  gc();
  gc();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** Decide and plan `records` into `models`, in batches of 400 records as the fold does, each plan committed. */
export function foldIntoModels(models: Map<string, IdentityModel>, records: readonly SourceRecord[]): void {
  for (let i = 0; i < records.length; i += 400) {
    for (const batch of routeRecords(records.slice(i, i + 400), { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 65_536 }).identities) {
      let model = models.get(batch.identity);
      if (model === undefined) models.set(batch.identity, (model = new IdentityModel(batch.identity, batch.context)));
      model.committed(model.plan(batch.deliveries, { feed: true }), model.version + 1);
    }
  }
}
