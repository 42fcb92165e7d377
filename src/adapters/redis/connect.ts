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
 * to the master that owns that slot (see `store.ts`). Reads go to masters
 * (`scaleReads: "master"`): a cluster without replicas serves everything.
 * Start a local one with infra/redis-cluster/start.sh (127.0.0.1:7100-7102).
 *
 * Security (docs/security.md): the user and password of the URL become the
 * ioredis `username`/`password` options (AUTH user password: a Redis ACL
 * user); REDIS_PASSWORD_FILE supplies the password instead; a CA from
 * REDIS_TLS_CA becomes `tls: { ca }` for rediss:// and rediss+cluster://.
 * `redisClientSettings(settings)` gathers them for `connectRedis`.
 */
import { Cluster, Command, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import { MufoldError } from "../../errors.js";

/** A password held out of sight (config.ts's Secret), or a plain string. */
export type PasswordValue = string | { reveal(): string };

/** What connectRedis needs beyond the URL. */
export interface RedisConnection {
  url: string;
  /** The password when it is not in the URL (REDIS_PASSWORD_FILE). */
  password?: PasswordValue | undefined;
  /** PEM text of the CA certificate(s) of Redis (TLS URLs only). */
  tlsCa?: string | undefined;
}

/** The Redis part of the settings, for connectRedis: `connectRedis(redisClientSettings(settings))`. */
export function redisClientSettings(settings: { redisUrl: string; redisPassword?: { reveal(): string } | undefined; redisTlsCa?: { pem: string } | undefined }): RedisConnection {
  return { url: settings.redisUrl, password: settings.redisPassword, tlsCa: settings.redisTlsCa?.pem };
}

/** The ioredis client a connection becomes: its constructor arguments, without connecting. */
export type RedisClientPlan =
  | { kind: "node"; url: string; options: RedisOptions }
  | { kind: "cluster"; seeds: { host: string; port: number }[]; options: ClusterOptions };

/** What the store, the reader and the workers accept. */
export type RedisClient = Redis | Cluster;

export interface ClusterUrl {
  tls: boolean;
  seeds: { host: string; port: number }[];
  username: string | undefined;
  password: string | undefined;
}

const CLUSTER_SCHEME = /^(rediss?)\+cluster:\/\//;

export function isClusterUrl(url: string): boolean {
  return CLUSTER_SCHEME.test(url);
}

/** Parse `redis+cluster://[user:password@]host:port[,host:port…]` (or `rediss+cluster://`). */
export function parseClusterUrl(url: string): ClusterUrl {
  const scheme = CLUSTER_SCHEME.exec(url);
  if (scheme === null) throw new MufoldError(`not a cluster URL (redis+cluster:// or rediss+cluster://): ${redact(url)}`);
  let rest = url.slice(scheme[0].length).replace(/\/$/, "");
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf("@");
  if (at >= 0) {
    const auth = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = auth.indexOf(":");
    const user = decodeURIComponent(colon >= 0 ? auth.slice(0, colon) : auth);
    username = user === "" ? undefined : user;
    password = colon >= 0 ? decodeURIComponent(auth.slice(colon + 1)) : undefined;
    if (password === "") password = undefined;
  }
  const seeds = rest.split(",").map((seed) => {
    const m = /^([^\s:/@,]+):(\d{1,5})$/.exec(seed.trim());
    const port = m === null ? NaN : Number(m[2]);
    if (m === null || port < 1 || port > 65535) throw new MufoldError(`cluster seed ${JSON.stringify(seed)} in ${redact(url)} is not host:port`);
    return { host: m[1]!, port };
  });
  return { tls: scheme[1] === "rediss", seeds, username, password };
}

/** The URL without its password, for messages. */
function redact(url: string): string {
  return url.replace(/\/\/([^@/]*):[^@/]*@/, "//$1:***@");
}

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

const reveal = (p: PasswordValue | undefined): string | undefined => (p === undefined ? undefined : typeof p === "string" ? p : p.reveal());

/**
 * The ioredis options of a connection. A one-node URL loses its user and
 * password, which become the `username`/`password` options (ioredis would let
 * a URL's empty password win over the option).
 */
export function redisClientPlan(target: string | RedisConnection): RedisClientPlan {
  const { url, password: extraPassword, tlsCa } = typeof target === "string" ? { url: target } : target;
  const filePassword = reveal(extraPassword);
  if (!isClusterUrl(url)) {
    const options: RedisOptions = { maxRetriesPerRequest: 20, enableAutoPipelining: true, lazyConnect: false };
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
      maxRetriesPerRequest: 20,
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
  const first = "mufold:g1:{mur_routing_check}:m";
  const expected = new Command("HGET", [first, "v"]).getSlot();
  for (const name of ["FCALL", "FCALL_RO"]) {
    const slot = new Command(name, ["mufold_read_v1", 2, first, "mufold:g1:{mur_routing_check}:d", "arg"]).getSlot();
    if (slot === null || slot !== expected) {
      throw new MufoldError(`this ioredis version does not route ${name} by its first key (slot ${String(slot)}, expected ${String(expected)}): Redis Cluster is unsupported with it`);
    }
  }
  routingChecked = true;
}
