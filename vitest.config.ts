import { defineConfig } from "vitest/config";

// Three tiers, by file suffix:
//   *.unit.spec.ts  pure core, no services
//   *.ref.spec.ts   differential against the Python reference (loopx from PyPI)
//   *.int.spec.ts   real Kafka broker and real Redis
//   *.chaos.spec.ts faults (SIGKILL, broker and Redis restarts, scaling) and hostile input
export default defineConfig({
  test: {
    projects: [
      { test: { name: "unit", include: ["test/unit/**/*.unit.spec.ts"] } },
      {
        test: {
          name: "reference",
          include: ["test/reference/**/*.ref.spec.ts"],
          globalSetup: ["test/support/reference-global-setup.ts"],
          testTimeout: 600_000,
          hookTimeout: 600_000,
        },
      },
      {
        // Restarts the broker and Redis: run on its own (scripts/test.sh runs it after the other tiers).
        test: {
          name: "chaos",
          include: ["test/chaos/**/*.chaos.spec.ts"],
          testTimeout: 900_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.int.spec.ts"],
          testTimeout: 300_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
