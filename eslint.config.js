// Lint: TypeScript recommended rules, plus the rules the architecture rests on.
//
// Layers (imports point down this list, never up; see docs/architecture.md "Layout"):
//   src/core            the pure contract: imports nothing outside src/core
//   src/fold            the pure fold engine and its ports: core, errors
//   src/config          settings: core, errors (no Kafka or Redis; it reads the environment it is handed and password files)
//   src/observability   log, metrics
//   src/adapters        kafka, redis, memory: the above, never consumers/producers/cli/http/client
//   src/client, src/http   the public read/produce API and the HTTP surface: the above
//   consumers, producers   the applications: anything in src but src/cli
//   src/cli             the entry: everything
// Pure code (core, fold, the memory adapter) imports no IO at all, and no process. No import cycles anywhere.
// The library imports statically (no import()), so these rules see every edge; nothing imports the package
// by its own name ("mufold"). test/unit/lint-rules.unit.spec.ts shows each rule firing.
import tseslint from "typescript-eslint";
import importX from "eslint-plugin-import-x";
import { createTypeScriptImportResolver } from "eslint-import-resolver-typescript";

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

const ioPaths = IO_MODULES.map((name) => ({ name, message: "pure code (src/core, src/fold, src/adapters/memory): keep IO in an IO adapter." }));

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", ".cache/**", "coverage/**"] },
  ...tseslint.configs.recommended,
  {
    plugins: { "import-x": importX },
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
    rules: { "import-x/no-cycle": ["error", { ignoreExternal: true }] },
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
  layer(["src/client/**/*.ts", "src/http/**/*.ts"], folder("cli", "consumers", "producers"), "the client API and HTTP stand on the library, not on the applications or the CLI."),
  layer(["consumers/**/*.ts", "producers/**/*.ts"], folder("cli"), "the applications do not import the CLI (the CLI imports them).", { dynamic: true }),
  layer(["src/cli/**/*.ts"], [], "", { dynamic: true }),
);
