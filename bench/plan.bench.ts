/**
 * IdentityModel.plan for one new delivery on an identity already holding N
 * deliveries: pure, in process, no Kafka or Redis. This is the per-identity
 * step of the fold (src/fold/identity-applier.ts calls it once per identity
 * per batch): fold the delivery into the state, recompute the packet parts,
 * diff them against the stored parts and (change feed on, the default) digest
 * the packet. Each sample plans on a fresh model (built untimed) so every
 * sample sees exactly N prior deliveries; a round's models are all built, and
 * the heap collected, before its first timed sample.
 *
 * The sizes are measured side by side: the samples are taken in rounds, each
 * round timing every size (in turns that alternate from round to round), and
 * each size's median is over all its rounds. A ratio of two sizes then
 * compares them over the same stretch of the run: medians of unchanged code
 * taken one after the other move a lot from run to run on this machine.
 *
 *   npx tsx bench/plan.bench.ts [--sizes 10,1000] [--samples 200] [--rounds 5]
 *
 * Imported by pipeline.bench.ts (measurePlans) for plan_us_per_delivery_n10/_n1000.
 */
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { fileURLToPath } from "node:url";
import { contextOfObservation, reducerIdentity } from "../src/core/identity.js";
import { observationFingerprint } from "../src/core/observation.js";
import { IdentityModel, type Delivery } from "../src/fold/identity-model.js";
import { simulate } from "../producers/simulation.js";

const REDUCER_VERSION = "memory_utility_reducer_v0";

/** A full collection, when the runtime lets us ask for one (V8's gc, exposed at run time). */
function collectGarbage(): void {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as (() => void) | undefined;
  gc?.();
}

export interface PlanResult {
  /** Deliveries the identity holds before the timed plan. */
  held: number;
  samples: number;
  medianUs: number;
  p90Us: number;
}

function deliveriesFor(held: number, extra: number, seed: number): { prior: Delivery[]; next: Delivery[] } {
  // One agent, one snapshot: every observation routes to the same identity (as core.bench.ts builds it).
  const all = [...simulate({ agents: 1, observationsPerAgent: held + extra * 2 + 50, snapshotEvery: 1e9, duplicateRate: 0.1, conflictRate: 0.01, memories: 6, seed })];
  const toDelivery = (i: number): Delivery => ({ observation: all[i]!.observation, fingerprint: observationFingerprint(all[i]!.observation), topic: "bench", partition: 0, offset: BigInt(i) });
  const prior = Array.from({ length: held }, (_, i) => toDelivery(i));
  // The timed delivery: a new observation (not a retry or changed judgment of one already held).
  const next: Delivery[] = [];
  for (let i = held; i < all.length && next.length < extra; i++) if (all[i]!.kind === "original") next.push(toDelivery(i));
  return { prior, next };
}

/** One size's deliveries and a maker of fresh models holding them. */
function planSubject(held: number, samples: number, feed: boolean): { fresh: () => IdentityModel; next: Delivery[] } {
  const { prior, next } = deliveriesFor(held, Math.min(samples, 50), 7);
  const context = contextOfObservation(prior[0]!.observation, REDUCER_VERSION);
  const identity = reducerIdentity(context);
  const fresh = (): IdentityModel => {
    const model = new IdentityModel(identity, context);
    const plan = model.plan(prior, { feed });
    model.committed(plan, 1);
    return model;
  };
  // Warm up the JIT on this shape.
  for (let i = 0; i < 5; i++) fresh().plan([next[i % next.length]!], { feed });
  return { fresh, next };
}

/**
 * Median (and p90) microseconds of model.plan([one new delivery]) on a model holding each of `sizes` deliveries:
 * `samples` per size, taken in `rounds` rounds that each time every size (see the header).
 */
export function measurePlans(sizes: readonly number[], samples: number, rounds = 5, feed = true): PlanResult[] {
  const subjects = sizes.map((held) => planSubject(held, samples, feed));
  const times: number[][] = sizes.map(() => []);
  for (let round = 0; round < rounds; round++) {
    const perRound = Math.floor(samples / rounds) + (round < samples % rounds ? 1 : 0);
    for (let turn = 0; turn < sizes.length; turn++) {
      const s = round % 2 === 0 ? turn : sizes.length - 1 - turn;
      const { fresh, next } = subjects[s]!;
      // The round's models are built before its timing starts, and the heap is collected, so a sample does not
      // pay for collecting the (large, untimed) build of the samples before it.
      const models = Array.from({ length: perRound }, fresh);
      collectGarbage();
      for (let i = 0; i < perRound; i++) {
        const d = next[(times[s]!.length + i) % next.length]!;
        const t0 = process.hrtime.bigint();
        models[i]!.plan([d], { feed });
        times[s]!.push(Number(process.hrtime.bigint() - t0) / 1000);
      }
    }
  }
  return sizes.map((held, s) => {
    const sorted = times[s]!.sort((a, b) => a - b);
    return { held, samples: sorted.length, medianUs: sorted[Math.floor(sorted.length / 2)]!, p90Us: sorted[Math.floor(sorted.length * 0.9)]! };
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { sizes: { type: "string", default: "10,1000" }, samples: { type: "string", default: "200" }, rounds: { type: "string", default: "5" } } });
  console.log("| deliveries held | samples | plan median (µs) | plan p90 (µs) |");
  console.log("|---|---|---|---|");
  for (const r of measurePlans(String(values.sizes).split(",").map(Number), Number(values.samples), Number(values.rounds))) {
    console.log(`| ${r.held} | ${r.samples} | ${r.medianUs.toFixed(1)} | ${r.p90Us.toFixed(1)} |`);
  }
}
