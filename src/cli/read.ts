/** `mufold read`: one packet by identity or by scope, or the list of identities. */
import { ContractError, IDENTITY_PATTERN, parsePyJson, validateProjection } from "../core/index.js";
import { resolveSettings } from "../config/settings.js";
import { openRedis, readerClientSettings } from "../adapters/redis/connect.js";
import { AsOfNotAvailableError, ProjectionReader, identityOf } from "../client/readback.js";
import type { LogPosition } from "../fold/offset-index.js";
import { canonicalJson } from "../core/canonical-json.js";
import { UsageError, type FlagValues } from "./args.js";
import { commandFlags, stringFlag } from "./command.js";
import { writeOut } from "./io.js";
import { READ } from "./specs.js";

const SCOPE_FLAGS = ["agent", "project", "corpus", "surface", "retrieval", "policy"] as const;

export type ReadTarget = { list: true } | { list: false; identity: string; validate: boolean; asOf?: LogPosition[] };

const AS_OF_FORM = "PARTITION:OFFSET[,PARTITION:OFFSET…] with non-negative integers, e.g. 3:1200 or 0:17,5:40";

/** `--as-of-offset`: one or more partition:offset points, each partition once. */
export function parseAsOfOffset(text: string): LogPosition[] {
  const points: LogPosition[] = [];
  for (const part of text.split(",")) {
    const m = /^(\d{1,9}):(\d{1,19})$/.exec(part);
    const offset = m === null ? -1n : BigInt(m[2]!);
    if (m === null || offset > 0x7fffffffffffffffn) throw new UsageError(`invalid --as-of-offset ${shownValue(text)}: expected ${AS_OF_FORM}`);
    const partition = Number(m[1]);
    if (points.some((p) => p.partition === partition)) throw new UsageError(`invalid --as-of-offset ${shownValue(text)}: partition ${partition} is named twice`);
    points.push({ partition, offset });
  }
  return points;
}

const shownValue = (v: string) => JSON.stringify(v.length > 80 ? `${v.slice(0, 80)}…` : v);

/** What `read` was asked for, checked before it connects: one of --identity, the six scope flags, or --list. */
export function readTarget(values: FlagValues, reducerVersion: string): ReadTarget {
  const given = SCOPE_FLAGS.filter((f) => values[f] !== undefined);
  const identity = stringFlag(values, "identity");
  const modes = [identity !== undefined, given.length > 0, values.list === true].filter(Boolean).length;
  if (modes === 0) throw new UsageError(`needs --identity mur_…, the six scope flags (${SCOPE_FLAGS.map((f) => `--${f}`).join(" ")}), or --list`);
  if (modes > 1) throw new UsageError("give one of --identity, the six scope flags or --list, not several");
  const asOfText = stringFlag(values, "as-of-offset");
  if (values.list === true) {
    if (values.validate === true) throw new UsageError("--validate checks one packet: it does not go with --list");
    if (asOfText !== undefined) throw new UsageError("--as-of-offset reads one packet: it does not go with --list");
    return { list: true };
  }
  const validate = values.validate === true;
  const asOf = asOfText === undefined ? {} : { asOf: parseAsOfOffset(asOfText) };
  if (identity !== undefined) {
    if (!IDENTITY_PATTERN.test(identity)) throw new UsageError(`invalid --identity ${shownValue(identity)}: must be mur_ followed by 64 lowercase hex digits`);
    return { list: false, identity, validate, ...asOf };
  }
  const missing = SCOPE_FLAGS.filter((f) => values[f] === undefined);
  if (missing.length > 0) {
    throw new UsageError(`missing ${missing.map((f) => `--${f}`).join(", ")}: a scope needs all six of ${SCOPE_FLAGS.map((f) => `--${f}`).join(" ")}`);
  }
  const flag = (f: (typeof SCOPE_FLAGS)[number]) => stringFlag(values, f)!;
  try {
    const id = identityOf({
      scope: { agent_id: flag("agent"), project_id: flag("project"), corpus_id: flag("corpus"), surface_id: flag("surface") },
      retrieval_snapshot_ref: flag("retrieval"),
      policy_snapshot_ref: flag("policy"),
      reducer_version: reducerVersion,
    });
    return { list: false, identity: id, validate, ...asOf };
  } catch (err) {
    if (err instanceof ContractError) throw new UsageError(`invalid scope or snapshot ref: ${err.message}`);
    throw err;
  }
}

export async function readCommand(args: string[]): Promise<number> {
  const values = await commandFlags(READ, args);
  if (values === undefined) return 0;
  const settings = resolveSettings(values);
  const target = readTarget(values, settings.reducerVersion);
  const redis = await openRedis(readerClientSettings(settings), settings.connectTimeoutMs);
  try {
    const reader = new ProjectionReader(redis, settings.prefix, settings.reducerVersion, settings.topic);
    if (target.list) {
      await writeOut(canonicalJson({ generation: await reader.generation(), identities: await reader.identities() }) + "\n");
      return 0;
    }
    let packet: string | null;
    if (target.asOf !== undefined) {
      try {
        packet = (await reader.get(target.identity, { asOf: target.asOf }))?.text ?? null;
      } catch (err) {
        if (!(err instanceof AsOfNotAvailableError)) throw err;
        process.stderr.write(`mufold read: ${err.message}\n`);
        return 4;
      }
    } else packet = await reader.read(target.identity);
    if (packet === null) {
      process.stderr.write(`mufold read: no projection for identity ${target.identity}\n`);
      return 3;
    }
    if (target.validate) {
      try {
        validateProjection(parsePyJson(packet));
      } catch (err) {
        if (!(err instanceof ContractError)) throw err;
        process.stderr.write(`mufold read: packet for ${target.identity} failed readback validation: ${err.message}\n`);
        return 1;
      }
    }
    await writeOut(packet + "\n");
    return 0;
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}
