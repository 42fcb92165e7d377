/**
 * Change-feed digest cost, side by side in one run: the packet digest the fold
 * stores (sha256 streamed over the packet's chunks, never assembling it)
 * against assembling the packet and hashing the bytes, on one identity at
 * several sizes. Prints a markdown table of the median time per digest and the
 * ratio. (A timing, so not a test: it moved here from change-feed.int.spec.ts,
 * where it failed on a loaded machine.)
 *
 *   npx tsx bench/digest.bench.ts [--repeat 200]
 */
import { assembleParts } from "../src/core/packet-parts.js";
import { contextOfObservation, observationFingerprint } from "../src/core/index.js";
import { IdentityModel, assembledDigest, packetDigest } from "../src/fold/identity-model.js";
import { simulate } from "../producers/simulation.js";

const repeat = Number(process.argv[process.argv.indexOf("--repeat") + 1] || 200);
const sizes = [100, 300, 1_000];

const observations = [...simulate({ agents: 1, observationsPerAgent: Math.max(...sizes), snapshotEvery: 100_000, duplicateRate: 0.1, conflictRate: 0.03, memories: 8, seed: 35 })].map(
  (d) => d.observation,
);
const context = contextOfObservation(observations[0]!, "memory_utility_reducer_v0");

/** Median milliseconds per call, after a warm-up. */
function time(f: () => unknown): number {
  for (let i = 0; i < 20; i++) f();
  const samples: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = process.hrtime.bigint();
    f();
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;
}

const rows: string[] = [];
for (const size of sizes) {
  const plan = new IdentityModel("mur_bench", context).plan(
    observations.slice(0, size).map((o, i) => ({ observation: o, fingerprint: observationFingerprint(o), topic: "t", partition: 0, offset: BigInt(i) })),
  );
  if (packetDigest(plan.nextParts) !== assembledDigest(plan.nextParts)) throw new Error(`digests differ at ${size} deliveries`);
  const assembled = time(() => assembledDigest(plan.nextParts));
  const streamed = time(() => packetDigest(plan.nextParts));
  rows.push(`| ${size.toLocaleString("en-US")} | ${assembleParts(plan.nextParts).length.toLocaleString("en-US")} | ${assembled.toFixed(3)} | ${streamed.toFixed(3)} | ${(streamed / assembled).toFixed(2)} |`);
}
console.log("| deliveries | packet bytes | assemble + sha256 (ms) | streamed sha256 (ms) | streamed / assembled |");
console.log("|---|---|---|---|---|");
for (const r of rows) console.log(r);
