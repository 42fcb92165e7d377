/** Loads the versioned Redis Function library that reads and writes identities. */
import { readFileSync } from "node:fs";
import { masterNodes, type RedisClient } from "./connect.js";

export const LIBRARY_NAME = "mufold_v1";
export const READ_FUNCTION = "mufold_read_v1";
export const APPLY_FUNCTION = "mufold_apply_v1";

let source: string | undefined;

export function librarySource(): string {
  source ??= readFileSync(new URL("./functions/mufold_v1.lua", import.meta.url), "utf8");
  return source;
}

/**
 * FUNCTION LOAD REPLACE on every master of a cluster, or on the one node
 * (idempotent). A cluster's master list is read at each call, so a master
 * that restarted empty, or one added since, gets the library too.
 */
export async function loadFunctions(redis: RedisClient): Promise<void> {
  const nodes = await masterNodes(redis);
  await Promise.all(nodes.map((node) => node.call("FUNCTION", "LOAD", "REPLACE", librarySource())));
}
