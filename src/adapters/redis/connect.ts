/**
 * Redis connections from a URL: one node, or a Redis Cluster.
 *
 *   redis://[user:password@]host:port[/db]        one node (ioredis Redis)
 *   rediss://…                                     the same over TLS
 *   redis+cluster://[user:password@]host:port[,host:port…]
 *                                                  a Redis Cluster (ioredis Cluster); the
 *                                                  host:port list are seed nodes, the rest
 *                                                  is discovered with CLUSTER SLOTS
 *   rediss+cluster://…                             the same over TLS
 *
 * In a cluster URL the user and password apply to every node; characters such
 * as `@ / , :` in them must be percent-encoded. There is no database number
 * (a cluster has only database 0). IPv6 seeds are not supported.
 *
 * Every key of one reducer identity shares the hash tag `{mur_…}`, and each
 * `FCALL`/`FCALL_RO` names its ten keys, so ioredis sends the call straight
 * to the master that owns that slot (see `function-call.ts`). Reads go to masters
 * (`scaleReads: "master"`): a cluster without replicas serves everything.
 * Start a local one with infra/redis-cluster/start.sh (127.0.0.1:7100-7102).
 *
 * Security (docs/security.md): the user and password of the URL become the
 * ioredis `username`/`password` options (AUTH user password: a Redis ACL
 * user); REDIS_PASSWORD_FILE supplies the password instead; a CA from
 * REDIS_TLS_CA becomes `tls: { ca }` for rediss:// and rediss+cluster://.
 * `redisClientSettings(settings)` gathers them for `connectRedis`.
 */
import { isClusterUrl, parseClusterUrl, redactRedisUrl } from "../../config/redis-url.js";
import { settingDefault } from "../../config/settings.js";

const redact = (url: string): string => redactRedisUrl(url);
import { Cluster, Command, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import { MufoldError } from "../../errors.js";
import { META_FIELDS } from "../../fold/stored-names.js";
import { identityKeys } from "./keys.js";

/** A password held out of sight (src/config/settings.ts's Secret), or a plain string. */
export type PasswordValue = string | { reveal(): string };

/** What connectRedis needs beyond the URL. */
export interface RedisConnection {
  url: string;
  /** The password when it is not in the URL (REDIS_PASSWORD_FILE). */
  password?: PasswordValue | undefined;
  /** PEM text of the CA certificate(s) of Redis (TLS URLs only). */
  tlsCa?: string | undefined;
  /** ioredis `connectTimeout` of each connection attempt (openRedis sets it). */
  connectTimeoutMs?: number | undefined;
  /**
   * A reader's connection (ProjectionReader: `mufold read`, `mufold serve`): no
   * INFO ready check, as the reader role has no INFO (it shows every tenant's
   * key counts). While Redis loads its data after a restart, reads then fail
   * with LOADING (serve answers 503) instead of waiting.
   */
  reader?: boolean | undefined;
  /**
   * ioredis `maxRetriesPerRequest` (default 20). The fold sets 1: while Redis
   * is down a command then fails within a reconnect or two instead of ~20 s,
   * and the fold's own loop keeps the group heartbeat and the outage clock.
   */
  maxRetriesPerRequest?: number | undefined;
  /**
   * ioredis `commandTimeout`: a command without a reply by then fails (a hung
   * Redis answers nothing and closes nothing). The fold's version checks make
   * a timed-out write that lands later harmless.
   */
  commandTimeoutMs?: number | undefined;
  /**
   * ioredis auto-pipelining on one node (default on; a cluster never has it,
   * see redisClientPlan). The fold's writer turns it off and coalesces its
   * writes itself (write-coalescing.ts); the replay's build writes each command
   * as it is planned (consumers/replay/replay-redis.ts).
   */
  autoPipelining?: boolean | undefined;
}

/** The Redis part of the settings, for connectRedis: `connectRedis(redisClientSettings(settings))`. */
export function redisClientSettings(settings: {
  redisUrl: string;
  redisPassword?: { reveal(): string } | undefined;
  redisTlsCa?: { pem: string } | undefined;
  redisMaxRetriesPerRequest?: number | undefined;
}): RedisConnection {
  return { url: settings.redisUrl, password: settings.redisPassword, tlsCa: settings.redisTlsCa?.pem, maxRetriesPerRequest: settings.redisMaxRetriesPerRequest };
}

/** redisClientSettings for a reader (ProjectionReader): no INFO ready check, see RedisConnection.reader. */
export function readerClientSettings(settings: Parameters<typeof redisClientSettings>[0]): RedisConnection {
  return { ...redisClientSettings(settings), reader: true };
}

/** The ioredis client a connection becomes: its constructor arguments, without connecting. */
export type RedisClientPlan =
  | { kind: "node"; url: string; options: RedisOptions }
  | { kind: "cluster"; seeds: { host: string; port: number }[]; options: ClusterOptions };

/** What the store, the reader and the workers accept. */
export type RedisClient = Redis | Cluster;


/**
 * A single-node client for redis:// and rediss://, a Cluster client for
 * redis+cluster:// and rediss+cluster://. Takes a URL, or a RedisConnection
 * (URL, password from a file, TLS CA) from `redisClientSettings(settings)`.
 */
export function connectRedis(target: string | RedisConnection): RedisClient {
  const plan = redisClientPlan(target);
  if (plan.kind === "cluster") assertFcallRouting();
  const client = plan.kind === "node" ? new Redis(plan.url, plan.options) : new Cluster(plan.seeds, plan.options);
  // Connection errors surface on the commands that fail (and are retried there);
  // without a listener ioredis would also print each reconnect attempt.
  client.on("error", () => undefined);
  return client;
}

/** Redis did not answer in time at start, or refused the connection (a retry later may help). */
export class RedisUnavailableError extends MufoldError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { retriable: true, cause: options.cause });
  }
}

/** Redis refused the credentials (a retry will not help). */
export class RedisAuthError extends MufoldError {}

const AUTH_FAILURE = /\b(WRONGPASS|NOAUTH)\b|ERR invalid password|invalid username-password/;

/** Whether a connection error is Redis refusing the credentials. */
export function isAuthFailure(err: unknown): boolean {
  return err instanceof Error && AUTH_FAILURE.test(err.message);
}

/**
 * Wait until `client` is ready, at most `timeoutMs`: a RedisUnavailableError
 * naming `endpoint` (and the last connection error) on timeout, a
 * RedisAuthError as soon as Redis refuses the credentials. `refusedIsFinal`:
 * a RedisUnavailableError as soon as the port refuses the connection (one
 * node; a cluster's seeds do not report it), instead of waiting for it to open.
 */
export function waitForRedis(client: RedisClient, timeoutMs: number, endpoint: string, options: { refusedIsFinal?: boolean } = {}): Promise<void> {
  if (client.status === "ready") return Promise.resolve();
  return new Promise((resolve, reject) => {
    let last: Error | undefined;
    const finish = (err?: Error) => {
      clearTimeout(timer);
      client.off("ready", onReady);
      client.off("error", onError);
      client.off("node error", onError);
      if (err === undefined) resolve();
      else reject(err);
    };
    const onReady = () => finish();
    const onError = (err: Error) => {
      last = err;
      if (isAuthFailure(err)) finish(new RedisAuthError(`Redis at ${endpoint} refused the credentials: ${err.message}`));
      else if (options.refusedIsFinal === true && (err as NodeJS.ErrnoException).code === "ECONNREFUSED") {
        finish(new RedisUnavailableError(`Redis at ${endpoint} refused the connection: ${err.message}`, { cause: err }));
      }
    };
    const timer = setTimeout(() => {
      const why = last === undefined ? "no answer" : last.message;
      finish(new RedisUnavailableError(`cannot reach Redis at ${endpoint} within ${timeoutMs} ms: ${why}`));
    }, timeoutMs);
    client.on("ready", onReady);
    client.on("error", onError);
    client.on("node error", onError);
  });
}

/** connectRedis, then wait for it to be ready (waitForRedis, with its options); on failure the client is closed. */
export async function openRedis(target: RedisConnection, timeoutMs: number, options: { refusedIsFinal?: boolean } = {}): Promise<RedisClient> {
  const client = connectRedis({ ...target, connectTimeoutMs: timeoutMs });
  try {
    await waitForRedis(client, timeoutMs, redactRedisUrl(target.url), options);
    return client;
  } catch (err) {
    client.disconnect();
    throw err;
  }
}

const reveal = (p: PasswordValue | undefined): string | undefined => (p === undefined ? undefined : typeof p === "string" ? p : p.reveal());

/**
 * The ioredis options of a connection. A one-node URL loses its user and
 * password, which become the `username`/`password` options (ioredis would let
 * a URL's empty password win over the option).
 */
export function redisClientPlan(target: string | RedisConnection): RedisClientPlan {
  const { url, password: extraPassword, tlsCa, connectTimeoutMs, reader, maxRetriesPerRequest, autoPipelining } = typeof target === "string" ? { url: target } : target;
  const retries = maxRetriesPerRequest ?? settingDefault("redisMaxRetriesPerRequest");
  const commandTimeout = typeof target === "string" || target.commandTimeoutMs === undefined ? {} : { commandTimeout: target.commandTimeoutMs };
  const filePassword = reveal(extraPassword);
  // A bounded connect also closes promptly: ioredis would keep a socket that never connected for 2 s.
  const timeout = connectTimeoutMs === undefined ? {} : { connectTimeout: connectTimeoutMs, disconnectTimeout: 200 };
  // ioredis's ready check is INFO; a reader may not run it (ioredis would warn on stderr and leave an ACL LOG entry).
  const readyCheck = reader === true ? { enableReadyCheck: false } : {};
  if (!isClusterUrl(url)) {
    const options: RedisOptions = { maxRetriesPerRequest: retries, enableAutoPipelining: autoPipelining ?? true, lazyConnect: false, ...commandTimeout, ...timeout, ...readyCheck };
    const tls = /^rediss:\/\//i.test(url);
    if (tlsCa !== undefined) {
      if (!tls) throw new MufoldError(`a TLS CA was given for a non-TLS Redis URL: ${redact(url)}`);
      options.tls = { ca: [tlsCa] };
    }
    let bare = url;
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined; // not a WHATWG URL: ioredis parses it as before
    }
    if (parsed !== undefined && (parsed.username !== "" || parsed.password !== "")) {
      if (parsed.username !== "") options.username = decodeURIComponent(parsed.username);
      if (parsed.password !== "") options.password = decodeURIComponent(parsed.password);
      parsed.username = "";
      parsed.password = "";
      bare = parsed.toString();
    }
    if (filePassword !== undefined) {
      if (options.password !== undefined) throw new MufoldError(`the Redis URL already has a password: ${redact(url)}`);
      options.password = filePassword;
    }
    return { kind: "node", url: bare, options };
  }
  const { tls, seeds, username, password: urlPassword } = parseClusterUrl(url);
  if (tlsCa !== undefined && !tls) throw new MufoldError(`a TLS CA was given for a non-TLS Redis URL: ${redact(url)}`);
  if (filePassword !== undefined && urlPassword !== undefined) throw new MufoldError(`the Redis URL already has a password: ${redact(url)}`);
  const password = urlPassword ?? filePassword;
  const options: ClusterOptions = {
    // Not auto-pipelined: ioredis gives up on a cluster pipeline whose commands got
    // different MOVED replies (a restarted master), while a single command follows
    // its MOVED and re-adds the node. Commands still share each node's connection
    // without waiting for replies (measured: no slower on the fold and the replay).
    enableAutoPipelining: false,
    // Notice topology changes (restart, failover, resharding) without waiting for a redirect.
    slotsRefreshInterval: 5000,
    lazyConnect: false,
    scaleReads: "master",
    redisOptions: {
      maxRetriesPerRequest: retries,
      ...commandTimeout,
      ...timeout,
      ...readyCheck,
      ...(username !== undefined ? { username } : {}),
      ...(password !== undefined ? { password } : {}),
      ...(tls ? { tls: tlsCa !== undefined ? { ca: [tlsCa] } : {} } : {}),
    },
  };
  return { kind: "cluster", seeds, options };
}

export function isCluster(redis: RedisClient): redis is Cluster {
  return redis.isCluster;
}

/**
 * The nodes that hold data: every master of a cluster (once the slot map is
 * known), or the one node. Use it for anything that must reach all of them
 * (FUNCTION LOAD, SCAN, FLUSH).
 */
export async function masterNodes(redis: RedisClient): Promise<Redis[]> {
  if (!isCluster(redis)) return [redis];
  // A command waits for the slot map; until then nodes() is empty.
  if (redis.status !== "ready") await redis.ping();
  // Refresh it first: a master that dropped its connection (restart) leaves the pool until
  // the next refresh. A failed refresh keeps the current map.
  await new Promise<void>((resolve) => redis.refreshSlotsCache(() => resolve()));
  const masters = redis.nodes("master");
  if (masters.length === 0) throw new MufoldError("the Redis Cluster reports no master nodes");
  return masters;
}

let routingChecked = false;

/**
 * ioredis routes a cluster command by the slot of its first key, and for
 * FCALL/FCALL_RO it finds the keys after `numkeys` (@ioredis/commands
 * `getKeyIndexes`, which auto-pipelining uses too). Fail loudly if an ioredis
 * upgrade ever stops doing that, rather than send calls to a random node.
 */
export function assertFcallRouting(): void {
  if (routingChecked) return;
  const [first, second] = identityKeys("mufold", 1, "mur_routing_check");
  const expected = new Command("HGET", [first!, META_FIELDS.version]).getSlot();
  for (const name of ["FCALL", "FCALL_RO"]) {
    const slot = new Command(name, ["mufold_read_v1", 2, first!, second!, "arg"]).getSlot();
    if (slot === null || slot !== expected) {
      throw new MufoldError(`this ioredis version does not route ${name} by its first key (slot ${String(slot)}, expected ${String(expected)}): Redis Cluster is unsupported with it`);
    }
  }
  routingChecked = true;
}
