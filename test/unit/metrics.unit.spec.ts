import { describe, expect, it } from "vitest";
import { register as globalRegistry } from "prom-client";
import { createFoldMetrics, createRegistry } from "../../src/observability/metrics.js";

const NAMES = [
  "mufold_records_consumed_total",
  "mufold_deliveries_applied_total",
  "mufold_duplicates_skipped_total",
  "mufold_conflicting_deliveries_total",
  "mufold_dead_letters_total",
  "mufold_cas_retries_total",
  "mufold_batch_seconds",
  "mufold_apply_seconds",
  "mufold_consumer_lag",
  "mufold_identities_cached",
  "mufold_identity_cache_bytes",
];

describe("fold metrics", () => {
  it("the exposition names every fold metric with HELP and TYPE, plus default process metrics", async () => {
    const { registry } = createFoldMetrics();
    const text = await registry.metrics();
    for (const name of NAMES) {
      expect(text).toMatch(new RegExp(`^# HELP ${name} \\S`, "m"));
      expect(text).toMatch(new RegExp(`^# TYPE ${name} (counter|gauge|histogram)$`, "m"));
    }
    expect(text).toContain("# TYPE mufold_batch_seconds histogram");
    expect(text).toContain("# TYPE mufold_consumer_lag gauge");
    expect(text).toContain("# TYPE mufold_records_consumed_total counter");
    expect(text).toContain("process_cpu_user_seconds_total");
    expect(text).toContain("nodejs_eventloop_lag_seconds");
  });

  it("counters, labelled counters, gauges and histograms record what they are given", async () => {
    const m = createFoldMetrics();
    m.recordsConsumed.inc(250);
    m.recordsConsumed.inc();
    m.deliveriesApplied.inc(200);
    m.duplicatesSkipped.inc(40);
    m.conflictingDeliveries.inc(3);
    m.casRetries.inc(2);
    m.deadLetters.inc({ reason: "value_not_json" });
    m.deadLetters.inc({ reason: "value_not_json" });
    m.deadLetters.inc({ reason: "key_missing" }, 5);
    m.consumerLag.set({ topic: "obs", partition: "0" }, 17);
    m.consumerLag.set({ topic: "obs", partition: "3" }, 0);
    m.identitiesCached.set(42);
    m.identityCacheBytes.set(43008);
    m.batchSeconds.observe(0.012);
    m.batchSeconds.observe(0.3);
    const stop = m.applySeconds.startTimer();
    stop();

    const text = await m.registry.metrics();
    expect(text).toMatch(/^mufold_records_consumed_total 251$/m);
    expect(text).toMatch(/^mufold_deliveries_applied_total 200$/m);
    expect(text).toMatch(/^mufold_duplicates_skipped_total 40$/m);
    expect(text).toMatch(/^mufold_conflicting_deliveries_total 3$/m);
    expect(text).toMatch(/^mufold_cas_retries_total 2$/m);
    expect(text).toMatch(/^mufold_dead_letters_total\{reason="value_not_json"\} 2$/m);
    expect(text).toMatch(/^mufold_dead_letters_total\{reason="key_missing"\} 5$/m);
    expect(text).toMatch(/^mufold_consumer_lag\{topic="obs",partition="0"\} 17$/m);
    expect(text).toMatch(/^mufold_consumer_lag\{topic="obs",partition="3"\} 0$/m);
    expect(text).toMatch(/^mufold_identities_cached 42$/m);
    expect(text).toMatch(/^mufold_identity_cache_bytes 43008$/m);
    expect(text).toMatch(/^mufold_batch_seconds_count 2$/m);
    expect(text).toMatch(/^mufold_batch_seconds_bucket\{le="0.025"\} 1$/m);
    expect(text).toMatch(/^mufold_batch_seconds_bucket\{le="\+Inf"\} 2$/m);
    expect(text).toMatch(/^mufold_apply_seconds_count 1$/m);

    const consumed = await m.registry.getSingleMetric("mufold_records_consumed_total")!.get();
    expect(consumed.values[0]!.value).toBe(251);
  });

  it("each call gets its own registry: no collision with another one or with prom-client's global registry", async () => {
    const a = createFoldMetrics();
    const b = createFoldMetrics({ defaultMetrics: false, labels: { worker: "w1" } });
    a.recordsConsumed.inc(5);
    expect(a.registry).not.toBe(b.registry);
    expect(await b.registry.metrics()).toMatch(/^mufold_records_consumed_total\{worker="w1"\} 0$/m);
    expect(await b.registry.metrics()).not.toContain("process_cpu_user_seconds_total");
    expect(await a.registry.metrics()).toMatch(/^mufold_records_consumed_total 5$/m);
    expect(globalRegistry.getSingleMetric("mufold_records_consumed_total")).toBeUndefined();
  });

  it("mufold_build_info carries the version, Node's version and the reducer version, value 1; only when asked for", async () => {
    const build = { version: "9.8.7", reducerVersion: "memory_utility_reducer_v1" };
    const fromFold = await createFoldMetrics({ defaultMetrics: false, build }).registry.metrics();
    expect(fromFold).toContain("# TYPE mufold_build_info gauge");
    expect(fromFold).toMatch(new RegExp(`^mufold_build_info\\{version="9\\.8\\.7",node="${process.version.replace(/\./g, "\\.")}",reducer_version="memory_utility_reducer_v1"\\} 1$`, "m"));
    // The HTTP reader's registry (mufold serve) gets it the same way.
    expect(await createRegistry({ defaultMetrics: false, build }).metrics()).toMatch(/^mufold_build_info\{version="9\.8\.7",.*\} 1$/m);
    // Given a registry, createFoldMetrics adds it there.
    const registry = createRegistry({ defaultMetrics: false });
    createFoldMetrics({ registry, build });
    expect(await registry.metrics()).toMatch(/^mufold_build_info\{version="9\.8\.7",.*\} 1$/m);
    // Without build information there is none (no made-up "unknown" series).
    expect(await createFoldMetrics({ defaultMetrics: false }).registry.metrics()).not.toContain("mufold_build_info");
  });

  it("adds the fold metrics to a given registry, once", () => {
    const registry = createRegistry({ defaultMetrics: false });
    const m = createFoldMetrics({ registry });
    expect(m.registry).toBe(registry);
    expect(() => createFoldMetrics({ registry })).toThrow(/already been registered/);
  });
});
