import { afterAll, describe, expect, it } from "vitest";
import { Prng } from "../../producers/simulation.js";
import { dropPrefix, testSettings } from "../support/pipeline.js";
import { auditDlq } from "./dlq-audit.js";
import { readTopic, runChaos } from "./harness.js";
import { hostileRecord } from "./hostile.js";

// The CI size. `npx tsx test/chaos/run.ts --help` runs the full size (200,000 observations, 2,000 identities).
const settings = { ...testSettings(), partitions: 6 };
afterAll(() => dropPrefix(settings));

describe("faults: nothing lost, nothing doubled, same bytes after any restart", () => {
  it("survives SIGKILLs, a broker restart, a Redis restart with state lost, and scaling 1 -> 3 -> 1", async () => {
    const report = await runChaos(settings, {
      agents: 60,
      observationsPerAgent: 100,
      snapshotEvery: 25,
      kills: 20,
      brokerRestart: true,
      redisRestart: true,
      seed: 4242,
      timeLimitSeconds: 420,
      log: (line) => console.log(line),
    });
    console.log(`[chaos] ${JSON.stringify(report)}`);
    expect(report.kills).toBeGreaterThanOrEqual(20);
    expect(report.brokerRestarts).toBe(1);
    expect(report.redisRestarts).toBe(1);
    expect(report.promotes).toBe(1);
    expect(report.scaleEvents).toEqual(["1", "3", "1"]);
    expect(report.identities).toBeGreaterThanOrEqual(200);
    expect({ mismatches: report.mismatches, lost: report.lost, doubled: report.doubled }).toEqual({ mismatches: 0, lost: 0, doubled: 0 });
    // Explain and as-of reads after the kills and the Redis that lost its state.
    expect(report.past.mismatches).toEqual([]);
    expect([report.past.identities, report.past.points]).toEqual([20, 60]);
  });
});

describe("hostile input: every invalid record is dead-lettered, every projection stays exact", () => {
  const hostileSettings = { ...testSettings(), partitions: 4 };
  afterAll(() => dropPrefix(hostileSettings));

  it("mixes invalid records of every class into valid traffic", async () => {
    const report = await runChaos(hostileSettings, {
      agents: 40,
      observationsPerAgent: 100,
      snapshotEvery: 50,
      kills: 3,
      brokerRestart: false,
      redisRestart: false,
      hostile: (rng: Prng, base) => hostileRecord(rng, base).message,
      hostileEvery: 1,
      seed: 777,
      timeLimitSeconds: 300,
    });
    console.log(`[hostile] ${JSON.stringify(report)}`);
    expect(report.hostile).toBeGreaterThanOrEqual(4000);
    expect({ mismatches: report.mismatches, lost: report.lost, doubled: report.doubled }).toEqual({ mismatches: 0, lost: 0, doubled: 0 });
    expect(report.past.mismatches).toEqual([]); // dead letters are no deliveries of any identity
    expect(report.past.identities).toBe(20);
    const audit = await auditDlq(hostileSettings, await readTopic(hostileSettings));
    console.log(`[hostile] DLQ audit ${JSON.stringify(audit)}`);
    expect(audit.intended).toBe(report.hostile); // the generator's hostile records, each with the reason it meant
    expect(audit.rejected).toBe(report.hostile); // every hostile record, and nothing else, is rejected
    expect({ missing: audit.missing, unexpected: audit.unexpected, wrongReason: audit.wrongReason, wrongBytes: audit.wrongBytes }).toEqual({
      missing: 0,
      unexpected: 0,
      wrongReason: 0,
      wrongBytes: 0,
    });
    expect(audit.unseenClasses).toEqual([]); // every class the generator knows reached the DLQ under its reason
  });
});
