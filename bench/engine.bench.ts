/**
 * The fold engine alone: decide + plan of the pipeline bench's workload
 * (100,000 records of ~2,000 identities, 12 partitions) into in-memory
 * IdentityModels, as a worker does between fetching a batch and writing it; no
 * Kafka, no Redis. Reports CPU per record (user + system, the collector's
 * threads included) and its split between the main thread and the others
 * (cpu-split.ts), the decide / plan split and the young generation's traffic
 * (heap-traffic.ts: bytes allocated, surviving scavenges, promoted), which
 * barely moves between runs. Run it on two checkouts, alternating, to
 * compare them side by side.
 *
 *   npx tsx bench/engine.bench.ts [--records 100000] [--batch 500] [--order partition|interleaved] [--runs 3] [--forgotten] [--hashes]
 *
 * --order: each partition's batches one partition after another (default), or
 * interleaved across the partitions, as a worker reading all of them meets them.
 *
 * --forgotten: every run twice, in turns: once as a worker folds (each
 * identity's model kept between its batches), once with each model dropped
 * after its plan, so an identity's next batch starts from nothing. The second
 * folds wrong projections and is a measurement only: the difference is what
 * keeping identities on the V8 heap costs (their state surviving scavenges,
 * promoted, marked), the part of the engine's CPU a smaller kept state could win.
 *
 * --hashes: count the engine's sha256 calls (bench/hash-count.ts) and, after
 * each run, make the same calls again alone: a second table gives calls and
 * bytes per record and their CPU alone, the part of the engine's CPU that is
 * hashing the contract and the content digest ask for.
 */
// First: it wraps node:crypto's hash (with --hashes) before the engine's modules take it.
import { counting, forgetHashCalls, takeAndReplay, type HashCalls } from "./hash-count.js";
import { parseArgs } from "node:util";
import { routeRecords } from "../src/fold/batch-router.js";
import { IdentityModel } from "../src/fold/identity-model.js";
import { startThreadSplit } from "./cpu-split.js";
import { startHeapTraffic } from "./heap-traffic.js";
import { runUnderMufoldFlags } from "./mufold-flags.js";
import { batchesOf, partitionedWorkload } from "./partitioned-workload.js";

await runUnderMufoldFlags();

const { values } = parseArgs({
  options: { records: { type: "string", default: "100000" }, batch: { type: "string", default: "500" }, runs: { type: "string", default: "3" }, order: { type: "string", default: "partition" }, forgotten: { type: "boolean", default: false }, hashes: { type: "boolean", default: false } },
});
if (values.order !== "partition" && values.order !== "interleaved") throw new Error(`--order is partition or interleaved, not ${values.order}`);
const records = Number(values.records);
const batchSize = Number(values.batch);

const batches = batchesOf(partitionedWorkload(records), batchSize, values.order);

if (values.hashes !== counting) throw new Error("--hashes is read by bench/hash-count.ts from the command line");
const hashRows: string[] = [];
const modes = values.forgotten ? (["kept", "forgotten"] as const) : (["kept"] as const);
console.log(`| run | models | CPU µs per record | main / other threads µs | decide µs | plan µs | identity batches | deliveries per identity batch | allocated / survived / promoted bytes per record | scavenges (pause µs per record) |`);
console.log(`|---|---|---|---|---|---|---|---|---|---|`);
for (let run = 1; run <= Number(values.runs); run++) for (const mode of modes) {
  const models = new Map<string, IdentityModel>();
  let decideNs = 0n;
  let planNs = 0n;
  let identityBatches = 0;
  forgetHashCalls();
  const traffic = startHeapTraffic();
  const cpu0 = process.cpuUsage();
  const split = startThreadSplit();
  for (const batch of batches) {
    const t0 = process.hrtime.bigint();
    const routed = routeRecords(batch, { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 65536 });
    const t1 = process.hrtime.bigint();
    for (const one of routed.identities) {
      identityBatches++;
      let model = models.get(one.identity);
      if (model === undefined) models.set(one.identity, (model = new IdentityModel(one.identity, one.context)));
      model.committed(model.plan(one.deliveries, { feed: true }), model.version + 1);
      if (mode === "forgotten") models.delete(one.identity);
    }
    decideNs += t1 - t0;
    planNs += process.hrtime.bigint() - t1;
  }
  const cpu = process.cpuUsage(cpu0);
  const threads = split.stop(records);
  const t = traffic.stop(records);
  const us = (ns: bigint) => (Number(ns) / 1000 / records).toFixed(1);
  if (counting) hashRows.push(hashRow(run, mode, takeAndReplay(), cpu.user + cpu.system));
  console.log(`| ${run} | ${mode} | ${Math.round((cpu.user + cpu.system) / records)} | ${threads === null ? "not measured (no /proc)" : `${threads.mainUs.toFixed(1)} / ${threads.otherUs.toFixed(1)}`} | ${us(decideNs)} | ${us(planNs)} | ${identityBatches} | ${(records / identityBatches).toFixed(1)} | ${t.allocatedBytes} / ${t.survivedBytes} / ${t.promotedBytes} | ${t.scavenges} (${t.scavengePauseUs}) |`);
}

function hashRow(run: number, mode: string, h: HashCalls, engineUs: number): string {
  return `| ${run} | ${mode} | ${(h.calls / records).toFixed(2)} | ${Math.round(h.bytes / Math.max(1, h.calls))} | ${(h.aloneUs / records).toFixed(1)} | ${((100 * h.aloneUs) / engineUs).toFixed(0)}% |`;
}

if (counting) {
  console.log(`\n| run | models | sha256 calls per record | bytes per call | the same calls alone, CPU µs per record | of the engine's CPU |`);
  console.log(`|---|---|---|---|---|---|`);
  for (const row of hashRows) console.log(row);
}
