// Lint: TypeScript recommended rules, plus the rules the architecture rests on.
//
// Layers (imports point down this list, never up; see docs/architecture.md "Layout"):
//   src/core            the pure contract: imports nothing outside src/core
//   src/fold            the pure fold engine and its ports: core, errors
//   src/config          settings: core, errors (no Kafka or Redis; it reads the environment it is handed and password files)
//   src/observability   log, metrics
//   src/adapters        kafka, redis, memory: the above, never consumers/producers/cli/http/client
//   src/client          the public read/produce API: the above
//   src/http            the HTTP surface: the above and src/client (it serves what the reader reads; never the reverse)
//   consumers, producers   the applications: anything in src but src/cli
//   src/cli             the entry: everything
// Pure code (core, fold, the memory adapter) imports no IO at all, and no process. No import cycles anywhere,
// type-only imports included (mufold/no-cycle below).
// The library imports statically (no import()), so these rules see every edge; nothing imports the package
// by its own name ("mufold"). test/unit/lint-rules.unit.spec.ts shows each rule firing.
import tseslint from "typescript-eslint";
import importX from "eslint-plugin-import-x";
import { createTypeScriptImportResolver } from "eslint-import-resolver-typescript";
import { ModuleInfo } from "eslint-plugin-import-x/core/module-info";
import { moduleVisitor } from "eslint-plugin-import-x/utils";

const IO_MODULES = [
  "kafkajs", "ioredis", "@mongodb-js/zstd", "lz4js", "snappyjs", "pino", "prom-client",
  ...["fs", "fs/promises", "net", "http", "http2", "https", "child_process", "dgram", "dns", "dns/promises", "tls",
    "worker_threads", "readline", "os", "process", "module", "vm", "cluster", "inspector"].flatMap((m) => [m, `node:${m}`]),
];
/** Deep imports into the IO packages (kafkajs/src/…) are IO too. */
const IO_PATTERNS = ["kafkajs/*", "ioredis/*", "@mongodb-js/*"];
/** The package's own name resolves to its public API (client, adapters): never from inside. */
const SELF = [{ name: "mufold", message: "inside the package, import the module itself, not the public entry." }, { name: "mufold/core", message: "inside the package, import src/core directly." }];
/** Layered code loads modules statically, so the import rules see every edge. */
const NO_DYNAMIC_IMPORT = { selector: "ImportExpression", message: "no dynamic import() in the library: the layer rules (and import cycles) only see static imports." };

const PURE_FILES = ["src/core/**/*.ts", "src/fold/**/*.ts", "src/adapters/memory/**/*.ts"];

/** Import patterns (relative, any depth) that name a folder. */
const folder = (...names) => names.flatMap((n) => [`**/${n}/*`, `**/${n}/**`, `**/${n}`]);

// One no-restricted-imports entry per file group (flat config replaces, not merges, a rule set twice).
const layer = (files, forbidden, why, { io = false, dynamic = false } = {}) => ({
  files,
  rules: {
    "no-restricted-imports": [
      "error",
      {
        paths: [...(io ? ioPaths : []), ...SELF],
        patterns: [
          ...(forbidden.length > 0 ? [{ group: forbidden, message: why }] : []),
          ...(io ? [{ group: IO_PATTERNS, message: "pure code: keep IO in an IO adapter." }] : []),
        ],
      },
    ],
    ...(dynamic ? {} : { "no-restricted-syntax": ["error", NO_DYNAMIC_IMPORT] }),
  },
});

/**
 * import-x/no-cycle, counting `import type` too. import-x skips type-only edges with no option to keep them
 * (4.18: both the importing edge and every edge it walks), yet a circle of types is still a circle of modules
 * (issue 37: compact-json → subject → observation → observation-json → compact-json, its first two edges typed).
 * The same module graph as import-x (its ModuleInfo, the TypeScript resolver below), walked breadth first over
 * every relative import: value, type-only and dynamic. Reports the import that closes a cycle, with the way back.
 */
const noCycle = {
  meta: { type: "problem", schema: [], messages: { cycle: "import cycle (type-only imports count): {{route}}" } },
  create(context) {
    const self = context.physicalFilename;
    return moduleVisitor((source) => {
      if (!source.value.startsWith(".")) return; // packages and builtins cannot import back
      const first = ModuleInfo.get(source.value, context);
      if (first == null || first.path === self) return;
      const seen = new Set([first.path]);
      const queue = [{ info: first, route: [source.value] }];
      for (let q = 0; q < queue.length; q++) {
        const { info, route } = queue[q];
        for (const [path, { resolve, declarations }] of info.getImports()) {
          const edge = [...declarations].find((d) => d.source.value.startsWith("."));
          if (edge === undefined || seen.has(path)) continue;
          const way = [...route, edge.source.value];
          if (path === self) return context.report({ node: source, messageId: "cycle", data: { route: way.join(" → ") } });
          seen.add(path);
          const next = resolve();
          if (next != null) queue.push({ info: next, route: way });
        }
      }
    });
  },
};

const ioPaths = IO_MODULES.map((name) => ({ name, message: "pure code (src/core, src/fold, src/adapters/memory): keep IO in an IO adapter." }));

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", ".cache/**", "coverage/**"] },
  ...tseslint.configs.recommended,
  {
    plugins: { "import-x": importX, mufold: { rules: { "no-cycle": noCycle } } },
    settings: {
      // import-x parses every imported file to follow the graph: it needs the TypeScript parser for .ts.
      ...importX.flatConfigs.typescript.settings,
      "import-x/resolver": undefined,
      "import-x/resolver-next": [createTypeScriptImportResolver({ project: "tsconfig.json" })],
    },
    rules: {
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    files: ["src/**/*.ts", "consumers/**/*.ts", "producers/**/*.ts"],
    rules: { "mufold/no-cycle": "error" },
  },
  layer(["src/*.ts"], folder("core", "fold", "adapters", "config", "observability", "client", "http", "cli", "consumers", "producers"), "files directly under src/ (errors.ts) are the bottom: they import no layer."),
  layer(["src/core/**/*.ts"], ["../*", "!../core/*"].concat(["../../*"]), "src/core is the pure contract: it imports nothing outside src/core.", { io: true }),
  layer(
    ["src/fold/**/*.ts"],
    folder("adapters", "config", "observability", "client", "http", "cli", "consumers", "producers"),
    "src/fold is the pure engine: it imports src/core, src/errors and its own ports only.",
    { io: true },
  ),
  layer(
    ["src/adapters/memory/**/*.ts"],
    folder("redis", "kafka", "config", "observability", "client", "http", "cli", "consumers", "producers"),
    "the in-memory store is pure: it implements the port in src/fold/identity-store.ts.",
    { io: true },
  ),
  {
    files: PURE_FILES,
    rules: {
      "no-restricted-globals": ["error", { name: "process", message: "pure code (src/core, src/fold, src/adapters/memory): no process access." }],
      "no-restricted-properties": ["error", { object: "globalThis", property: "process", message: "pure code: no process access." }],
    },
  },
  layer(["src/config/**/*.ts"], folder("adapters", "observability", "client", "http", "cli", "consumers", "producers", "fold"), "src/config is read by everyone and reads nobody's modules but core and errors."),
  layer(["src/observability/**/*.ts"], folder("adapters", "client", "http", "cli", "consumers", "producers", "fold"), "src/observability (log, metrics) sits below the adapters."),
  layer(["src/adapters/kafka/**/*.ts", "src/adapters/redis/**/*.ts"], folder("client", "http", "cli", "consumers", "producers"), "adapters never import the applications, the CLI, HTTP or the client API."),
  layer(["src/client/**/*.ts"], folder("http", "cli", "consumers", "producers"), "the client API stands on the library: HTTP serves it (src/http imports src/client), never the reverse; nor the applications or the CLI."),
  layer(["src/http/**/*.ts"], folder("cli", "consumers", "producers"), "HTTP stands on the library and the client API, not on the applications or the CLI."),
  layer(["consumers/**/*.ts", "producers/**/*.ts"], folder("cli"), "the applications do not import the CLI (the CLI imports them).", { dynamic: true }),
  layer(["src/cli/**/*.ts"], [], "", { dynamic: true }),
  {
    // kafkajs's waitForLeaders fails at once on the UNKNOWN_TOPIC_OR_PARTITION a KRaft broker answers while its
    // metadata lags the controller (a CI run failed so). Tests and benches create topics through ensureTopics,
    // or with waitForLeaders: false and then awaitTopicLeaders.
    files: ["test/**/*.{ts,mts,mjs}", "bench/**/*.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: 'CallExpression[callee.property.name="createTopics"]:not(:has(Property[key.name="waitForLeaders"][value.value=false]))',
          message: "createTopics waits for leaders with kafkajs's own wait, which gives up on a lagging KRaft broker: use ensureTopics, or waitForLeaders: false then awaitTopicLeaders.",
        },
      ],
    },
  },
);
