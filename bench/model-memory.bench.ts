/**
 * Heap a worker's cached identity models hold, in process, no Kafka or Redis:
 * records are decided and planned as the fold does (400-record batches, change
 * feed on) into one IdentityModel per identity, then the records are dropped
 * and the heap collected. Two shapes: many identities of one delivery (the
 * worker-memory bench's workload) and fewer identities of ~44 accepted
 * observations (the pipeline bench's), and a few identities near the
 * 1,024-delivery bound. Reports bytes per model and per accepted observation,
 * and beside them what the cache's byte bound counts per model
 * (IdentityModel.heapEstimate): the estimate should stay above the measure.
 *
 *   npx tsx bench/model-memory.bench.ts [--one 10000] [--identities 1000] [--per-identity 50] [--large 20]
 */
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { routeRecords } from "../src/fold/batch-router.js";
import { IdentityModel } from "../src/fold/identity-model.js";
import { observationRecord } from "../src/client/producer.js";
import { simulate } from "../producers/simulation.js";
import { runUnderMufoldFlags } from "./mufold-flags.js";

await runUnderMufoldFlags();

const { values } = parseArgs({
  options: { one: { type: "string", default: "10000" }, identities: { type: "string", default: "1000" }, "per-identity": { type: "string", default: "50" }, large: { type: "string", default: "20" } },
});

setFlagsFromString("--expose-gc");
const gc = ((globalThis as { gc?: () => void }).gc ?? runInNewContext("gc")) as () => void;
const heap = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

/** Decide and plan `records` as the fold does, into `models`; the records die with this call's frame. */
function foldInto(models: Map<string, IdentityModel>, records: number, agents: number, snapshotEvery: number): void {
  const messages = [...simulate({ agents, observationsPerAgent: Math.ceil(records / agents), snapshotEvery, duplicateRate: 0.1, conflictRate: 0.01, seed: 5 })]
    .slice(0, records)
    .map((d) => observationRecord(d.observation));
  const sourced = messages.map((m, i) => ({ topic: "t", partition: 0, offset: String(i), key: Buffer.from(m.key as string), value: Buffer.from(m.value as string), headers: {} }));
  for (let i = 0; i < sourced.length; i += 400) {
    for (const batch of routeRecords(sourced.slice(i, i + 400), { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 65536 }).identities) {
      let model = models.get(batch.identity);
      if (model === undefined) models.set(batch.identity, (model = new IdentityModel(batch.identity, batch.context)));
      model.committed(model.plan(batch.deliveries, { feed: true }), model.version + 1);
    }
  }
}

function measure(records: number, agents: number, snapshotEvery: number): { models: number; accepted: number; perModel: number; perAccepted: number; estimate: number } {
  const models = new Map<string, IdentityModel>();
  const before = heap();
  foldInto(models, records, agents, snapshotEvery);
  const held = heap() - before;
  let accepted = 0;
  let estimated = 0;
  for (const m of models.values()) {
    accepted += m.parts.accepted;
    estimated += m.heapEstimate();
  }
  return { models: models.size, accepted, perModel: Math.round(held / models.size), perAccepted: Math.round(held / accepted), estimate: Math.round(estimated / models.size) };
}

const one = Number(values.one);
const identities = Number(values.identities);
const perIdentity = Number(values["per-identity"]);
const large = Number(values.large);
console.log("| workload | models | accepted observations | bytes per model | bytes per accepted observation | estimated bytes per model (the cache's count) |");
console.log("|---|---|---|---|---|---|");
for (const [label, r] of [
  [`${one} identities, one delivery each`, measure(one, one, 1)],
  [`${identities} identities, ${perIdentity} deliveries each`, measure(identities * perIdentity, identities, perIdentity)],
  [`${large} identities, 1,000 deliveries each`, measure(large * 1000, large, 1000)],
] as const) {
  console.log(`| ${label} | ${r.models} | ${r.accepted} | ${r.perModel} | ${r.perAccepted} | ${r.estimate} |`);
}
