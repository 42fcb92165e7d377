import { MemoryIdentityStore } from "../../src/adapters/memory/identity-store.js";
import { identityStoreContract } from "../support/identity-store-contract.js";

// The same contract as the Redis store (test/integration/identity-store.redis.int.spec.ts).
identityStoreContract(
  "memory",
  () => new MemoryIdentityStore(),
  (store) => {
    const memory = store as MemoryIdentityStore;
    return {
      live: async () => {
        memory.setLive(7);
        return 7;
      },
      seal: async (generation, partition, next) => memory.markFolded(generation, partition, next),
    };
  },
);
