/**
 * A fragment goes back to FRAGMENTS (byte-lender.ts) only when nothing holds it: a plan's ops hold every fragment
 * its flush made until the model is committed or dropped, so one taken back after that flush stays lent.
 * (Its own file: the counts below start from this file's FRAGMENTS, nothing else lent.)
 */
import { describe, expect, it } from "vitest";
import { simulate } from "../../producers/simulation.js";
import { FRAGMENTS, fragmentText } from "../../src/core/fragment.js";
import { contextOfObservation } from "../../src/core/identity.js";
import { IdentityParts } from "../../src/core/identity-parts.js";
import { observationFingerprint, type Observation } from "../../src/core/observation.js";

const one = [...simulate({ agents: 1, observationsPerAgent: 1, snapshotEvery: 1e9, duplicateRate: 0, conflictRate: 0, seed: 7 })][0]!.observation;
/** The same payload stamped a second earlier: it represents the id once folded. */
const earlier: Observation = { ...one, created_at: new Date(Date.parse(one.created_at) - 1000).toISOString().replace(".000Z", "Z") };
const fingerprint = observationFingerprint(one);
const partsOf = () => new IdentityParts(contextOfObservation(one, "memory_utility_reducer_v0"));

describe("a history fragment taken back (an earlier delivery of its observation)", () => {
  it("before any flush: it was never written, so it goes back, and the new entry's is lent", () => {
    const inc = partsOf();
    const before = FRAGMENTS.out;
    inc.fold(one, fingerprint);
    expect(FRAGMENTS.out).toBe(before + 1);
    inc.fold(earlier, fingerprint);
    expect(FRAGMENTS.out).toBe(before + 1);
  });

  it("after a flush whose plan did not land: the plan's ops may still hold it, so it stays lent and unchanged", () => {
    const inc = partsOf();
    inc.fold(one, fingerprint);
    const held = inc.flush().history[0]!.after!.fragment; // not released: as a plan whose apply failed
    expect(typeof held).not.toBe("string");
    const text = fragmentText(held);
    const before = FRAGMENTS.out;
    inc.fold(earlier, fingerprint);
    expect(FRAGMENTS.out).toBe(before + 1); // the new entry's; the held one not given back
    inc.release(inc.flush());
    for (let i = 0; i < 50; i++) {
      inc.fold({ ...one, observation_id: `muo_${String(i).padStart(64, "0")}` }, fingerprint);
      inc.release(inc.flush());
    }
    expect(fragmentText(held)).toBe(text);
  });
});
