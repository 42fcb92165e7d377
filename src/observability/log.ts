/**
 * Structured JSON-lines logs on stderr, with levels (the logLevel setting,
 * MUFOLD_LOG_LEVEL: debug, info, warn, error, silent; anything else is
 * refused), on pino.
 *
 * One line per event: `{"level":"info","time":"<ISO 8601>",<base fields>,<child fields>,<event fields>,"msg":"…"}`.
 * bigint values are written as decimal strings (Kafka offsets stay exact),
 * Errors as `{name, message, code?, stack?, cause?}`, Maps as objects, Sets as
 * arrays; cycles become "[Circular]".
 */
import { pino, type Logger as PinoLogger } from "pino";
import { LOG_LEVELS, settingFromEnv, type LogLevel } from "../config/settings.js";
import { MufoldError } from "../errors.js";

export { LOG_LEVELS, type LogLevel };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

const MAX_DEPTH = 8;

function serializeError(err: Error, seen: WeakSet<object>, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = { name: err.name, message: err.message };
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" || typeof code === "number") out.code = code;
  const retriable = (err as { retriable?: unknown }).retriable;
  if (typeof retriable === "boolean") out.retriable = retriable;
  if (err.stack !== undefined) out.stack = err.stack;
  if (err.cause !== undefined) out.cause = loggable(err.cause, seen, depth + 1);
  return out;
}

/** A JSON-safe copy of a value: bigint → string, Error → plain object, Map/Set → object/array. */
function loggable(value: unknown, seen: WeakSet<object>, depth: number): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value === null || typeof value !== "object") return value;
  if (seen.has(value)) return "[Circular]";
  if (depth > MAX_DEPTH) return "[Object]";
  seen.add(value);
  try {
    if (value instanceof Error) return serializeError(value, seen, depth);
    if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
    if (Buffer.isBuffer(value)) return { type: "Buffer", length: value.length };
    if (Array.isArray(value)) return value.map((v) => loggable(v, seen, depth + 1));
    if (value instanceof Map) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of value) out[String(k)] = loggable(v, seen, depth + 1);
      return out;
    }
    if (value instanceof Set) return [...value].map((v) => loggable(v, seen, depth + 1));
    if (typeof (value as { toJSON?: unknown }).toJSON === "function") return loggable((value as { toJSON(): unknown }).toJSON(), seen, depth + 1);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = loggable(v, seen, depth + 1);
    return out;
  } finally {
    seen.delete(value);
  }
}

function loggableFields(fields: Record<string, unknown>): Record<string, unknown> {
  return loggable(fields, new WeakSet(), 0) as Record<string, unknown>;
}

function wrap(p: PinoLogger): Logger {
  const at =
    (lvl: Exclude<LogLevel, "silent">) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      if (fields === undefined) p[lvl](msg);
      else p[lvl](fields, msg);
    };
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: (fields) => wrap(p.child(loggableFields(fields))),
  };
}

function isLevel(level: unknown): level is LogLevel {
  return (LOG_LEVELS as readonly unknown[]).includes(level);
}

/**
 * The logLevel setting (MUFOLD_LOG_LEVEL, default info) alone, by the registry's rule: read before a
 * command parses its flags. An unknown level is a MufoldError naming the variable.
 */
export function logLevelFromEnv(env: NodeJS.ProcessEnv = process.env): LogLevel {
  return settingFromEnv("logLevel", env);
}

/**
 * One log line in the logger's shape, written whatever the level (a fatal
 * error must be seen even with MUFOLD_LOG_LEVEL=silent).
 */
export function fatalLine(msg: string, fields: Record<string, unknown> = {}): string {
  return JSON.stringify({ level: "fatal", time: new Date().toISOString(), ...loggableFields(fields), msg }) + "\n";
}

export function createLogger(base: Record<string, unknown> = {}, level: LogLevel = logLevelFromEnv()): Logger {
  if (!isLevel(level)) throw new MufoldError(`invalid log level ${JSON.stringify(level)}: must be one of ${LOG_LEVELS.join(", ")}`);
  const root = pino(
    {
      level,
      base: null,
      messageKey: "msg",
      timestamp: pino.stdTimeFunctions.isoTime,
      // Logged Errors are already plain objects (formatters.log runs first): keep pino's `err` serializer off them.
      serializers: { err: (value: unknown) => value },
      formatters: {
        level: (label) => ({ level: label }),
        log: (obj) => loggableFields(obj),
      },
    },
    // Through process.stderr itself (synchronous for files and pipes), so a line is out before the process exits.
    { write: (line: string) => void process.stderr.write(line) },
  );
  return wrap(Object.keys(base).length === 0 ? root : root.child(loggableFields(base)));
}
