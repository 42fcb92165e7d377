/**
 * How a command that failed ends: one line on stderr (one JSON log line for
 * the commands that log JSON) and an exit code.
 *
 *   2    usage or settings error, credentials refused, nothing to work on
 *   1    Kafka or Redis unreachable at start (or, producing, past the Kafka
 *        retry budget), or an unexpected error
 *   141  standard output closed by its reader (quiet)
 */
import { KafkaUnavailableError } from "../adapters/kafka/client.js";
import { isSaslAuthFailure } from "../adapters/kafka/errors.js";
import { RedisUnavailableError } from "../adapters/redis/connect.js";
import { MufoldError } from "../errors.js";
import { fatalLine } from "../observability/log.js";
import { UsageError } from "./args.js";
import { ClosedPipeError, EXIT_CLOSED_PIPE } from "./io.js";

export function exitCodeOf(err: unknown): number {
  if (err instanceof ClosedPipeError) return EXIT_CLOSED_PIPE;
  // Refused Kafka credentials are a configuration error wherever kafkajs raised them, as refused Redis ones are.
  if (isSaslAuthFailure(err)) return 2;
  if (err instanceof RedisUnavailableError || err instanceof KafkaUnavailableError) return 1;
  if (err instanceof MufoldError) return 2;
  return 1;
}

/** The error as one line: our own messages as they are, anything else with its class name. */
export function fatalMessage(err: unknown): string {
  const text = err instanceof MufoldError ? err.message : err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.replace(/\s*\n\s*/g, " ").trim();
}

/** Report `err` for `command` on stderr; returns the exit code. */
export function reportFatal(command: string, err: unknown, options: { json: boolean; debug?: boolean }): number {
  const code = exitCodeOf(err);
  if (code === EXIT_CLOSED_PIPE) return code;
  const hint = err instanceof UsageError ? ` (see mufold ${command} --help)` : "";
  const msg = `${fatalMessage(err)}${hint}`;
  const detail = options.debug && !(err instanceof MufoldError) ? { error: err } : {};
  if (options.json) {
    process.stderr.write(fatalLine(msg, { service: "mufold", command, exitCode: code, ...detail }));
  } else {
    process.stderr.write(`mufold ${command}: ${msg}\n`);
    if (options.debug && err instanceof Error && !(err instanceof MufoldError) && err.stack) process.stderr.write(`${err.stack}\n`);
  }
  return code;
}
