/**
 * The stored delivery records and history entries read back into identity
 * state (src/fold/delivery-record.ts): the round trip rebuilds the same parts,
 * and a fingerprint that is not its observation's is refused — history entries
 * are written without escaping, so only fingerprints mufold computed may go
 * back into one.
 */
import { describe, expect, it } from "vitest";
import { simulate } from "../../producers/simulation.js";
import { contextOfObservation } from "../../src/core/identity.js";
import { IdentityParts } from "../../src/core/identity-parts.js";
import { normalizedFingerprint } from "../../src/core/observation.js";
import { decodeStoredState } from "../../src/fold/delivery-record.js";
import { IdentityModel } from "../../src/fold/identity-model.js";
import { fragmentText } from "../../src/core/fragment.js";

function storedIdentity() {
  const observations = [...simulate({ agents: 1, observationsPerAgent: 80, snapshotEvery: 1e9, duplicateRate: 0.2, conflictRate: 0.1, memories: 4, seed: 3 })].map((d) => d.observation);
  const context = contextOfObservation(observations[0]!, "memory_utility_reducer_v0");
  const model = new IdentityModel("mur_x", context);
  const records = new Map<string, string>();
  const history = new Map<string, string>();
  const plan = model.plan(observations.map((observation, i) => ({ observation, fingerprint: normalizedFingerprint(observation), topic: "t", partition: 0, offset: BigInt(i) })));
  for (const op of plan.ops) {
    if (op.op === "HSET" && op.part === "d") records.set(op.field, fragmentText(op.value));
    if (op.op === "HSET" && op.part === "h") history.set(op.field, fragmentText(op.value));
    if (op.op === "HDEL" && op.part === "h") history.delete(op.field);
  }
  return { model, context, records, history };
}

describe("stored delivery records and history entries", () => {
  it("read back into the state that wrote them (conflicts, duplicates and all)", () => {
    const { model, context, records, history } = storedIdentity();
    expect([...records.values()].some((r) => r.startsWith("["))).toBe(true); // a conflicting id's full record is there
    expect([...records.values()].some((r) => /^\d+$/.test(r))).toBe(true); // and a duplicate's count
    const meta = { v: "1", n: String(model.parts.deliveries) };
    const again = IdentityModel.fromStored("mur_x", context, meta, records, history);
    expect(again.parts.skeleton).toBe(model.parts.skeleton);
    expect(again.digest()).toBe(model.digest());
    // The loaded model keeps no fragments (the store has them); rebuilt from the same records, they are the stored bytes.
    expect([...again.parts.history.values()].every((h) => h.fragment === "")).toBe(true);
    const rebuilt = new IdentityParts(context);
    rebuilt.load(decodeStoredState(records, history, context), model.parts.deliveries);
    rebuilt.flush();
    expect(new Map([...rebuilt.parts.history].map(([id, h]) => [id, fragmentText(h.fragment)]))).toEqual(history);
  });

  it("refuses a history entry whose fingerprint is not its observation's", () => {
    const { context, records, history } = storedIdentity();
    const [id, fragment] = [...history][0]!;
    const fingerprint = /muof_[0-9a-f]{64}/.exec(fragment)![0];
    const other = `muof_${"0".repeat(64)}`;
    expect(() => decodeStoredState(records, new Map([[id, fragment.replace(fingerprint, other)]]), context)).toThrow(/fingerprint is not its observation's/);
    expect(() => decodeStoredState(records, new Map([[id, fragment.replace(fingerprint, 'x\\"y')]]), context)).toThrow(/fingerprint is not its observation's/);
    expect(decodeStoredState(records, new Map([[id, fragment]]), context).get(id)![0]!.fingerprint).toBe(fingerprint);
  });

  it("refuses a delivery record whose fingerprint or count is wrong", () => {
    const { context, records, history } = storedIdentity();
    const [id, record] = [...records].find(([, r]) => r.startsWith("["))!;
    const fingerprint = /muof_[0-9a-f]{64}/.exec(record)![0];
    expect(() => decodeStoredState(new Map([[id, record.replace(fingerprint, `muof_${"f".repeat(64)}`)]]), history, context)).toThrow(/fingerprint is not its observation's/);
    expect(() => decodeStoredState(new Map([[id, record.replace(/^\[\["(muof_[0-9a-f]{64})",\d+,/, '[["$1",0,')]]), history, context)).toThrow(/count is not a positive integer/);
  });
});
