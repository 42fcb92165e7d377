/** GET /healthz (the process is up) and GET /readyz (every readiness check passes). */
import type { Logger } from "../../observability/log.js";
import type { CheckResult, Readiness } from "../readiness.js";
import { jsonReply, type Reply } from "../reply.js";

export async function healthz(): Promise<Reply> {
  return jsonReply(200, { status: "ok" });
}

export interface ReadyzDeps {
  readiness: Readiness;
  /** Told every run's results (see readinessLogger). */
  logReadiness: (results: CheckResult[]) => void;
}

export async function readyz(_ctx: unknown, { readiness, logReadiness }: ReadyzDeps): Promise<Reply> {
  const { ready, results } = await readiness.run();
  // Names and states only: why a check fails (error text of Redis, hosts…) goes to the log, not to clients.
  const checks = Object.fromEntries(results.map((r) => [r.name, r.ok ? "ok" : "failing"]));
  logReadiness(results);
  if (ready) return jsonReply(200, { status: "ready", checks });
  const failing = results.filter((r) => !r.ok).map((r) => r.name);
  return jsonReply(503, { error: `not ready: ${failing.join(", ")}`, reason: "not_ready", failing, checks });
}

/** Logs why checks fail, once per change (probes come every few seconds): one per server. */
export function readinessLogger(log: Logger | undefined): (results: CheckResult[]) => void {
  let lastFailures = "[]";
  return (results) => {
    const failing = results.filter((r) => !r.ok).map((r) => ({ check: r.name, detail: r.detail ?? "failed" }));
    const key = JSON.stringify(failing);
    if (key === lastFailures) return;
    lastFailures = key;
    if (failing.length > 0) log?.warn("not ready", { failing });
    else log?.info("ready");
  };
}
