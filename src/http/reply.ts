/** What a route answers: a status, the body bytes and headers; errors are thrown as HttpError. */
import type { IncomingHttpHeaders } from "node:http";
import { etagOf } from "../core/digest.js";
import { ifNoneMatchHits } from "./etag.js";

const JSON_TYPE = "application/json; charset=utf-8";

export interface Reply {
  status: number;
  body: Buffer;
  headers: Record<string, string>;
}

/** An answer the routes give by throwing: status + JSON `{"error", "reason", ...extra}`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function jsonReply(status: number, value: unknown, headers: Record<string, string> = {}): Reply {
  return { status, body: Buffer.from(JSON.stringify(value), "utf8"), headers: { "content-type": JSON_TYPE, "cache-control": "no-store", ...headers } };
}

/** The JSON error body of an HttpError. */
export function errorReply(err: HttpError): Reply {
  return jsonReply(err.status, { error: err.message, reason: err.reason, ...err.extra }, err.headers);
}

/** A cacheable representation: 200 with its ETag, or 304 when If-None-Match matches it. */
export function taggedReply(requestHeaders: IncomingHttpHeaders, body: Buffer): Reply {
  const etag = etagOf(body);
  const headers = { "content-type": JSON_TYPE, etag, "cache-control": "no-cache" };
  if (ifNoneMatchHits(requestHeaders["if-none-match"], etag)) return { status: 304, body: Buffer.alloc(0), headers };
  return { status: 200, body, headers };
}
