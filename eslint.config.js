// Lint: TypeScript recommended rules, plus the one rule the architecture rests on:
// pure code imports no IO — no Kafka, Redis, filesystem, network or process. Pure are the
// core (src/core), the fold engine (src/fold: planning, deltas, the IdentityStore port) and
// the in-memory store that the unit tier runs the engine on (src/adapters/memory).
import tseslint from "typescript-eslint";

const IO_MODULES = [
  "kafkajs", "ioredis", "@mongodb-js/zstd", "fs", "node:fs", "fs/promises", "node:fs/promises", "net", "node:net",
  "http", "node:http", "https", "node:https", "child_process", "node:child_process", "dgram", "node:dgram",
  "tls", "node:tls", "worker_threads", "node:worker_threads", "readline", "node:readline",
];

const PURE_FILES = ["src/core/**/*.ts", "src/fold/**/*.ts", "src/adapters/memory/**/*.ts"];

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", ".cache/**", "coverage/**"] },
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    files: PURE_FILES,
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: IO_MODULES.map((name) => ({ name, message: "pure code (src/core, src/fold, src/adapters/memory): keep IO in an IO adapter." })),
          // Nor the IO adapters themselves: the engine reaches a store only through its port.
          patterns: [{ group: ["**/adapters/redis/*", "**/adapters/kafka/*", "../redis/*", "../kafka/*"], message: "pure code depends on ports (src/fold/identity-store.ts), not on IO adapters." }],
        },
      ],
      "no-restricted-globals": ["error", { name: "process", message: "pure code (src/core, src/fold, src/adapters/memory): no process access." }],
    },
  },
);
