/**
 * The control contract against the memory store (the same suite runs against Redis:
 * test/integration/control-store.redis.int.spec.ts), plus what only an injected clock can show:
 * generation numbers taken from it and a lease's exact end.
 */
import { describe, expect, it } from "vitest";
import { MemoryControlStore } from "../../src/adapters/memory/control-store.js";
import { controlStoreContract } from "../support/control-store-contract.js";

/** A clock that moves only when told, in microseconds. */
class ManualClock {
  constructor(public micros: number) {}
  readonly now = (): number => this.micros;
  advanceMs(ms: number): void {
    this.micros += ms * 1000;
  }
}

const START = 1_700_000_000_000_000;

controlStoreContract("memory", async () => {
  const clock = new ManualClock(START);
  const store = new MemoryControlStore(clock.now);
  return {
    store,
    elapse: async (ms) => clock.advanceMs(ms),
    lose: async () => store.lose(),
    changes: (generation) => store.changes(generation),
  };
});

describe("MemoryControlStore with its clock", () => {
  it("given the clock at T, when a generation is made, then its number is T in microseconds; the next one past it is T + 1 while the clock stands", async () => {
    const clock = new ManualClock(START);
    const store = new MemoryControlStore(clock.now);
    expect((await store.initGeneration("v0")).generation).toBe(START);
    expect(await store.allocateGeneration("v0", "a", 1_000)).toBe(START + 1);
    clock.advanceMs(5);
    expect(await store.allocateGeneration("v0", "b", 1_000)).toBe(START + 5_000);
  });

  it("given a pause with a lease of 100 ms, when 99.999 ms have passed it holds, and at 100 ms it no longer does", async () => {
    const clock = new ManualClock(START);
    const store = new MemoryControlStore(clock.now);
    await store.pause(null, 100);
    clock.micros += 99_999;
    expect((await store.state()).paused).toBe(true);
    clock.micros += 1;
    expect((await store.state()).paused).toBe(false);
  });

  it("given a build lease of 100 ms, when 99 ms have passed it is building, and at 100 ms it is not", async () => {
    const clock = new ManualClock(START);
    const store = new MemoryControlStore(clock.now);
    const g = await store.allocateGeneration("v0", "a", 100);
    clock.advanceMs(99);
    expect(await store.buildingGenerations()).toEqual(new Set([g]));
    clock.advanceMs(1);
    expect(await store.buildingGenerations()).toEqual(new Set());
  });
});
