/** Typed values of command flags (and their environment variables), checked before any work. */
import { UsageError } from "./args.js";

const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** A TCP port, 0–65535; `source` names the flag or variable it came from. */
export function parsePort(raw: string, source: string): number {
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 0 && port <= 65535)) throw new UsageError(`invalid ${source} = ${JSON.stringify(raw)}: must be a port number from 0 to 65535`);
  return port;
}

/** A listening host: not empty. */
export function parseHost(raw: string, source: string): string {
  if (raw.trim() === "") throw new UsageError(`invalid ${source}: empty`);
  return raw;
}

export interface Range {
  min: number;
  max?: number;
}

function within(n: number, range: Range): boolean {
  return n >= range.min && (range.max === undefined || n <= range.max);
}

function describe(range: Range): string {
  return range.max === undefined ? `at least ${range.min}` : `from ${range.min} to ${range.max}`;
}

/** `--name`: an integer in range, or `fallback` when absent. */
export function intFlag(raw: string | boolean | undefined, name: string, fallback: number, range: Range): number {
  if (raw === undefined) return fallback;
  const n = typeof raw === "string" && INTEGER.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || !within(n, range)) throw new UsageError(`invalid --${name} = ${JSON.stringify(raw)}: must be an integer ${describe(range)}`);
  return n;
}

/** `--name`: a decimal number in range, or `fallback` when absent. */
export function numberFlag(raw: string | boolean | undefined, name: string, fallback: number, range: Range): number {
  if (raw === undefined) return fallback;
  const n = typeof raw === "string" && DECIMAL.test(raw) ? Number(raw) : NaN;
  if (!Number.isFinite(n) || !within(n, range)) throw new UsageError(`invalid --${name} = ${JSON.stringify(raw)}: must be a number ${describe(range)}`);
  return n;
}

/**
 * Where to listen, from a port flag and a host flag (or MUFOLD_HTTP_PORT and
 * MUFOLD_HTTP_HOST); undefined when there is no port and no default port.
 */
export function listenAddress(
  values: Record<string, string | boolean | undefined>,
  flags: { port: string; host: string },
  defaultPort: number | undefined,
  env: NodeJS.ProcessEnv = process.env,
): { port: number; host: string } | undefined {
  const flagPort = values[flags.port];
  const port =
    typeof flagPort === "string"
      ? parsePort(flagPort, `--${flags.port}`)
      : env.MUFOLD_HTTP_PORT !== undefined
        ? parsePort(env.MUFOLD_HTTP_PORT, "MUFOLD_HTTP_PORT")
        : defaultPort;
  if (port === undefined) return undefined;
  const flagHost = values[flags.host];
  const host = typeof flagHost === "string" ? parseHost(flagHost, `--${flags.host}`) : parseHost(env.MUFOLD_HTTP_HOST ?? "127.0.0.1", "MUFOLD_HTTP_HOST");
  return { port, host };
}
