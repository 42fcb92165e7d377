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
 * --shapes: also where the first two shapes' bytes are, from two heap snapshots
 * (before and after it folds): per accepted observation, by kind of object
 * (its own properties name it) and by kind of string; the breakdown a smaller
 * kept state starts from.
 *
 *   npx tsx bench/model-memory.bench.ts [--one 10000] [--identities 1000] [--per-identity 50] [--large 20] [--shapes]
 */
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { writeHeapSnapshot } from "node:v8";
import type { IdentityModel } from "../src/fold/identity-model.js";
import { foldIntoModels, heapUsed } from "../test/support/model-heap.js";
import { observationRecord } from "../src/client/producer.js";
import { simulate } from "../producers/simulation.js";
import { runUnderMufoldFlags } from "./mufold-flags.js";

await runUnderMufoldFlags();

const { values } = parseArgs({
  options: { one: { type: "string", default: "10000" }, identities: { type: "string", default: "1000" }, "per-identity": { type: "string", default: "50" }, large: { type: "string", default: "20" }, shapes: { type: "boolean", default: false } },
});

/** `records` of the workload as the fold consumes them; they die with the caller's frame. */
function foldInto(models: Map<string, IdentityModel>, records: number, agents: number, snapshotEvery: number): void {
  const messages = [...simulate({ agents, observationsPerAgent: Math.ceil(records / agents), snapshotEvery, duplicateRate: 0.1, conflictRate: 0.01, seed: 5 })]
    .slice(0, records)
    .map((d) => observationRecord(d.observation));
  foldIntoModels(models, messages.map((m, i) => ({ topic: "t", partition: 0, offset: String(i), key: Buffer.from(m.key as string), value: Buffer.from(m.value as string), headers: {} })));
}

function measure(records: number, agents: number, snapshotEvery: number, shapes = false): { models: number; accepted: number; perModel: number; perAccepted: number; estimate: number; shapes: Map<string, Kind> | null } {
  const models = new Map<string, IdentityModel>();
  const first = shapes ? snapshotKinds() : null;
  const before = heapUsed();
  foldInto(models, records, agents, snapshotEvery);
  const held = heapUsed() - before;
  const grown = first === null ? null : difference(snapshotKinds(), first);
  let accepted = 0;
  let estimated = 0;
  for (const m of models.values()) {
    accepted += m.parts.accepted;
    estimated += m.heapEstimate();
  }
  return { models: models.size, accepted, perModel: Math.round(held / models.size), perAccepted: Math.round(held / accepted), estimate: Math.round(estimated / models.size), shapes: grown };
}

/** Bytes and count of one kind of heap object. */
interface Kind {
  bytes: number;
  count: number;
}

/**
 * The heap now, by kind: an object or array by its own property names (the
 * first eight), a string by its length (ids of the contract are 68 characters).
 */
function snapshotKinds(): Map<string, Kind> {
  heapUsed();
  const file = join(tmpdir(), `mufold-model-memory-${process.pid}.heapsnapshot`);
  writeHeapSnapshot(file);
  const s = JSON.parse(readFileSync(file, "utf8")) as HeapSnapshot;
  rmSync(file);
  const { node_fields: nf, node_types: nt, edge_fields: ef, edge_types: et } = s.snapshot.meta;
  const types = nt[0] as string[];
  const edgeTypes = et[0] as string[];
  const [ti, ni, si, ci] = ["type", "name", "self_size", "edge_count"].map((f) => nf.indexOf(f));
  const [eti, eni] = ["type", "name_or_index"].map((f) => ef.indexOf(f));
  const kinds = new Map<string, Kind>();
  let e = 0;
  for (let i = 0; i < s.nodes.length; i += nf.length) {
    const type = types[s.nodes[i + ti!]!]!;
    const edges = s.nodes[i + ci!]!;
    let kind: string | null = null;
    if (type === "object" || type === "array") {
      const props = new Set<string>();
      for (let j = 0; j < edges; j++) {
        const at = e + j * ef.length;
        const edgeType = edgeTypes[s.edges[at + eti!]!];
        if (edgeType === "property") props.add(s.strings[s.edges[at + eni!]!]!);
        else if (edgeType === "element") props.add("#");
      }
      props.delete("__proto__");
      const name = s.strings[s.nodes[i + ni!]!] || "(unnamed: the tables of Maps and Sets)";
      kind = `${type} ${name}${props.size > 0 ? ` {${[...props].slice(0, 8).join(",")}}` : ""}`;
    } else if (type.endsWith("string")) {
      const length = s.strings[s.nodes[i + ni!]!]!.length;
      kind = `${type} of ${length <= 16 ? "≤16" : length <= 40 ? "17–40" : length <= 70 ? "41–70" : length <= 140 ? "71–140" : "141+"} characters`;
    }
    e += edges * ef.length;
    if (kind === null) continue;
    const k = kinds.get(kind) ?? { bytes: 0, count: 0 };
    k.bytes += s.nodes[i + si!]!;
    k.count++;
    kinds.set(kind, k);
  }
  return kinds;
}

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: unknown[]; edge_fields: string[]; edge_types: unknown[] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

function difference(after: Map<string, Kind>, before: Map<string, Kind>): Map<string, Kind> {
  const grown = new Map<string, Kind>();
  for (const [kind, a] of after) {
    const b = before.get(kind) ?? { bytes: 0, count: 0 };
    if (a.bytes > b.bytes) grown.set(kind, { bytes: a.bytes - b.bytes, count: a.count - b.count });
  }
  return grown;
}

const one = Number(values.one);
const identities = Number(values.identities);
const perIdentity = Number(values["per-identity"]);
const large = Number(values.large);
console.log("| workload | models | accepted observations | bytes per model | bytes per accepted observation | estimated bytes per model (the cache's count) |");
console.log("|---|---|---|---|---|---|");
const results = [
  [`${one} identities, one delivery each`, measure(one, one, 1, values.shapes)],
  [`${identities} identities, ${perIdentity} deliveries each`, measure(identities * perIdentity, identities, perIdentity, values.shapes)],
  [`${large} identities, 1,000 deliveries each`, measure(large * 1000, large, 1000)],
] as const;
for (const [label, r] of results) {
  console.log(`| ${label} | ${r.models} | ${r.accepted} | ${r.perModel} | ${r.perAccepted} | ${r.estimate} |`);
}
for (const [label, shaped] of results) {
  if (shaped.shapes === null) continue;
  const rows = [...shaped.shapes].sort((a, b) => b[1].bytes - a[1].bytes);
  const total = rows.reduce((n, [, k]) => n + k.bytes, 0);
  console.log(`\nWhere the models of ${label} are, per accepted observation (snapshot after minus before: ${Math.round(total / shaped.accepted)} bytes each, ${Math.round(total / shaped.models)} a model):\n`);
  console.log("| kind | bytes per accepted observation | count per accepted observation |");
  console.log("|---|---|---|");
  for (const [kind, k] of rows.slice(0, 20)) console.log(`| ${kind.replace(/\|/g, "\\|")} | ${(k.bytes / shaped.accepted).toFixed(1)} | ${(k.count / shaped.accepted).toFixed(2)} |`);
}
