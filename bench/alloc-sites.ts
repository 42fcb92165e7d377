/**
 * Where the young generation's bytes come from: V8's sampling heap profiler
 * (objects collected by scavenges and full collections included) over a
 * fold, each sampled allocation charged to the innermost frame of mufold's
 * own layers or of a package (kafkajs, ioredis), so Node's builtins count for
 * their caller. Prints bytes per record by layer, then the functions that
 * allocate most. heap-traffic.ts counts the same bytes without saying where;
 * sampling (every 4 KiB on average) gives each site's share within a few
 * percent of it.
 *
 *   npx tsx bench/alloc-sites.ts [--records 50000] [--engine] [--survivors] [--top 25]
 *
 * --inside NAME: also what the sites named NAME (a function of ours) allocate
 * through the frames below them that are not ours (V8's builtins and Node's
 * own: a Map's growth, a push, a hash's string), by that innermost frame.
 *
 * --callers NAME: what the sites named NAME allocate (the frames below them
 * included), by the two frames of ours that called them.
 *
 * --survivors: only what outlived the young generation (V8 drops the samples
 * of objects a scavenge freed): where the promoted bytes come from, the kept
 * state and whatever a batch holds across scavenges.
 *
 * Default: one in-process FoldWorker over a topic of the pipeline bench's
 * workload (needs KAFKA_BROKERS / REDIS_URL, as the pipeline bench). --engine:
 * decide + plan into memory only, as bench/engine.bench.ts (no services).
 */
import { Session } from "node:inspector/promises";
import { parseArgs } from "node:util";
import { routeRecords } from "../src/fold/batch-router.js";
import { IdentityModel } from "../src/fold/identity-model.js";
import { runUnderMufoldFlags } from "./mufold-flags.js";
import { batchesOf, partitionedWorkload, workload } from "./partitioned-workload.js";

await runUnderMufoldFlags();

const { values } = parseArgs({
  options: {
    records: { type: "string", default: "50000" },
    engine: { type: "boolean", default: false },
    survivors: { type: "boolean", default: false },
    top: { type: "string", default: "25" },
    inside: { type: "string" },
    callers: { type: "string" },
  },
});
const records = Number(values.records);

interface ProfileNode {
  callFrame: { functionName: string; url: string };
  selfSize: number;
  children: ProfileNode[];
}

/** The layer a frame's script belongs to; null for Node's own and V8's (charged to the caller). */
function layerOf(url: string): string | null {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg !== null) return pkg[1]!;
  const own = /\/(src\/[a-z]+(?:\/[a-z]+)?|consumers|producers|bench|test)\//.exec(url);
  if (own === null) return null;
  return own[1]!.startsWith("src/adapters/") || own[1] === "src/core" || own[1] === "src/fold" ? own[1]! : own[1]!.split("/")[0]!;
}

/** Sampled bytes by layer and by function (`name (file)`), each charged to its innermost frame with a layer. */
function attribute(head: ProfileNode): { layers: Map<string, number>; sites: Map<string, number> } {
  const layers = new Map<string, number>();
  const sites = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
  const walk = (node: ProfileNode, owner: { layer: string; site: string } | null): void => {
    const layer = layerOf(node.callFrame.url);
    const here = layer === null ? owner : { layer, site: `${node.callFrame.functionName || "(anonymous)"} (${node.callFrame.url.split("/").slice(-2).join("/")})` };
    if (node.selfSize > 0) {
      add(layers, here?.layer ?? "node", node.selfSize);
      add(sites, here === null ? "(no caller of ours)" : `${here.layer}: ${here.site}`, node.selfSize);
    }
    for (const child of node.children) walk(child, here);
  };
  walk(head, null);
  return { layers, sites };
}

/** What frames of ours named `name` allocate, by the innermost frame (ours or not) that allocated it; "(itself)" for their own code. */
function insideOf(head: ProfileNode, name: string): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (node: ProfileNode, within: boolean): void => {
    const own = layerOf(node.callFrame.url) !== null;
    const here = own ? node.callFrame.functionName === name : within;
    if (here && node.selfSize > 0) {
      const site = own && node.callFrame.functionName === name ? "(itself)" : `${node.callFrame.functionName || "(anonymous)"} (${node.callFrame.url.split("/").slice(-1)[0] || "V8"})`;
      out.set(site, (out.get(site) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, here);
  };
  walk(head, false);
  return out;
}

/** What frames of ours named `name` allocate (with the frames below), by the two frames of ours above them. */
function callersOf(head: ProfileNode, name: string): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (node: ProfileNode, ours: string[], charged: string | null): void => {
    const own = layerOf(node.callFrame.url) !== null;
    const fn = node.callFrame.functionName || "(anonymous)";
    const chain = own ? [...ours, fn] : ours;
    const site = charged ?? (own && fn === name ? chain.slice(-3, -1).join(" > ") || "(top)" : null);
    if (site !== null && node.selfSize > 0) out.set(site, (out.get(site) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child, chain, site);
  };
  walk(head, [], null);
  return out;
}

async function sampled(run: () => Promise<void>): Promise<ProfileNode> {
  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.enable");
  // The two include flags keep samples of objects that died: without them only what is alive at the end is counted.
  const minor = !values.survivors;
  await session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMinorGC: minor, includeObjectsCollectedByMajorGC: true } as never);
  await run();
  const { profile } = await session.post("HeapProfiler.stopSampling");
  session.disconnect();
  return profile.head as unknown as ProfileNode;
}

function engineFold(batches: ReturnType<typeof batchesOf>): void {
  const models = new Map<string, IdentityModel>();
  for (const batch of batches) {
    for (const one of routeRecords(batch, { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 65536 }).identities) {
      let model = models.get(one.identity);
      if (model === undefined) models.set(one.identity, (model = new IdentityModel(one.identity, one.context)));
      model.committed(model.plan(one.deliveries, { feed: true }), model.version + 1);
    }
  }
}

let head: ProfileNode;
if (values.engine) {
  const batches = batchesOf(partitionedWorkload(records), 500, "partition");
  engineFold(batches); // once unmeasured: the measured run is compiled code, as a worker's is after its first minutes
  head = await sampled(async () => engineFold(batches));
} else {
  const { ensureSetup } = await import("../src/adapters/redis/functions.js");
  const { FoldWorker } = await import("../consumers/fold/fold-worker.js");
  const { openSender } = await import("../producers/produce.js");
  const { dropPrefix, quietLog, testSettings, waitCaughtUp } = await import("../test/support/pipeline.js");
  await ensureSetup(testSettings());
  const settings = { ...testSettings(), partitions: 12 };
  const messages = workload(records, 500, 50, 1); // the pipeline bench's fold step
  const sender = await openSender(settings);
  await sender.send(messages);
  await sender.close();
  let stop = async () => {};
  head = await sampled(async () => {
    const worker = await FoldWorker.start({ ...settings, warmUpRecords: 0 }, quietLog);
    stop = () => worker.stop();
    await waitCaughtUp(settings, 1_800_000); // its admin's polls are in the count too (layer kafkajs, a few %)
  });
  await stop();
  await dropPrefix(settings);
}

const { layers, sites } = attribute(head);
const inside = values.inside === undefined ? null : insideOf(head, values.inside);
const callers = values.callers === undefined ? null : callersOf(head, values.callers);
const per = (n: number) => Math.round(n / records).toLocaleString("en-US");
let total = 0;
for (const n of layers.values()) total += n;
const what = values.survivors ? "bytes sampled a record that outlived the young generation" : "bytes sampled a record";
console.log(`${values.engine ? "engine (decide + plan)" : "in-process fold worker"}, ${records} records: ${per(total)} ${what}\n`);
console.log("| layer | bytes a record |\n|---|---|");
for (const [layer, n] of [...layers].sort((a, b) => b[1] - a[1])) console.log(`| ${layer} | ${per(n)} |`);
console.log("\n| site (innermost frame of a layer) | bytes a record |\n|---|---|");
for (const [site, n] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) console.log(`| ${site} | ${per(n)} |`);
if (inside !== null) {
  console.log(`\n| inside ${values.inside}: the allocating frame | bytes a record |\n|---|---|`);
  for (const [site, n] of [...inside].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) console.log(`| ${site} | ${per(n)} |`);
}
if (callers !== null) {
  console.log(`\n| ${values.callers}, called by | bytes a record |\n|---|---|`);
  for (const [site, n] of [...callers].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) console.log(`| ${site} | ${per(n)} |`);
}
process.exit(0);
