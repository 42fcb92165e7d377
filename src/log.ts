/** Structured JSON-lines logs on stderr, with levels (MUFOLD_LOG_LEVEL: debug, info, warn, error, silent). */
const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 } as const;
export type LogLevel = keyof typeof LEVELS;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function createLogger(base: Record<string, unknown> = {}, level: LogLevel = (process.env.MUFOLD_LOG_LEVEL as LogLevel) ?? "info"): Logger {
  const threshold = LEVELS[level] ?? LEVELS.info;
  const emit = (lvl: Exclude<LogLevel, "silent">, msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS[lvl] < threshold) return;
    const line = { time: new Date().toISOString(), level: lvl, msg, ...base, ...fields };
    process.stderr.write(JSON.stringify(line, (_k, v) => (typeof v === "bigint" ? v.toString() : v instanceof Error ? { name: v.name, message: v.message } : v)) + "\n");
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (fields) => createLogger({ ...base, ...fields }, level),
  };
}
