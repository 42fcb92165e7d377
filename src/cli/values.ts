/** Typed values of command flags, checked before any work (settings are checked by src/config/settings.ts). */
import type { Settings } from "../config/settings.js";
import { UsageError } from "./args.js";

const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

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
 * Where to listen: the httpPort and httpHost settings (checked once, by the registry in
 * src/config/settings.ts, for fold and serve alike), or `defaultPort` when no port is set;
 * undefined when there is neither.
 */
export function listenAddress(settings: Pick<Settings, "httpPort" | "httpHost">, defaultPort: number | undefined): { port: number; host: string } | undefined {
  const port = settings.httpPort ?? defaultPort;
  return port === undefined ? undefined : { port, host: settings.httpHost };
}
