import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Tiers, by file suffix:
//   *.unit.spec.ts  pure core, no services
//   *.ref.spec.ts   differential against the Python reference (loopx from PyPI)
//   *.int.spec.ts   real Kafka broker and real Redis
//   *.chaos.spec.ts faults (SIGKILL, broker and Redis restarts, scaling) and hostile input
//
// Projects (scripts/test.sh runs them; `npm run test:quick` runs unit and reference):
//   unit, reference          every unit and reference file
//   integration              every integration file but INTEGRATION_SERIAL, files in parallel
//   integration-serial       INTEGRATION_SERIAL, one file at a time, after `integration`
//   runtime-unit,            RUNTIME_DEPENDENT only, at MUFOLD_TEST_DEPTH=quick: what scripts/test.sh
//     runtime-reference      runs again on each other pinned Node (scripts/node-versions.sh)
//   chaos                    restarts the broker and Redis: alone and last
//
// Projects in one sequence.groupOrder run together, each group after the one before; vitest needs one
// maxWorkers per group. Vitest's default is one worker less than the cores, which on a 2-core machine
// is one file at a time: the CPU-bound tiers take every core, the integration tier (mostly waiting on
// the broker's group rebalances and on spawned processes) more workers than cores.
//
// Depth: MUFOLD_TEST_DEPTH (test/support/depth.ts, read there only) is `full` unless set; `quick`
// runs the same tests on fewer generated cases, and `npm test` still runs them all at full depth.
// Every project's globalSetup first makes sure dist/ is built from the current sources
// (test/support/dist-global-setup.ts): bin/mufold.js and the packed package run dist/.

const cores = availableParallelism();
const CPU_WORKERS = Math.max(1, cores);
/**
 * Integration files at once: three per core (a file mostly waits on the broker's group rebalances, on
 * Redis and on the processes it spawns), at least 4, at most 8 against the one broker: 6 on 2 cores.
 * MUFOLD_INTEGRATION_WORKERS overrides (1: one file at a time, as before).
 */
const INTEGRATION_WORKERS = Number(process.env.MUFOLD_INTEGRATION_WORKERS) || Math.min(8, Math.max(4, cores * 3));

const DIST = "test/support/dist-global-setup.ts";
const REFERENCE = "test/support/reference-global-setup.ts";

/**
 * Integration files that cannot run beside others. Every other integration test runs on a topic, group
 * and key prefix of its own (testSettings), a Redis database of its own when it empties one (state-loss
 * 6/7/8/12, dlq-replay 5, control 9; chaos 11), or a private redis-server on a free port; a file that
 * starts a service on a fixed port, changes broker-wide configuration, asserts on server-wide counters
 * or rewrites what the others run belongs here, with its reason.
 */
const INTEGRATION_SERIAL = [
  // `npm pack` runs the package's prepack compile, which rewrites dist/ in place while the other files
  // spawn bin/mufold.js from it (a half-written module is a SyntaxError in someone else's test).
  "test/integration/package.int.spec.ts",
  "test/integration/docs-code-blocks.int.spec.ts",
  // Starts a Redis Cluster on fixed ports (infra/redis-cluster: 7100-7102), kills and restarts its nodes.
  "test/integration/redis-cluster.int.spec.ts",
];

/**
 * What can differ between Node versions, run again on each other pinned Node (22 and 24) by
 * scripts/test.sh; the whole of every tier runs on the Node of `npm test` (20). A file belongs here when
 * it exercises an API or runtime behaviour that a Node or V8 upgrade can change under unchanged code:
 * crypto.hash (the one-shot fast path, Node >= 20.12) and sha256, Buffer and TextDecoder (fatal UTF-8,
 * BOMs, latin1/ASCII slices), V8's number formatting and string internals (sliced strings kept alive,
 * JSON.stringify), Unicode tables of regular expressions (Python whitespace, printable), the WHATWG URL
 * parser, the native zstd addon and zlib, process warnings and timers (kafkajs on Node 24), the CLI as
 * a spawned process (shebang flags, stdout closed early), and the embedded reducer against the
 * reference on a sample (the 120 stored conformance cases, and streams at MUFOLD_TEST_DEPTH=quick).
 * Integration: test/integration/node-warnings.int.spec.ts runs the Kafka clients on each pinned Node.
 */
const RUNTIME_DEPENDENT = {
  unit: [
    "ascii-text", // Buffer latin1/ASCII paths
    "byte-order", // UTF-8 byte order of UTF-16 strings
    "cli-bom", // TextDecoder and BOMs
    "cli-launcher", // bin/mufold.js spawned: shebang, V8 flags
    "cli-main", // the CLI in-process: stdout closed early, exit codes
    "codecs", // native zstd addon, zlib, lz4/snappy on Buffers
    "conformance", // the embedded reducer on the 120 stored cases
    "core-fast-paths", // crypto.hash fast path, JSON.stringify
    "core-observation-reader", // the one-pass reader on V8 strings
    "decide-fast-path", // fatal TextDecoder, Buffer keys and headers
    "encoded-command", // Buffer encoding of Redis commands
    "flat-string", // V8 flattening concatenations
    "kafka-timeout-patch", // timers and TimeoutNegativeWarning (Node 24)
    "model-heap-estimate", // V8's heap layout against the cache's estimate
    "observation-retention", // V8 sliced strings and the heap
    "record-decoder", // Buffer slices and UTF-8 header keys, number arithmetic against kafkajs's BigInt
    "part-hash", // sha256, latin1
    "pyfloat", // V8 shortest round-trip number formatting
    "redact", // WHATWG URL parser
  ].map((name) => `test/unit/${name}.unit.spec.ts`),
  reference: [
    "cli-bom", // the installed CLI on BOMs, and TextDecoder
    "conformance", // the stored cases against the reference
    "observation", // Unicode whitespace and normalization
    "primitives", // float repr, JSON parse, timestamps, round(x, 6)
    "streams", // random streams, at quick depth: a sample
  ].map((name) => `test/reference/${name}.ref.spec.ts`),
};

// A unit test waits for nothing, so its timeout only catches a hang: vitest's 5 s default fails the heavier
// property tests (1-2 s alone) on a machine whose cores other work shares.
const unit = { globalSetup: [DIST], testTimeout: 60_000, sequence: { groupOrder: 0 }, maxWorkers: CPU_WORKERS };
const reference = {
  globalSetup: [DIST, REFERENCE],
  testTimeout: 600_000,
  hookTimeout: 600_000,
  sequence: { groupOrder: 0 },
  maxWorkers: CPU_WORKERS,
};
const integration = { globalSetup: [DIST], testTimeout: 300_000, hookTimeout: 300_000 };

export default defineConfig({
  test: {
    projects: [
      { test: { name: "unit", include: ["test/unit/**/*.unit.spec.ts"], ...unit } },
      { test: { name: "reference", include: ["test/reference/**/*.ref.spec.ts"], ...reference } },
      { test: { name: "runtime-unit", include: RUNTIME_DEPENDENT.unit, env: { MUFOLD_TEST_DEPTH: "quick" }, ...unit } },
      { test: { name: "runtime-reference", include: RUNTIME_DEPENDENT.reference, env: { MUFOLD_TEST_DEPTH: "quick" }, ...reference } },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.int.spec.ts"],
          exclude: INTEGRATION_SERIAL,
          ...integration,
          sequence: { groupOrder: 1 },
          maxWorkers: INTEGRATION_WORKERS,
        },
      },
      {
        test: {
          name: "integration-serial",
          include: INTEGRATION_SERIAL,
          ...integration,
          sequence: { groupOrder: 2 },
          fileParallelism: false,
        },
      },
      {
        // Restarts the broker and Redis: run on its own (scripts/test.sh runs it after the other tiers).
        test: {
          name: "chaos",
          include: ["test/chaos/**/*.chaos.spec.ts"],
          globalSetup: [DIST],
          testTimeout: 900_000,
          hookTimeout: 300_000,
          sequence: { groupOrder: 3 },
          fileParallelism: false,
        },
      },
    ],
  },
});
