/** Redis URLs as settings: the cluster URL form mufold accepts, and redaction for messages. Pure. */
import { MufoldError } from "../errors.js";

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

/** The parts of a cluster URL as written (not decoded): the credentials end at the last `@`. */
function splitClusterUrl(url: string): { scheme: string; tls: boolean; user: string | undefined; password: string | undefined; seeds: string } | null {
  const scheme = CLUSTER_SCHEME.exec(url);
  if (scheme === null) return null;
  const rest = url.slice(scheme[0].length).replace(/\/$/, "");
  const at = rest.lastIndexOf("@");
  if (at < 0) return { scheme: scheme[0], tls: scheme[1] === "rediss", user: undefined, password: undefined, seeds: rest };
  const auth = rest.slice(0, at);
  const colon = auth.indexOf(":");
  return {
    scheme: scheme[0],
    tls: scheme[1] === "rediss",
    user: colon >= 0 ? auth.slice(0, colon) : auth,
    password: colon >= 0 ? auth.slice(colon + 1) : undefined,
    seeds: rest.slice(at + 1),
  };
}

/** Parse `redis+cluster://[user:password@]host:port[,host:port…]` (or `rediss+cluster://`). */
export function parseClusterUrl(url: string): ClusterUrl {
  const parts = splitClusterUrl(url);
  if (parts === null) throw new MufoldError(`not a cluster URL (redis+cluster:// or rediss+cluster://): ${redact(url)}`);
  const decode = (s: string | undefined): string | undefined => {
    try {
      return s === undefined || s === "" ? undefined : decodeURIComponent(s);
    } catch {
      throw new MufoldError(`the user or password of ${redact(url)} is not valid percent-encoding`);
    }
  };
  const seeds = parts.seeds.split(",").map((seed) => {
    const m = /^([^\s:/@,]+):(\d{1,5})$/.exec(seed.trim());
    const port = m === null ? NaN : Number(m[2]);
    if (m === null || port < 1 || port > 65535) throw new MufoldError(`cluster seed ${JSON.stringify(seed)} in ${redact(url)} is not host:port`);
    return { host: m[1]!, port };
  });
  return { tls: parts.tls, seeds, username: decode(parts.user), password: decode(parts.password) };
}

/**
 * A Redis URL for messages: the password replaced by `***` (and the user
 * dropped with `keepUser: false`). Parsed, not pattern-matched: WHATWG URL
 * for redis:// and rediss://, the cluster parser for the +cluster schemes.
 * Whatever cannot be parsed unambiguously loses everything before its last `@`.
 */
export function redactRedisUrl(url: string, options: { keepUser?: boolean } = {}): string {
  const keepUser = options.keepUser ?? true;
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0] ?? "";
  const at = url.lastIndexOf("@");
  const hideAll = () => (at < 0 ? url : `${scheme}${keepUser ? "***@" : ""}${url.slice(at + 1)}`);
  const cluster = splitClusterUrl(url);
  if (cluster !== null) {
    const creds = !keepUser || cluster.user === undefined ? "" : `${cluster.user}${cluster.password !== undefined ? ":***" : ""}@`;
    return `${cluster.scheme}${creds}${cluster.seeds}`;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return hideAll();
  }
  // An '@' outside the credentials means the parse did not see them as such.
  if (`${parsed.pathname}${parsed.search}${parsed.hash}`.includes("@") || (at >= 0 && parsed.username === "" && parsed.password === "")) return hideAll();
  if (parsed.password !== "") parsed.password = keepUser ? "***" : "";
  if (!keepUser) parsed.username = "";
  for (const key of [...parsed.searchParams.keys()]) if (/pass|secret|token|auth/i.test(key)) parsed.searchParams.set(key, "***");
  return parsed.toString();
}

const redact = (url: string): string => redactRedisUrl(url);
