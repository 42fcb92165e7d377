/** The start every command shares: its flags, or its usage on stdout for --help. */
import { parseCommandArgs, type CommandSpec, type FlagValues } from "./args.js";
import { writeOut } from "./io.js";

/** The parsed flags, or undefined once `--help` printed the usage (the command then exits 0). */
export async function commandFlags(spec: CommandSpec, args: readonly string[]): Promise<FlagValues | undefined> {
  const parsed = parseCommandArgs(spec, args);
  if (!parsed.help) return parsed.values;
  await writeOut(spec.usage);
  return undefined;
}

/** A string flag's value (a boolean flag never reaches here as a string). */
export function stringFlag(values: FlagValues, name: string): string | undefined {
  const v = values[name];
  return typeof v === "string" ? v : undefined;
}
