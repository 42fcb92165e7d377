/** bench/median-json.ts: the median of the pipeline bench's runs, as docs/benchmarks.json records it. */
import { describe, expect, it } from "vitest";
import { median, medianOfRuns, runsTable } from "../../bench/median-json.js";

const run = (over: Record<string, unknown>) => ({ git_commit: "abc", command: "npx tsx bench/pipeline.bench.ts", node: "v20", git_dirty: false, measured_at: "t", ...over });

describe("the median of bench runs", () => {
  it("takes each number's median within the runs, nested numbers too, and lists from the median run of fold_over_raw", () => {
    const runs = [
      run({ measured_at: "t1", fold_over_raw: 0.2, worker_cpu_us_per_record: 60, by: { "5000": { p99: 300 } }, points: [1] }),
      run({ measured_at: "t2", fold_over_raw: 0.25, worker_cpu_us_per_record: 50, by: { "5000": { p99: 200 } }, points: [2] }),
      run({ measured_at: "t3", fold_over_raw: 0.22, worker_cpu_us_per_record: 70, by: { "5000": { p99: 250 } }, points: [3] }),
    ];
    const med = medianOfRuns(runs);
    expect(med.fold_over_raw).toBe(0.22);
    expect(med.worker_cpu_us_per_record).toBe(60);
    expect(med.by).toEqual({ "5000": { p99: 250 } });
    // Run 3 has the median fold_over_raw: its list and its texts.
    expect(med.points).toEqual([3]);
    expect(med.measured_at).toBe("t3");
    expect(med.median_of).toEqual([{ measured_at: "t1" }, { measured_at: "t2" }, { measured_at: "t3" }]);
  });

  it("is null for a number only some runs measured", () => {
    const med = medianOfRuns([run({ fold_over_raw: 1, rss: 5 }), run({ fold_over_raw: 1, rss: null }), run({ fold_over_raw: 1, rss: 7 })]);
    expect(med.rss).toBeNull();
  });

  it("refuses runs of different commits, commands or Node, a dirty tree, or an even count", () => {
    const ok = run({ fold_over_raw: 1 });
    expect(() => medianOfRuns([ok, ok, run({ git_commit: "def" })])).toThrow(/differ in git_commit/);
    expect(() => medianOfRuns([ok, ok, run({ command: "other" })])).toThrow(/differ in command/);
    expect(() => medianOfRuns([ok, ok, run({ node: "v24" })])).toThrow(/differ in node/);
    expect(() => medianOfRuns([ok, ok, run({ git_dirty: true })])).toThrow(/dirty/);
    expect(() => medianOfRuns([ok, ok])).toThrow(/odd number/);
    expect(() => medianOfRuns([ok, ok, ok, ok])).toThrow(/odd number/);
  });

  it("median of an odd and an even count", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it("tables each run's value and the median, a dash for one not measured", () => {
    const runs = [run({ fold_over_raw: 0.2, e2e_obs_per_s: 11000 }), run({ fold_over_raw: 0.3, e2e_obs_per_s: 12500 }), run({ fold_over_raw: 0.25 })];
    const table = runsTable(runs, medianOfRuns(runs)).split("\n");
    expect(table[0]).toBe("| key | run 1 | run 2 | run 3 | median |");
    expect(table).toContain("| `fold_over_raw` | 0.2 | 0.3 | 0.25 | 0.25 |");
    expect(table).toContain("| `e2e_obs_per_s` | 11,000 | 12,500 | — | — |");
  });
});
