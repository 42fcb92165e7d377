/** `mufold read`: one packet by identity or by scope, or the list of identities. */
import { ContractError, IDENTITY_PATTERN, parsePyJson, validateProjection } from "../core/index.js";
import { resolveSettings } from "../config/settings.js";
import { openRedis, readerClientSettings } from "../adapters/redis/connect.js";
import { ProjectionReader, identityOf } from "../client/readback.js";
import type { LogPosition } from "../fold/offset-index.js";
import { AS_OF_TIME_FORM, parseAsOfTime, parsePositions, type AsOf } from "../client/past.js";
import { canonicalJson } from "../core/canonical-json.js";
import { UsageError, type FlagValues } from "./args.js";
import { askThePast } from "./log-check.js";
import { commandFlags, stringFlag } from "./command.js";
import { writeOut } from "./io.js";
import { READ } from "./specs.js";

const SCOPE_FLAGS = ["agent", "project", "corpus", "surface", "retrieval", "policy"] as const;

export type ReadTarget = { list: true } | { list: false; identity: string; validate: boolean; asOf?: AsOf };

/** `--as-of-offset`: one or more partition:offset points, each partition once. */
export function parseAsOfOffset(text: string, flag = "--as-of-offset"): LogPosition[] {
  const points = parsePositions(text);
  if ("error" in points) throw new UsageError(`invalid ${flag} ${shownValue(text)}: ${points.error}`);
  return points;
}

/** `--as-of-time`: an ISO 8601 date-time with its offset. */
export function parseAsOfTimeFlag(text: string, flag = "--as-of-time"): AsOf {
  if (parseAsOfTime(text) === null) throw new UsageError(`invalid ${flag} ${shownValue(text)}: expected ${AS_OF_TIME_FORM}`);
  return { time: text };
}

/** `--as-of-offset` or `--as-of-time` (not both), or undefined for neither. */
export function asOfFlags(values: FlagValues): AsOf | undefined {
  const offsets = stringFlag(values, "as-of-offset");
  const time = stringFlag(values, "as-of-time");
  if (offsets !== undefined && time !== undefined) throw new UsageError("give --as-of-offset or --as-of-time, not both");
  if (offsets !== undefined) return parseAsOfOffset(offsets);
  return time === undefined ? undefined : parseAsOfTimeFlag(time);
}

/** A point given as either form (`diff --from/--to`): a time when it has a date's dash or a T (offsets have neither), else offsets. */
export function parsePoint(text: string, flag: string): AsOf {
  return /^\d{4}-|T/.test(text) ? parseAsOfTimeFlag(text, flag) : parseAsOfOffset(text, flag);
}

const shownValue = (v: string) => JSON.stringify(v.length > 80 ? `${v.slice(0, 80)}…` : v);

/** `--identity`'s value, checked: mur_ and 64 lowercase hex digits. */
export function checkedIdentityFlag(identity: string): string {
  if (!IDENTITY_PATTERN.test(identity)) throw new UsageError(`invalid --identity ${shownValue(identity)}: must be mur_ followed by 64 lowercase hex digits`);
  return identity;
}

/** What `read` was asked for, checked before it connects: one of --identity, the six scope flags, or --list. */
export function readTarget(values: FlagValues, reducerVersion: string): ReadTarget {
  const given = SCOPE_FLAGS.filter((f) => values[f] !== undefined);
  const identity = stringFlag(values, "identity");
  const modes = [identity !== undefined, given.length > 0, values.list === true].filter(Boolean).length;
  if (modes === 0) throw new UsageError(`needs --identity mur_…, the six scope flags (${SCOPE_FLAGS.map((f) => `--${f}`).join(" ")}), or --list`);
  if (modes > 1) throw new UsageError("give one of --identity, the six scope flags or --list, not several");
  const point = asOfFlags(values);
  if (values.list === true) {
    if (values.validate === true) throw new UsageError("--validate checks one packet: it does not go with --list");
    if (point !== undefined) throw new UsageError("--as-of-offset and --as-of-time read one packet: they do not go with --list");
    return { list: true };
  }
  const validate = values.validate === true;
  const asOf = point === undefined ? {} : { asOf: point };
  if (identity !== undefined) {
    return { list: false, identity: checkedIdentityFlag(identity), validate, ...asOf };
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
      const asOf = target.asOf;
      const asked = await askThePast("read", settings, redis, reader, async () => (await reader.get(target.identity, { asOf }))?.text ?? null);
      if (asked === undefined) return 4;
      packet = asked.answer;
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
