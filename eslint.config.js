// Lint: TypeScript recommended rules, plus the one rule the architecture rests on:
// the pure core (src/core) imports no IO — no Kafka, Redis, filesystem, network or process.
import tseslint from "typescript-eslint";

const IO_MODULES = [
  "kafkajs", "ioredis", "@mongodb-js/zstd", "fs", "node:fs", "fs/promises", "node:fs/promises", "net", "node:net",
  "http", "node:http", "https", "node:https", "child_process", "node:child_process", "dgram", "node:dgram",
  "tls", "node:tls", "worker_threads", "node:worker_threads", "readline", "node:readline",
];

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
    files: ["src/core/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { paths: IO_MODULES.map((name) => ({ name, message: "src/core is the pure core: keep IO in an adapter." })) },
      ],
      "no-restricted-globals": ["error", { name: "process", message: "src/core is the pure core: no process access." }],
    },
  },
);
