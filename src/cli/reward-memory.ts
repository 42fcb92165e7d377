/** `mufold reward-memory …`: the embedded reducer and the readback validator, no Kafka, no Redis. */
import { canonicalJson, invalidRequest, parsePyJson, utilityProjectBytes, validateProjection, ContractError } from "../core/index.js";
import { commandFlags, stringFlag } from "./command.js";
import { InputReadError, inputText, readInputBytes, readInputText, writeOut } from "./io.js";
import { REWARD_MEMORY_SUBCOMMANDS, UTILITY_PROJECT, VALIDATE } from "./specs.js";

export interface CommandOutput {
  /** The bytes for standard output (UTF-8): a packet is written as bytes once, not encoded again. */
  stdout: Buffer;
  stderr: string;
  exitCode: number;
}

/** What `utility-project` answers for the bytes of its input file, as the reference CLI does. */
export function utilityProjectOutput(bytes: Uint8Array): CommandOutput {
  let text: string;
  try {
    text = inputText(bytes);
  } catch (err) {
    if (err instanceof InputReadError) return invalidInput(err);
    throw err;
  }
  const result = utilityProjectBytes(text);
  if (result.crash !== undefined) return { stdout: Buffer.alloc(0), stderr: `mufold: ${result.crash}\n`, exitCode: result.exitCode };
  return { stdout: result.stdout, stderr: "", exitCode: result.exitCode };
}

function invalidInput(err: InputReadError): CommandOutput {
  return { stdout: Buffer.from(invalidRequest(err.message).stdout + "\n"), stderr: "", exitCode: 2 };
}

async function utilityProjectCommand(args: string[]): Promise<number> {
  const values = await commandFlags(UTILITY_PROJECT, args);
  if (values === undefined) return 0;
  const format = stringFlag(values, "format") ?? "json";
  const input = stringFlag(values, "input");
  if (format !== "json") {
    await writeOut(invalidRequest(`unsupported --format ${format}; only json is available`).stdout + "\n");
    return 2;
  }
  if (input === undefined) {
    await writeOut(invalidRequest("--input FILE (or - for stdin) is required").stdout + "\n");
    return 2;
  }
  let out: CommandOutput;
  try {
    out = utilityProjectOutput(await readInputBytes(input));
  } catch (err) {
    if (!(err instanceof InputReadError)) throw err;
    out = invalidInput(err);
  }
  if (out.stderr !== "") await writeOut(out.stderr, process.stderr);
  if (out.stdout.length > 0) await writeOut(out.stdout);
  return out.exitCode;
}

async function validateCommand(args: string[]): Promise<number> {
  const values = await commandFlags(VALIDATE, args);
  if (values === undefined) return 0;
  const input = stringFlag(values, "input");
  if (input === undefined) {
    await writeOut(canonicalJson({ valid: false, error: "--input FILE (or - for stdin) is required" }) + "\n");
    return 2;
  }
  let packet;
  try {
    packet = parsePyJson(await readInputText(input));
  } catch (err) {
    await writeOut(canonicalJson({ valid: false, error: (err as Error).message }) + "\n");
    return 2;
  }
  try {
    const valid = validateProjection(packet);
    await writeOut(canonicalJson({ valid: true, reducer_identity: valid.reducer_identity ?? null, status: valid.status ?? null }) + "\n");
    return 0;
  } catch (err) {
    if (!(err instanceof ContractError)) throw err;
    await writeOut(canonicalJson({ valid: false, error: err.message }) + "\n");
    return 1;
  }
}

export const REWARD_MEMORY_COMMANDS: Record<(typeof REWARD_MEMORY_SUBCOMMANDS)[number], (args: string[]) => Promise<number>> = {
  "utility-project": utilityProjectCommand,
  "utility-reduce": utilityProjectCommand,
  validate: validateCommand,
};
