/** Loads the versioned Redis Function library that reads and writes identities. */
import { readFileSync } from "node:fs";
import type { Redis, Cluster } from "ioredis";

export const LIBRARY_NAME = "mufold_v1";
export const READ_FUNCTION = "mufold_read_v1";
export const APPLY_FUNCTION = "mufold_apply_v1";

let source: string | undefined;

export function librarySource(): string {
  source ??= readFileSync(new URL("./functions/mufold_v1.lua", import.meta.url), "utf8");
  return source;
}

/** FUNCTION LOAD REPLACE on every master (idempotent). */
export async function loadFunctions(redis: Redis | Cluster): Promise<void> {
  const nodes = "nodes" in redis && typeof redis.nodes === "function" ? (redis as Cluster).nodes("master") : [redis as Redis];
  await Promise.all(nodes.map((node) => node.call("FUNCTION", "LOAD", "REPLACE", librarySource())));
}
