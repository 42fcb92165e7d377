/**
 * As-of reads against the reference: one identity's deliveries (retries with earlier created_at, conflicts)
 * folded through the model into the memory store, then at random points (positions and times) the packet
 * rebuilt from the offset index byte-equals what loopx 2.1.1 answers for the deliveries up to that point,
 * chosen here by the test's own filter.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalJson, observationToPy } from "../../src/core/index.js";
import type { ReducerContext } from "../../src/core/identity.js";
import { packetAsOf } from "../../src/fold/offset-index.js";
import { Prng } from "../../producers/simulation.js";
import { depthRuns } from "../support/depth.js";
import { fold, history, workload, type Placed } from "../support/indexed-identity.js";
import { ReferenceOracle } from "../support/reference.js";

let oracle: ReferenceOracle;
beforeAll(async () => {
  oracle = await ReferenceOracle.start();
});
afterAll(async () => {
  await oracle?.close();
});

/** loopx's packet for the chosen deliveries (its request: the observations and the identity's context). */
async function reference(context: ReducerContext, chosen: readonly Placed[]): Promise<string> {
  const request =
    `{"observations":[${chosen.map((p) => canonicalJson(observationToPy(p.observation))).join(",")}],` +
    `"scope":${canonicalJson({ ...context.scope })},"retrieval_snapshot_ref":${JSON.stringify(context.retrieval_snapshot_ref)},` +
    `"policy_snapshot_ref":${JSON.stringify(context.policy_snapshot_ref)},"reducer_version":${JSON.stringify(context.reducer_version)}}`;
  const answer = await oracle.project(request);
  expect(answer.crash).toBeUndefined();
  return answer.stdout!;
}

describe("as-of reads against loopx 2.1.1", () => {
  it("positions and times: the packet from the index is loopx's over the deliveries up to the point", async () => {
    const points = depthRuns(40, 12);
    for (const seed of [361, 362]) {
      const rng = new Prng(seed);
      const placed = workload(seed, 140);
      const { store, identity, context } = await fold(placed, rng);
      const stored = await history(store, identity, context);
      for (let i = 0; i < points; i++) {
        const at = rng.pick(placed);
        const other = 1 - at.partition;
        const positions = [
          { partition: at.partition, offset: at.offset },
          { partition: other, offset: rng.pick(placed.filter((p) => p.partition === other)).offset },
        ];
        const byPosition = placed.filter((p) => positions.some((q) => q.partition === p.partition && p.offset <= q.offset));
        expect(packetAsOf(stored, { points: positions })?.packet, `${identity} at ${positions.map((q) => `${q.partition}:${q.offset}`).join(",")}`).toBe(
          await reference(context, byPosition),
        );
        const time = Number(at.timestamp);
        const byTime = placed.filter((p) => Number(p.timestamp) <= time);
        expect(packetAsOf(stored, { time })?.packet, `${identity} at ${time}`).toBe(await reference(context, byTime));
      }
    }
  });
});
