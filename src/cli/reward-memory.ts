/** `mufold reward-memory …`: the embedded reducer and the readback validator, no Kafka, no Redis. */
import { parseArgs } from "node:util";
import { canonicalJson, invalidRequest, parsePyJson, utilityProject, validateProjection, ContractError } from "../core/index.js";
import { InputReadError, readInputText, writeOut } from "./io.js";

export const REWARD_MEMORY_USAGE = `usage:
  mufold reward-memory utility-project --input FILE|- [--format json]
      Reduce {observations, scope, retrieval_snapshot_ref, policy_snapshot_ref,
      reducer_version?, previous_projection?} into a projection packet (canonical JSON).
      Exit 0 for an accepted packet, 2 for a rejected packet or an unusable request.
  mufold reward-memory validate --input FILE|-
      Run the fail-closed readback validator. Exit 0 valid, 1 invalid, 2 unusable input.
`;

async function utilityProjectCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { input: { type: "string" }, format: { type: "string", default: "json" } } });
  if (values.format !== "json") {
    await writeOut(invalidRequest(`unsupported --format ${values.format}; only json is available`).stdout + "\n");
    return 2;
  }
  if (values.input === undefined) {
    await writeOut(invalidRequest("--input FILE (or - for stdin) is required").stdout + "\n");
    return 2;
  }
  let text: string;
  try {
    text = await readInputText(values.input);
  } catch (err) {
    if (err instanceof InputReadError) {
      await writeOut(invalidRequest(err.message).stdout + "\n");
      return 2;
    }
    throw err;
  }
  const result = utilityProject(text);
  if (result.crash !== undefined) {
    await writeOut(`mufold: ${result.crash}\n`, process.stderr);
    return result.exitCode;
  }
  await writeOut(result.stdout + "\n");
  return result.exitCode;
}

async function validateCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { input: { type: "string" } } });
  if (values.input === undefined) {
    await writeOut(canonicalJson({ valid: false, error: "--input FILE (or - for stdin) is required" }) + "\n");
    return 2;
  }
  let packet;
  try {
    packet = parsePyJson(await readInputText(values.input));
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

export async function rewardMemory(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "utility-project" || sub === "utility-reduce") return utilityProjectCommand(rest);
  if (sub === "validate") return validateCommand(rest);
  process.stderr.write(REWARD_MEMORY_USAGE);
  return 2;
}
