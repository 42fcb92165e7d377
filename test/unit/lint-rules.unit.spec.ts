// The architecture's lint rules fire: each forbidden edge, linted as if it were written in the
// tree (ESLint with the project's eslint.config.js, on in-memory text), is reported by the rule
// that guards it, and an allowed edge is not. A broken eslint.config.js fails here, not silently.
import { ESLint } from "eslint";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));
const eslint = new ESLint({ cwd: root });

async function rulesFor(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}${file}` });
  return (result?.messages ?? []).map((m) => m.ruleId ?? `fatal: ${m.message}`);
}

describe("lint rules of the architecture", () => {
  it.each([
    ["src/core/x.ts", 'import { MufoldError } from "../errors.js";\nexport const x = MufoldError;', "no-restricted-imports"],
    ["src/fold/x.ts", 'import { Redis } from "ioredis";\nexport const x = Redis;', "no-restricted-imports"],
    ["src/fold/x.ts", 'import { hostname } from "node:os";\nexport const x = hostname;', "no-restricted-imports"],
    ["src/fold/x.ts", 'import { env } from "node:process";\nexport const x = env;', "no-restricted-imports"],
    ["src/fold/x.ts", 'import q from "kafkajs/src/network/requestQueue/index.js";\nexport const x = q;', "no-restricted-imports"],
    ["src/fold/x.ts", 'import { RedisStore } from "../adapters/redis/store.js";\nexport const x = RedisStore;', "no-restricted-imports"],
    ["src/fold/x.ts", 'export const x = () => import("./scope-key.js");', "no-restricted-syntax"],
    ["src/fold/x.ts", "export const x = process.env.X;", "no-restricted-globals"],
    ["src/fold/x.ts", "export const x = globalThis.process.env.X;", "no-restricted-properties"],
    ["src/adapters/memory/x.ts", 'import { connectRedis } from "../redis/connect.js";\nexport const x = connectRedis;', "no-restricted-imports"],
    ["src/adapters/kafka/x.ts", 'import { FoldWorker } from "../../../consumers/fold-worker.js";\nexport const x = FoldWorker;', "no-restricted-imports"],
    ["src/adapters/redis/x.ts", 'import { main } from "../../cli/main.js";\nexport const x = main;', "no-restricted-imports"],
    ["src/http/x.ts", 'import { main } from "../cli/main.js";\nexport const x = main;', "no-restricted-imports"],
    ["src/client/x.ts", 'import { openSender } from "../../producers/produce.js";\nexport const x = openSender;', "no-restricted-imports"],
    ["src/client/x.ts", 'import { ProjectionReader } from "mufold";\nexport const x = ProjectionReader;', "no-restricted-imports"],
    // HTTP serves what the client reads (src/http → src/client); the back-edge is refused, a type-only one too.
    ["src/client/x.ts", 'import { startHttpServer } from "../http/server.js";\nexport const x = startHttpServer;', "no-restricted-imports"],
    ["src/client/x.ts", 'import type { HttpServerHandle } from "../http/server.js";\nexport type X = HttpServerHandle;', "no-restricted-imports"],
    ["src/config/x.ts", 'import { connectRedis } from "../adapters/redis/connect.js";\nexport const x = connectRedis;', "no-restricted-imports"],
    ["src/observability/x.ts", 'import { RedisStore } from "../adapters/redis/store.js";\nexport const x = RedisStore;', "no-restricted-imports"],
    ["src/errors.ts", 'import { main } from "./cli/main.js";\nexport const x = main;', "no-restricted-imports"],
    ["consumers/x.ts", 'import { main } from "../src/cli/main.js";\nexport const x = main;', "no-restricted-imports"],
    ["test/x.ts", "export const x = (admin: any) => admin.createTopics({ topics: [] });", "no-restricted-syntax"],
    ["test/x.ts", "export const x = (admin: any) => admin.createTopics({ topics: [], waitForLeaders: true });", "no-restricted-syntax"],
  ])("%s: %s is refused", async (file, code, rule) => {
    expect(await rulesFor(file, code)).toContain(rule);
  });

  it("an import cycle is refused (pyvalue.ts importing the writer that imports it)", async () => {
    const rules = await rulesFor("src/core/pyvalue.ts", 'import { compactJson } from "./compact-json.js";\nexport const x = compactJson;');
    expect(rules).toContain("mufold/no-cycle");
  });

  it("a cycle through a type-only import is refused: the importing edge typed", async () => {
    const rules = await rulesFor("src/core/pyvalue.ts", 'import type { ReducedSubject } from "./subject.js";\nexport type X = ReducedSubject;');
    expect(rules).toContain("mufold/no-cycle");
  });

  it("a cycle through a type-only import is refused: issue 37's circle, typed on two of its edges", async () => {
    // subject → observation → observation-json → compact-json → subject, as it was before subject.ts imported observation-model.ts.
    const rules = await rulesFor("src/core/subject.ts", 'import type { Observation } from "./observation.js";\nexport type X = Observation;');
    expect(rules).toContain("mufold/no-cycle");
    expect(await rulesFor("src/core/subject.ts", 'import type { Observation } from "./observation-model.js";\nexport type X = Observation;')).toEqual([]);
  });

  it("allowed edges pass: the engine on the core, an adapter on the engine, the CLI on an application, HTTP on the client", async () => {
    expect(await rulesFor("src/fold/x.ts", 'import { canonicalJson } from "../core/canonical-json.js";\nexport const x = canonicalJson;')).toEqual([]);
    expect(await rulesFor("src/adapters/redis/x.ts", 'import type { IdentityStore } from "../../fold/identity-store.js";\nexport type X = IdentityStore;')).toEqual([]);
    expect(await rulesFor("src/cli/x.ts", 'import { FoldWorker } from "../../consumers/fold/fold-worker.js";\nexport const x = FoldWorker;')).toEqual([]);
    expect(await rulesFor("src/http/x.ts", 'import type { ProjectionReader } from "../client/readback.js";\nexport type X = ProjectionReader;')).toEqual([]);
  });
});
