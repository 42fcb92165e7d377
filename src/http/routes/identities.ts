/** GET /v1/identities?limit=&cursor=: the live generation's identities in sorted order, a page at a time. */
import { IDENTITY_PATTERN } from "../../core/index.js";
import { firstAbove } from "../../core/list-edit.js";
import type { ProjectionSource } from "../projection-source.js";
import { HttpError, jsonReply, type Reply } from "../reply.js";
import { singleParam, type RequestContext } from "../request.js";

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

export interface IdentitiesDeps {
  source: ProjectionSource;
}

export async function identities({ query }: RequestContext, { source }: IdentitiesDeps): Promise<Reply> {
  const rawLimit = singleParam(query, "limit");
  let limit = DEFAULT_PAGE;
  if (rawLimit !== undefined) {
    limit = /^\d{1,4}$/.test(rawLimit) ? Number(rawLimit) : NaN;
    if (!(limit >= 1 && limit <= MAX_PAGE)) throw new HttpError(400, "invalid_parameter", `limit must be an integer from 1 to ${MAX_PAGE}`, { parameter: "limit" });
  }
  const cursor = singleParam(query, "cursor");
  if (cursor !== undefined && cursor !== "" && !IDENTITY_PATTERN.test(cursor)) {
    throw new HttpError(400, "invalid_parameter", "cursor must be a next_cursor from a previous page", { parameter: "cursor" });
  }
  const gen = await source.generation();
  const sorted = await source.identities(gen);
  const start = cursor === undefined || cursor === "" ? 0 : firstAbove(sorted, cursor);
  const page = sorted.slice(start, start + limit);
  const more = start + limit < sorted.length;
  return jsonReply(200, { generation: gen, identities: page, next_cursor: more ? page[page.length - 1]! : null }, { "cache-control": "no-cache" });
}

