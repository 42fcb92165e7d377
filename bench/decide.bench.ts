/**
 * decideRecord alone: the per-record decision of the live fold (parse the
 * value in Python's JSON semantics, validate, fingerprint), over simulated
 * producer records. Prints µs per record and records per second for the
 * records as producers write them (canonical JSON), for the same observations
 * pretty-printed (the reader's plain tier), and with one escaped
 * character per value (which only the exact slow path reads).
 *
 *   npx tsx bench/decide.bench.ts [--records N] [--seconds S]
 */
import { decideRecord, type RecordInput } from "../src/fold/record-decision.js";
import { observationRecord } from "../src/client/producer.js";
import { simulate } from "../producers/simulation.js";

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const count = arg("--records", 2000);
const seconds = arg("--seconds", 2);
const OPTIONS = { reducerVersion: "memory_utility_reducer_v0", maxValueBytes: 1 << 20 };

const observations = [...simulate({ agents: 4, observationsPerAgent: Math.ceil(count / 4), snapshotEvery: 1e9, duplicateRate: 0.1, conflictRate: 0.01, memories: 6, seed: 3 })]
  .map((d) => d.observation)
  .slice(0, count);

function records(value: (canonical: string) => string): RecordInput[] {
  return observations.map((obs) => {
    const m = observationRecord(obs);
    return { key: Buffer.from(String(m.key)), value: Buffer.from(value(String(m.value))), headers: m.headers };
  });
}

const variants: [string, RecordInput[]][] = [
  ["canonical (as producers write)", records((text) => text)],
  ["pretty-printed", records((text) => JSON.stringify(JSON.parse(text), null, 2))],
  ["one escape (slow path)", records((text) => text.replace('"evaluator_ref":"e', '"evaluator_ref":"\\u0065'))],
];

// Every variant must decide every record as the canonical text does.
const expected = variants[0]![1].map((r) => decideRecord(r, OPTIONS));
for (const [name, input] of variants) {
  input.forEach((r, i) => {
    const d = decideRecord(r, OPTIONS);
    const e = expected[i]!;
    if (d.kind !== "accept" || e.kind !== "accept" || d.fingerprint !== e.fingerprint) throw new Error(`${name}: record ${i} is decided differently`);
  });
}

function run(input: RecordInput[]): number {
  let accepted = 0;
  for (const r of input) if (decideRecord(r, OPTIONS).kind === "accept") accepted++;
  return accepted;
}

console.log(`| records (${observations.length} observations, ~${Math.round(variants[0]![1].reduce((n, r) => n + r.value!.length, 0) / count)} bytes each) | µs/record | records/s |`);
console.log("|---|---|---|");
for (const [name, input] of variants) {
  for (let i = 0; i < 5; i++) run(input); // warm up the JIT
  // The median pass of those run within the time budget: robust to a busy machine.
  const passes: number[] = [];
  const start = process.hrtime.bigint();
  do {
    const t0 = process.hrtime.bigint();
    if (run(input) !== input.length) throw new Error(`${name}: a record was rejected`);
    passes.push(Number(process.hrtime.bigint() - t0) / 1e9 / input.length);
  } while (Number(process.hrtime.bigint() - start) / 1e9 < seconds);
  const perRecord = passes.sort((a, b) => a - b)[passes.length >> 1]!;
  console.log(`| ${name} | ${(perRecord * 1e6).toFixed(2)} | ${Math.round(1 / perRecord)} |`);
}
