/** Which route answers a path, and the route table: 404 for no route, 405 for a method other than GET or HEAD. */
import { HttpError, type Reply } from "./reply.js";
import type { RequestContext } from "./request.js";
import { healthz, readyz, type ReadyzDeps } from "./routes/health.js";
import { identities, type IdentitiesDeps } from "./routes/identities.js";
import { metrics, type MetricsDeps } from "./routes/metrics.js";
import { explain, projection, projectionByScope, type ProjectionByScopeDeps } from "./routes/projection.js";
import { subject, type SubjectDeps } from "./routes/subject.js";

/** Everything any route needs; each route declares (and is handed) the part it reads. */
export type RouteDeps = ReadyzDeps & MetricsDeps & ProjectionByScopeDeps & SubjectDeps & IdentitiesDeps;

type Route = (ctx: RequestContext, deps: RouteDeps) => Promise<Reply>;

const ROUTES = {
  healthz,
  readyz,
  metrics,
  projection,
  projection_by_scope: projectionByScope,
  explain,
  subject,
  identities,
} satisfies Record<string, Route>;

/** A route's name, as the `route` label of the mufold_http_* metrics; "unknown" when none matches. */
export type RouteName = keyof typeof ROUTES | "unknown";

export interface MatchedRoute {
  route: RouteName;
  params: string[];
}

export function matchRoute(path: string): MatchedRoute {
  if (path === "/healthz") return { route: "healthz", params: [] };
  if (path === "/readyz") return { route: "readyz", params: [] };
  if (path === "/metrics") return { route: "metrics", params: [] };
  if (path === "/v1/identities") return { route: "identities", params: [] };
  if (path === "/v1/projections") return { route: "projection_by_scope", params: [] };
  const parts = path.split("/");
  // "", "v1", "projections", id[, "explain" | "subjects", subject]
  if (parts.length >= 4 && parts[0] === "" && parts[1] === "v1" && parts[2] === "projections") {
    if (parts.length === 4) return { route: "projection", params: [decode(parts[3]!)] };
    if (parts.length === 5 && parts[4] === "explain") return { route: "explain", params: [decode(parts[3]!)] };
    if (parts.length === 6 && parts[4] === "subjects") return { route: "subject", params: [decode(parts[3]!), decode(parts[5]!)] };
  }
  return { route: "unknown", params: [] };
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, "bad_request", "malformed percent-encoding in the path");
  }
}

/** The matched route's answer; HEAD is answered like GET (the server drops the body). */
export async function dispatch(method: string | undefined, route: RouteName, ctx: RequestContext, deps: RouteDeps): Promise<Reply> {
  if (route === "unknown") throw new HttpError(404, "not_found", "no such route");
  if (method !== "GET" && method !== "HEAD") {
    throw new HttpError(405, "method_not_allowed", `method ${method ?? "?"} is not allowed: GET or HEAD`, {}, { allow: "GET, HEAD" });
  }
  return ROUTES[route](ctx, deps);
}
