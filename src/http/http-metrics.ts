/** The server's own metrics: mufold_http_requests_total and mufold_http_request_seconds, by route. */
import { Counter, Histogram, type Registry } from "prom-client";
import type { RouteName } from "./router.js";

export interface HttpMetrics {
  /** Count one answered request and its duration. */
  observe(route: RouteName, method: string | undefined, status: number, seconds: number): void;
}

/** On a registry that has them already (another server on the same registry), the same metrics are reused. */
export function httpMetrics(registry: Registry): HttpMetrics {
  const requests =
    (registry.getSingleMetric("mufold_http_requests_total") as Counter<"route" | "method" | "code"> | undefined) ??
    new Counter({
      name: "mufold_http_requests_total",
      help: "HTTP requests answered, by route, method and status code.",
      labelNames: ["route", "method", "code"] as const,
      registers: [registry],
    });
  const seconds =
    (registry.getSingleMetric("mufold_http_request_seconds") as Histogram<"route"> | undefined) ??
    new Histogram({
      name: "mufold_http_request_seconds",
      help: "Time to answer an HTTP request, by route.",
      labelNames: ["route"] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    });
  return {
    observe(route, method, status, elapsed) {
      // Any other method is "other": a client cannot grow the label set.
      requests.inc({ route, method: method === "HEAD" ? "HEAD" : method === "GET" ? "GET" : "other", code: String(status) });
      seconds.observe({ route }, elapsed);
    },
  };
}
