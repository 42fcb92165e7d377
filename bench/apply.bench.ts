/**
 * The Redis apply alone: the writes the fold engine plans for the pipeline
 * bench's workload, sent to a real Redis two ways, side by side in one run:
 * the previous release's layout (`mufold_apply_v1`: four arguments and one
 * command per op) and the store's (`mufold_apply_v2`: a program of runs, one
 * command per run, only operands as arguments). Reports, per record, this
 * process's CPU (building and sending the calls), the Redis server's CPU (INFO
 * cpu: run it on a quiet Redis) and wall time, with 8 identities in flight as
 * the applier has. `--batch` is the records per partition batch the plans come
 * from (500: the live fold's shape; 100000: a replay's, one call per identity).
 *
 *   npx tsx bench/apply.bench.ts [--records 50000] [--batch 500] [--runs 3]
 */
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { ensureSetup } from "../src/adapters/redis/functions.js";
import { RedisIdentityStore } from "../src/adapters/redis/identity-store.js";
import { resolveSettings } from "../src/config/settings.js";
import { routeRecords } from "../src/fold/batch-router.js";
import type { PartOps } from "../src/fold/delta.js";
import { IdentityModel } from "../src/fold/identity-model.js";
import { identityKeys, partIndex } from "../src/adapters/redis/keys.js";
import { runUnderMufoldFlags } from "./mufold-flags.js";
import { redisCpuSeconds } from "./redis-info.js";
import { batchesOf, partitionedWorkload } from "./partitioned-workload.js";
import { fragmentText } from "../src/core/fragment.js";

await runUnderMufoldFlags();

const { values } = parseArgs({ options: { records: { type: "string", default: "50000" }, batch: { type: "string", default: "500" }, runs: { type: "string", default: "3" } } });
const records = Number(values.records);
const settings = resolveSettings({});

interface Call {
  identity: string;
  version: number;
  watermarks: Map<string, bigint>;
  ops: PartOps;
}

// Every apply the engine plans, in order (each identity's calls in version order).
const calls: Call[] = [];
const models = new Map<string, IdentityModel>();
for (const batch of batchesOf(partitionedWorkload(records), Number(values.batch))) {
  for (const one of routeRecords(batch, { reducerVersion: settings.reducerVersion, maxValueBytes: settings.maxValueBytes }).identities) {
    let model = models.get(one.identity);
    if (model === undefined) models.set(one.identity, (model = new IdentityModel(one.identity, one.context)));
    const plan = model.plan(one.deliveries, { feed: true });
    calls.push({ identity: one.identity, version: model.version, watermarks: plan.watermarks, ops: plan.ops });
    model.committed(plan, model.version + 1);
  }
}

/** The previous release's arguments: four per op (opcode, key index, field, value). */
function v1Args(c: Call): (string | number)[] {
  const args: (string | number)[] = [String(c.version), c.watermarks.size];
  for (const [field, offset] of c.watermarks) args.push(field, offset.toString());
  // v1 has no offset index: its entries are left out.
  const { ops } = c;
  for (let i = 0; i < ops.length; i++) {
    const part = ops.part(i);
    if (part !== "x") args.push(ops.op(i), partIndex(part) + 1, ops.fields[i]!, fragmentText(ops.values[i]!));
  }
  return args;
}

const redis = new Redis(settings.redisUrl);
await ensureSetup(settings);
const serverCpuSeconds = () => redisCpuSeconds(redis);
const prefix = `mufold-bench-apply:${process.pid}`;
const layouts = {
  v1: (c: Call, generation: number) => {
    const keys = identityKeys(prefix, generation, c.identity);
    return redis.call("FCALL", "mufold_apply_v1", keys.length, ...keys, ...v1Args(c));
  },
  v2: (c: Call, generation: number) => new RedisIdentityStore(redis, prefix).apply(generation, c.identity, c.version, c.watermarks, c.ops),
};

console.log(`${calls.length} applies of ${records} records (batches of ${values.batch}); v1: ${(calls.reduce((a, c) => a + v1Args(c).length, 0) / records).toFixed(1)} arguments per record`);
console.log(`| run | layout | client CPU µs per record | Redis CPU µs per record | wall µs per record |`);
console.log(`|---|---|---|---|---|`);
let generation = 0;
for (let run = 1; run <= Number(values.runs); run++) {
  for (const [name, send] of Object.entries(layouts)) {
    const g = ++generation;
    const server0 = await serverCpuSeconds();
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls.length; i += 8) await Promise.all(calls.slice(i, i + 8).map((c) => send(c, g)));
    const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const serverUs = ((await serverCpuSeconds()) - server0) * 1e6;
    console.log(`| ${run} | ${name} | ${((cpu.user + cpu.system) / records).toFixed(1)} | ${(serverUs / records).toFixed(1)} | ${(wallUs / records).toFixed(1)} |`);
    const keys: string[] = [];
    let cursor = "0";
    do {
      const [next, batch] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== "0");
    for (let i = 0; i < keys.length; i += 1000) await redis.unlink(...keys.slice(i, i + 1000));
  }
}
await redis.quit();
