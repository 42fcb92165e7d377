import { defineConfig } from "vitest/config";

// Three tiers, by file suffix:
//   *.unit.spec.ts  pure core, no services
//   *.ref.spec.ts   differential against the Python reference (loopx from PyPI)
//   *.int.spec.ts   real Kafka broker and real Redis
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
