/**
 * The request contract of `reward-memory utility-project` (the reference
 * CLI's input checks and exit codes) as a pure function of the input text.
 * The process wrapper in src/cli only reads the file and writes stdout.
 */
import { canonicalJson } from "./canonical-json.js";
import { ContractError } from "./errors.js";
import { DEFAULT_REDUCER_VERSION } from "./identity.js";
import { observationListReader } from "./observation-reader.js";
import { PyJsonDecodeError, PyRecursionError, PyValueError, parsePyJsonWith } from "./pyjson-parse.js";
import { pyStrip } from "./pystr.js";
import { isPyObject, pySorted, type PyObject, type PyValue } from "./pyvalue.js";
import { assembleParts, assemblePartsLine, computeParts, invalidRequestJson, type PartsView } from "./packet-parts.js";
import { prepareReduction, type ReduceInput } from "./reducer.js";

export interface CommandResult {
  exitCode: number;
  /** One line of canonical JSON, without the trailing newline (empty when the command crashed). */
  stdout: string;
  /** Set when the reference would crash with a traceback (exit 1) rather than answer. */
  crash?: string;
}

const REQUIRED = ["observations", "scope", "retrieval_snapshot_ref", "policy_snapshot_ref"] as const;
const ALLOWED: ReadonlySet<string> = new Set([...REQUIRED, "reducer_version", "previous_projection"]);

class RequestError extends Error {}

export function invalidRequest(message: string): CommandResult {
  return { exitCode: 2, stdout: invalidRequestJson(message) };
}

function requestOf(source: PyObject): {
  observations: PyValue;
  scope: PyValue;
  retrieval: string;
  policy: string;
  reducerVersion: string;
  previous: PyValue | null;
} {
  const has = (k: string): boolean => Object.prototype.hasOwnProperty.call(source, k);
  const missing = pySorted(REQUIRED.filter((k) => !has(k))); // the reference sorts them
  const unexpected = pySorted(Object.keys(source).filter((k) => !ALLOWED.has(k)));
  if (missing.length) throw new RequestError("utility projection input is missing: " + missing.join(", "));
  if (unexpected.length) throw new RequestError("utility projection input contains unsupported fields: " + unexpected.join(", "));
  const observations = source.observations!;
  if (!Array.isArray(observations)) throw new RequestError("observations must be a list");
  const scope = source.scope!;
  if (!isPyObject(scope)) throw new RequestError("scope must be an object");
  const retrieval = source.retrieval_snapshot_ref;
  if (typeof retrieval !== "string") throw new RequestError("retrieval_snapshot_ref must be a string");
  const policy = source.policy_snapshot_ref;
  if (typeof policy !== "string") throw new RequestError("policy_snapshot_ref must be a string");
  const previous = has("previous_projection") ? source.previous_projection! : null;
  if (previous !== null && !isPyObject(previous)) throw new RequestError("previous_projection must be an object");
  let reducerVersion = DEFAULT_REDUCER_VERSION;
  if (has("reducer_version")) {
    const v = source.reducer_version;
    if (typeof v !== "string" || pyStrip(v) === "") throw new RequestError("reducer_version must be a non-empty string when provided");
    reducerVersion = v;
  }
  return { observations, scope, retrieval, policy, reducerVersion, previous };
}

/** The reducer's packet (through the same parts the fold stores): canonical JSON, or the parts (made on read) to assemble it from, once, as text or as bytes. */
type Reduced = { ok: boolean; json: string } | { ok: boolean; parts: PartsView };

function reduceToParts(input: ReduceInput): Reduced {
  const prepared = prepareReduction(input);
  if (prepared.kind === "packet") return { json: canonicalJson(prepared.packet), ok: prepared.packet.ok === true };
  const parts = computeParts(prepared.context, prepared.state, undefined, "on read");
  return { parts, ok: parts.rejected === null };
}

/** The command's outcome before its packet is written out: a packet, or the text of an invalid request or a crash. */
type Outcome = { exitCode: number; reduced: Reduced } | { exitCode: number; text: string; crash?: string };

function outcomeOf(inputText: string): Outcome {
  let reduced: Reduced;
  try {
    // Plain observations are read, validated and fingerprinted while parsing.
    const source = parsePyJsonWith(inputText, observationListReader);
    if (!isPyObject(source)) throw new RequestError("input JSON must contain one object");
    const req = requestOf(source);
    reduced = reduceToParts({
      observations: req.observations,
      scope: req.scope,
      retrieval_snapshot_ref: req.retrieval,
      policy_snapshot_ref: req.policy,
      reducer_version: req.reducerVersion,
      previous_projection: req.previous,
    });
  } catch (err) {
    if (err instanceof RequestError || err instanceof ContractError || err instanceof PyJsonDecodeError || err instanceof PyValueError) {
      return { exitCode: 2, text: invalidRequest(err.message).stdout };
    }
    // Python's json.loads raises RecursionError, which the reference CLI does not catch.
    if (err instanceof PyRecursionError) return { exitCode: 1, text: "", crash: `${err.name}: ${err.message}` };
    throw err;
  }
  return { exitCode: reduced.ok ? 0 : 2, reduced };
}

export function utilityProject(inputText: string): CommandResult {
  const o = outcomeOf(inputText);
  if (!("reduced" in o)) return o.crash === undefined ? { exitCode: o.exitCode, stdout: o.text } : { exitCode: o.exitCode, stdout: o.text, crash: o.crash };
  const r = o.reduced;
  return { exitCode: o.exitCode, stdout: "json" in r ? r.json : assembleParts(r.parts) };
}

/** What the CLI writes for a request: utilityProject's stdout and a newline, as UTF-8 bytes (none when it crashed). */
export interface CommandBytes {
  exitCode: number;
  stdout: Buffer;
  crash?: string;
}

/** utilityProject as the bytes the CLI writes: a packet made from parts is written as bytes once (assemblePartsLine). */
export function utilityProjectBytes(inputText: string): CommandBytes {
  const o = outcomeOf(inputText);
  if (!("reduced" in o)) {
    return o.crash === undefined ? { exitCode: o.exitCode, stdout: Buffer.from(o.text + "\n") } : { exitCode: o.exitCode, stdout: Buffer.alloc(0), crash: o.crash };
  }
  const r = o.reduced;
  return { exitCode: o.exitCode, stdout: "json" in r ? Buffer.from(r.json + "\n") : assemblePartsLine(r.parts) };
}
