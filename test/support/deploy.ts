/**
 * Helpers for the tests of the deployment files (infra/docker-compose.yml,
 * deploy/k8s/*.yaml): YAML documents, the settings registry's environment
 * names, and whether an HTTP path a health check or probe names is one the
 * server answers.
 */
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import type { ProjectionReader } from "../../src/client/readback.js";
import { SETTINGS } from "../../src/config/settings.js";
import { startHttpServer } from "../../src/http/server.js";

/** Every YAML document of a file, as plain data (a document that does not parse fails the test). */
export function yamlDocuments(path: string): unknown[] {
  return parseAllDocuments(readFileSync(path, "utf8")).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors.map((e) => e.message).join("; ")}`);
    return doc.toJS({ maxAliasCount: 100 }) as unknown;
  }).filter((d) => d !== null && d !== undefined);
}

/** The environment variable names the settings registry reads, read at test time (it grows). */
export function registryEnvNames(): Set<string> {
  return new Set(Object.values(SETTINGS).map((s) => s.env));
}

/** The value of `--flag` in an argument list, or undefined. */
export function flagValue(args: readonly string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i < 0 ? undefined : args[i + 1];
}

/**
 * The status the HTTP server (src/http/server.ts, with no readiness checks
 * registered, so ready) answers for GET `path`: 200 for an endpoint it serves,
 * 404 for one it does not. The health endpoints never touch the reader.
 */
export async function statusOf(path: string): Promise<number> {
  const server = await startHttpServer({ reader: {} as ProjectionReader, port: 0 });
  try {
    return (await fetch(`http://127.0.0.1:${server.port}${path}`)).status;
  } finally {
    await server.close();
  }
}
