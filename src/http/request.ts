/** What a route reads from a request, and the validation of its path and query parameters. */
import type { IncomingHttpHeaders } from "node:http";
import { IDENTITY_PATTERN } from "../core/index.js";
import { OPAQUE_REF_RE } from "../core/fields.js";
import { HttpError } from "./reply.js";

/** A request as a route sees it: no socket, so routes can be called directly in tests. */
export interface RequestContext {
  query: URLSearchParams;
  /** Path segments the router captured, percent-decoded (identity[, subject_id]). */
  params: readonly string[];
  headers: IncomingHttpHeaders;
}

export function singleParam(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw new HttpError(400, "invalid_parameter", `query parameter ${name} is given more than once`, { parameter: name });
  return values[0];
}

export function refParam(query: URLSearchParams, name: string, required: boolean): string | undefined {
  const value = singleParam(query, name);
  if (value === undefined || value === "") {
    if (!required) return undefined;
    throw new HttpError(400, "missing_parameter", `missing query parameter ${name}`, { parameter: name });
  }
  if (!OPAQUE_REF_RE.test(value)) {
    throw new HttpError(400, "invalid_parameter", `query parameter ${name} must match ${OPAQUE_REF_RE.source}`, { parameter: name });
  }
  return value;
}

export function checkIdentity(identity: string): void {
  if (!IDENTITY_PATTERN.test(identity)) throw new HttpError(400, "malformed_identity", `identity must match ${IDENTITY_PATTERN.source}`);
}
