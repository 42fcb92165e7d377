/**
 * Command-line parsing for every command: `--help`/`-h` anywhere, typed
 * flags (`--name value`, `--name=value`), and one-line errors (UsageError,
 * exit 2) for an unknown or ambiguous option, a missing value or a stray
 * argument.
 */
import { MufoldError } from "../errors.js";

/** A command line that cannot be run as written: exit 2, one line. */
export class UsageError extends MufoldError {}

export interface FlagSpec {
  type: "string" | "boolean";
}

export interface CommandSpec {
  /** As typed after `mufold`: "fold", "reward-memory utility-project", … */
  name: string;
  /** The whole `--help` text. */
  usage: string;
  flags: Record<string, FlagSpec>;
  /** Accept unique prefixes (`--inp` for `--input`), as Python's argparse does. */
  abbreviations?: boolean;
}

export type FlagValues = Record<string, string | boolean | undefined>;
export type ParsedArgs = { help: true } | { help: false; values: FlagValues };

const HELP = new Set(["--help", "-h"]);
/** A value that may follow an option although it starts with "-" (argparse's rule). */
const DASH_VALUE = /^(-|-\d+(\.\d*)?|-\.\d+)$/;

function resolveName(spec: CommandSpec, name: string): string {
  if (Object.hasOwn(spec.flags, name)) return name;
  if (spec.abbreviations && name !== "") {
    const matches = Object.keys(spec.flags).filter((f) => f.startsWith(name));
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1) throw new UsageError(`ambiguous option --${name}: could be ${matches.map((m) => `--${m}`).join(", ")}`);
  }
  throw new UsageError(`unknown option --${name}`);
}

function isHelp(spec: CommandSpec, token: string): boolean {
  if (HELP.has(token)) return true;
  // argparse also takes a unique prefix of --help (none of our flags starts with "h").
  return spec.abbreviations === true && token.length >= 3 && "--help".startsWith(token) && !Object.keys(spec.flags).some((f) => `--${f}`.startsWith(token));
}

/** Parse `args` against `spec`; throws UsageError. A help flag anywhere wins, as in argparse. */
export function parseCommandArgs(spec: CommandSpec, args: readonly string[]): ParsedArgs {
  const end = args.indexOf("--");
  const options = end < 0 ? args : args.slice(0, end);
  if (options.some((a) => isHelp(spec, a))) return { help: true };
  if (end >= 0 && end < args.length - 1) throw new UsageError(`unexpected argument ${JSON.stringify(args[end + 1])}`);
  const values: FlagValues = {};
  for (let i = 0; i < options.length; i++) {
    const token = options[i]!;
    if (!token.startsWith("--")) {
      throw new UsageError(token.startsWith("-") && token !== "-" ? `unknown option ${token}` : `unexpected argument ${JSON.stringify(token)}`);
    }
    const eq = token.indexOf("=");
    const name = resolveName(spec, token.slice(2, eq < 0 ? undefined : eq));
    if (spec.flags[name]!.type === "boolean") {
      if (eq >= 0) throw new UsageError(`option --${name} takes no value`);
      values[name] = true;
      continue;
    }
    if (eq >= 0) {
      values[name] = token.slice(eq + 1);
      continue;
    }
    const next = options[i + 1];
    if (next === undefined || (next.startsWith("-") && !DASH_VALUE.test(next))) {
      throw new UsageError(`option --${name} needs a value${next === undefined ? "" : ` (write --${name}=${next} for a value that starts with -)`}`);
    }
    values[name] = next;
    i++;
  }
  return { help: false, values };
}
