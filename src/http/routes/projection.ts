/**
 * GET /v1/projections/{identity}: the packet, exactly the stored bytes.
 * GET /v1/projections?agent_id=&project_id=&corpus_id=&surface_id=&retrieval_snapshot_ref=&policy_snapshot_ref=[&reducer_version=]:
 * the same, the identity computed with identityOf and echoed in X-Mufold-Identity.
 * Both carry an ETag and answer 304 to a matching If-None-Match.
 */
import { ContractError } from "../../core/index.js";
import { identityOf } from "../../client/readback.js";
import type { ProjectionSource } from "../projection-source.js";
import { taggedReply, HttpError, type Reply } from "../reply.js";
import { checkIdentity, refParam, type RequestContext } from "../request.js";

export const SCOPE_PARAMS = ["agent_id", "project_id", "corpus_id", "surface_id"] as const;

export interface ProjectionDeps {
  source: ProjectionSource;
}

export interface ProjectionByScopeDeps extends ProjectionDeps {
  /** reducer_version when the query names none. */
  reducerVersion: string;
}

export async function projection({ params: [identity], headers }: RequestContext, { source }: ProjectionDeps): Promise<Reply> {
  checkIdentity(identity!);
  return taggedReply(headers, Buffer.from(await source.packet(identity!), "utf8"));
}

export async function projectionByScope({ query, headers }: RequestContext, { source, reducerVersion }: ProjectionByScopeDeps): Promise<Reply> {
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
  const reply = taggedReply(headers, Buffer.from(await source.packet(identity), "utf8"));
  reply.headers["x-mufold-identity"] = identity;
  return reply;
}
