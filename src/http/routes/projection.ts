/**
 * GET /v1/projections/{identity}: the packet, exactly the stored bytes.
 * GET /v1/projections?agent_id=&project_id=&corpus_id=&surface_id=&retrieval_snapshot_ref=&policy_snapshot_ref=[&reducer_version=]:
 * the same, the identity computed with identityOf and echoed in X-Mufold-Identity.
 * Either with as_of_offset=P:O[,P:O…] or as_of_time=ISO8601: the packet as of that point of the past, with
 * X-Mufold-As-Of-Used (the offsets used) and X-Mufold-As-Of-Deliveries.
 * GET /v1/projections/{identity}/explain[?as_of_offset=…|?as_of_time=…]: every delivery explained, canonical JSON.
 * All carry an ETag of their bytes and answer 304 to a matching If-None-Match.
 */
import { ContractError } from "../../core/index.js";
import { canonicalJson } from "../../core/canonical-json.js";
import { identityOf } from "../../client/readback.js";
import { AS_OF_OFFSET_FORM, AS_OF_TIME_FORM, parseAsOfTime, parsePositions, type AsOf } from "../../client/past.js";
import { explanationJson } from "../../client/past-json.js";
import type { ProjectionSource } from "../projection-source.js";
import { taggedReply, HttpError, type Reply } from "../reply.js";
import { checkIdentity, refParam, singleParam, type RequestContext } from "../request.js";

export const SCOPE_PARAMS = ["agent_id", "project_id", "corpus_id", "surface_id"] as const;

export interface ProjectionDeps {
  source: ProjectionSource;
}

export interface ProjectionByScopeDeps extends ProjectionDeps {
  /** reducer_version when the query names none. */
  reducerVersion: string;
}

const malformed = (parameter: string, message: string) => new HttpError(400, "malformed_as_of", message, { parameter });

/** The as-of point of the query: as_of_offset or as_of_time (not both), or undefined for neither. */
function asOfParam(query: URLSearchParams): AsOf | undefined {
  const offsets = singleParam(query, "as_of_offset");
  const time = singleParam(query, "as_of_time");
  if (offsets !== undefined && time !== undefined) {
    throw malformed("as_of_offset", `give as_of_offset (${AS_OF_OFFSET_FORM}) or as_of_time (${AS_OF_TIME_FORM}), not both`);
  }
  if (offsets !== undefined) {
    const points = parsePositions(offsets);
    if ("error" in points) {
      // parsePositions' own reason, unless it only restates the form ("partition 3 is named twice" adds to it).
      const why = points.error.includes(AS_OF_OFFSET_FORM) ? "" : `: ${points.error}`;
      throw malformed("as_of_offset", `query parameter as_of_offset must be ${AS_OF_OFFSET_FORM}${why}`);
    }
    return points;
  }
  if (time === undefined) return undefined;
  if (parseAsOfTime(time) === null) throw malformed("as_of_time", `query parameter as_of_time must be ${AS_OF_TIME_FORM}`);
  return { time };
}

/** The packet of `identity`, live or as of the query's point. */
async function packetReply({ query, headers }: RequestContext, source: ProjectionSource, identity: string): Promise<Reply> {
  const asOf = asOfParam(query);
  if (asOf === undefined) return taggedReply(headers, Buffer.from(await source.packet(identity), "utf8"));
  const past = await source.packetAsOf(identity, asOf);
  const reply = taggedReply(headers, Buffer.from(past.text, "utf8"));
  reply.headers["x-mufold-as-of-used"] = past.used.map((p) => `${p.partition}:${p.offset}`).join(",");
  reply.headers["x-mufold-as-of-deliveries"] = String(past.deliveries);
  return reply;
}

export async function projection(ctx: RequestContext, { source }: ProjectionDeps): Promise<Reply> {
  const identity = ctx.params[0]!;
  checkIdentity(identity);
  return packetReply(ctx, source, identity);
}

export async function projectionByScope(ctx: RequestContext, { source, reducerVersion }: ProjectionByScopeDeps): Promise<Reply> {
  const { query } = ctx;
  const scope: Record<string, string> = {};
  for (const name of SCOPE_PARAMS) scope[name] = refParam(query, name, true)!;
  const retrieval = refParam(query, "retrieval_snapshot_ref", true)!;
  const policy = refParam(query, "policy_snapshot_ref", true)!;
  const version = refParam(query, "reducer_version", false) ?? reducerVersion;
  let identity: string;
  try {
    identity = identityOf({
      scope: scope as { agent_id: string; project_id: string; corpus_id: string; surface_id: string },
      retrieval_snapshot_ref: retrieval,
      policy_snapshot_ref: policy,
      reducer_version: version,
    });
  } catch (err) {
    if (err instanceof ContractError) throw new HttpError(400, "invalid_parameter", err.message);
    throw err;
  }
  const reply = await packetReply(ctx, source, identity);
  reply.headers["x-mufold-identity"] = identity;
  return reply;
}

export async function explain({ params: [identity], query, headers }: RequestContext, { source }: ProjectionDeps): Promise<Reply> {
  checkIdentity(identity!);
  const explanation = await source.explain(identity!, asOfParam(query));
  return taggedReply(headers, Buffer.from(canonicalJson(explanationJson(explanation)), "utf8"));
}
