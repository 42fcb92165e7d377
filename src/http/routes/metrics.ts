/** GET /metrics: the registry in the Prometheus text format, 404 when the server has none. */
import type { Registry } from "prom-client";
import { HttpError, type Reply } from "../reply.js";

export interface MetricsDeps {
  registry?: Registry;
}

export async function metrics(_ctx: unknown, { registry }: MetricsDeps): Promise<Reply> {
  if (registry === undefined) throw new HttpError(404, "not_found", "metrics are not enabled");
  const text = await registry.metrics();
  return { status: 200, body: Buffer.from(text, "utf8"), headers: { "content-type": registry.contentType, "cache-control": "no-store" } };
}
