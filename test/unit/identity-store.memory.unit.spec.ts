import { MemoryControlStore } from "../../src/adapters/memory/control-store.js";
import { MemoryIdentityStore } from "../../src/adapters/memory/identity-store.js";
import { identityStoreContract } from "../support/identity-store-contract.js";
import type { IdentityStore } from "../../src/fold/identity-store.js";

// The same contract as the Redis store (test/integration/identity-store.redis.int.spec.ts). The position guard
// reads a memory control store, as mufold_apply_v3 reads the control hash.
const controls = new WeakMap<IdentityStore, MemoryControlStore>();

identityStoreContract(
  "memory",
  () => {
    const control = new MemoryControlStore(() => 1_700_000_000_000_000);
    const store = new MemoryIdentityStore(control);
    controls.set(store, control);
    return store;
  },
  (store) => {
    const control = controls.get(store)!;
    return {
      live: async () => (await control.initGeneration("memory_utility_reducer_v0")).generation,
      seal: (generation, partition, next) => control.seal(generation, "live", new Map([[partition, next]])),
    };
  },
);
