/**
 * mufold's Redis Function libraries: `mufold setup` loads them (an admin step,
 * `ensureSetup` for demos, tests and benchmarks); the fold and the replay only
 * check that they are there (`assertFunctionsLoaded`), as their ACL role may not
 * load Lua (docs/security.md).
 */
import { readFileSync } from "node:fs";
import { masterNodes, openRedis, redisClientSettings, type RedisClient } from "./connect.js";
import { FunctionsMissingError, RedisPermissionError, classifyRedisError } from "./errors.js";
import { withHeader } from "./lua-header.js";

export const LIBRARY_NAME = "mufold_v1";
export const CONTROL_LIBRARY_NAME = "mufold_control_v1";
export const READ_FUNCTION = "mufold_read_v1";
export const APPLY_FUNCTION = "mufold_apply_v2";
/**
 * The apply of this release, live and replay: the position guard of mufold_apply_v3 (the previous release's live
 * apply) when given the control key, and the offset index (mufold_v1.lua).
 */
export const INDEXED_APPLY_FUNCTION = "mufold_apply_v4";
/** The as-of read's one call: meta, `d`, `h` and the offset index of one identity (read-only). */
export const AS_OF_FUNCTION = "mufold_as_of_v1";
/** The control library's functions (mufold_control_v1.lua lists their arguments and codes). */
export const CONTROL_FUNCTIONS = {
  state: "mufold_state_v1",
  init: "mufold_init_v1",
  allocate: "mufold_allocate_v1",
  seal: "mufold_seal_v1",
  sealChanges: "mufold_seal_changes_v1",
  origin: "mufold_origin_v1",
  pause: "mufold_pause_v1",
  unpause: "mufold_unpause_v1",
  promote: "mufold_promote_v1",
  forget: "mufold_forget_v1",
  rewind: "mufold_rewind_v1",
  renewBuild: "mufold_renew_build_v1",
  building: "mufold_building_v1",
} as const;

const sources = new Map<string, string>();

function readLibrary(name: string): string {
  let text = sources.get(name);
  if (text === undefined) sources.set(name, (text = withHeader(readFileSync(new URL(`./functions/${name}.lua`, import.meta.url), "utf8"))));
  return text;
}

/** The identity library's source (mufold_v1.lua). */
export function librarySource(): string {
  return readLibrary(LIBRARY_NAME);
}

/** Every library mufold loads: identities and control. */
export function librarySources(): string[] {
  return libraries().map((l) => l.source);
}

/** The libraries mufold loads, by name, with this build's source. */
export function libraries(): { name: string; source: string }[] {
  return [LIBRARY_NAME, CONTROL_LIBRARY_NAME].map((name) => ({ name, source: readLibrary(name) }));
}

/** A node's address for messages (never credentials). */
export function nodeName(node: { options: { host?: string | undefined; port?: number | undefined } }): string {
  return `${node.options.host ?? "?"}:${node.options.port ?? "?"}`;
}

/**
 * FUNCTION LOAD REPLACE on every master of a cluster, or on the one node
 * (idempotent). A cluster's master list is read at each call, so a master
 * that restarted empty, or one added since, gets the library too. Returns
 * the masters it loaded. Needs an admin: it is `mufold setup`'s job.
 */
export async function loadFunctions(redis: RedisClient): Promise<string[]> {
  const nodes = await masterNodes(redis);
  await Promise.all(nodes.flatMap((node) => librarySources().map((text) => node.call("FUNCTION", "LOAD", "REPLACE", text))));
  return nodes.map(nodeName);
}

/**
 * Check that every master holds both libraries with exactly this build's code
 * (FUNCTION LIST … WITHCODE: the fold role's `+function|list`). Another build's
 * code is refused like a missing library, as the fold used to run only the code
 * it loaded itself; an upgrade runs the new version's `mufold setup` first.
 */
export async function assertFunctionsLoaded(redis: RedisClient): Promise<void> {
  for (const node of await masterNodes(redis)) {
    for (const { name, source } of libraries()) {
      let reply: unknown;
      try {
        reply = await node.call("FUNCTION", "LIST", "LIBRARYNAME", name, "WITHCODE");
      } catch (err) {
        const typed = classifyRedisError(err);
        if (typed instanceof RedisPermissionError) {
          throw new RedisPermissionError(`cannot check mufold's function libraries on Redis at ${nodeName(node)}: this user may not run FUNCTION LIST (grant it +function|list, as infra/redis-acl/roles.acl does): ${typed.message}`, { cause: err });
        }
        throw typed;
      }
      // LIBRARYNAME is a pattern: keep the exact name.
      const code = (reply as unknown[][]).map(fieldMap).find((lib) => lib.get("library_name") === name)?.get("library_code");
      if (code === undefined) throw new FunctionsMissingError(`Redis at ${nodeName(node)} has no function library ${name}`);
      if (code !== source) throw new FunctionsMissingError(`the function library ${name} on Redis at ${nodeName(node)} is not the one this mufold ships (another version loaded it)`);
    }
  }
}

/** A RESP2 map reply (field, value, field, value…) as a Map. */
function fieldMap(flat: unknown[]): Map<unknown, unknown> {
  const out = new Map<unknown, unknown>();
  for (let i = 0; i + 1 < flat.length; i += 2) out.set(flat[i], flat[i + 1]);
  return out;
}

/** What ensureSetup needs of the settings. */
export type SetupRedisSettings = Parameters<typeof redisClientSettings>[0] & { connectTimeoutMs: number };

/**
 * Load the libraries with these settings' Redis (its own short-lived client):
 * the Redis half of `mufold setup`, for the demo, the test helpers, the chaos
 * harness and the benchmarks, which start folds on a Redis nobody set up.
 */
export async function ensureSetup(settings: SetupRedisSettings): Promise<string[]> {
  const redis = await openRedis(redisClientSettings(settings), settings.connectTimeoutMs);
  try {
    return await loadFunctions(redis);
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}
