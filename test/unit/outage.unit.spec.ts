import { describe, expect, it } from "vitest";
import { OutageClock, OutageExceededError } from "../../consumers/fold/outage.js";
import { originFingerprint } from "../../consumers/fold/partition-guard.js";

describe("OutageClock", () => {
  it("holds an outage until the tolerance, then fails with one clear error", () => {
    let now = 1_000;
    const clock = new OutageClock(30, () => now);
    clock.failed("redis", new Error("ECONNREFUSED"));
    now += 30_000;
    clock.failed("redis", new Error("ECONNREFUSED")); // exactly the tolerance: still held
    expect(clock.ongoing()).toEqual({ redis: 30 });
    now += 1;
    expect(() => clock.failed("redis", new Error("ECONNREFUSED"))).toThrow(OutageExceededError);
    expect(() => clock.failed("redis", new Error("x"))).toThrow(/redis unreachable for more than 30s/);
  });

  it("a recovery ends the outage and starts the next one from zero", () => {
    let now = 0;
    const clock = new OutageClock(10, () => now);
    clock.failed("kafka", new Error("down"));
    now = 9_000;
    expect(clock.recovered("kafka")).toBe(9_000);
    expect(clock.ongoing()).toEqual({});
    now = 15_000;
    clock.failed("kafka", new Error("down again")); // 15 s after the first failure, but a new outage
    now = 24_000;
    expect(() => clock.failed("kafka", new Error("down"))).not.toThrow();
    expect(clock.recovered("redis")).toBe(0);
  });
});

describe("originFingerprint", () => {
  const record = { topic: "t", partition: 0, offset: "0", key: Buffer.from("k"), value: Buffer.from("v"), headers: { a: Buffer.from("1") }, timestamp: "1700000000000" };
  it("changes with the timestamp, key, value or headers, and with nothing else", () => {
    const base = originFingerprint(record);
    expect(originFingerprint({ ...record, topic: "other", partition: 3 })).toBe(base);
    expect(originFingerprint({ ...record, timestamp: "1700000000001" })).not.toBe(base);
    expect(originFingerprint({ ...record, key: Buffer.from("K") })).not.toBe(base);
    expect(originFingerprint({ ...record, value: Buffer.from("w") })).not.toBe(base);
    expect(originFingerprint({ ...record, headers: { a: Buffer.from("2") } })).not.toBe(base);
    // Framed by length: moving a byte from the key to the value is another record.
    expect(originFingerprint({ ...record, key: Buffer.from("kv"), value: Buffer.from("") })).not.toBe(originFingerprint({ ...record, key: Buffer.from("k"), value: Buffer.from("v") }));
    expect(originFingerprint({ ...record, key: null })).not.toBe(originFingerprint({ ...record, key: Buffer.from("") }));
    expect(base).toMatch(/^[0-9a-f]{64}$/);
  });
});
