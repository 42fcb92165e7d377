/**
 * IdentityModel.plan for one new delivery on an identity already holding N
 * deliveries: pure, in process, no Kafka or Redis. This is the per-identity
 * step of the fold (src/fold/identity-applier.ts calls it once per identity
 * per batch): fold the delivery into the state, recompute the packet parts,
 * diff them against the stored parts and (change feed on, the default) digest
 * the packet. Each sample plans on a fresh model (built untimed) so every
 * sample sees exactly N prior deliveries; all models are built, and the heap
 * collected, before the first timed sample.
 *
 *   npx tsx bench/plan.bench.ts [--sizes 10,1000] [--samples 200]
 *
 * Imported by pipeline.bench.ts (measurePlan) for plan_us_per_delivery_n10/_n1000.
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

/** Median (and p90) microseconds of model.plan([one new delivery]) on a model holding `held` deliveries. */
export function measurePlan(held: number, samples: number, feed = true): PlanResult {
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
  // Every model is built before timing starts, and the heap is collected, so a sample does not pay for
  // collecting the (large, untimed) build of the samples before it.
  const models = Array.from({ length: samples }, fresh);
  collectGarbage();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const d = next[i % next.length]!;
    const t0 = process.hrtime.bigint();
    models[i]!.plan([d], { feed });
    times.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  return { held, samples, medianUs: times[Math.floor(times.length / 2)]!, p90Us: times[Math.floor(times.length * 0.9)]! };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { sizes: { type: "string", default: "10,1000" }, samples: { type: "string", default: "200" } } });
  console.log("| deliveries held | samples | plan median (µs) | plan p90 (µs) |");
  console.log("|---|---|---|---|");
  for (const n of String(values.sizes).split(",").map(Number)) {
    const r = measurePlan(n, Number(values.samples));
    console.log(`| ${r.held} | ${r.samples} | ${r.medianUs.toFixed(1)} | ${r.p90Us.toFixed(1)} |`);
  }
}
