/**
 * The fault harness and the hostile-input run at full size (the test tier runs a small version).
 *
 *   npx tsx test/chaos/run.ts [--agents 500] [--observations 400] [--snapshot-every 100] [--kills 25]
 *                             [--hostile-every 0] [--seed 1] [--minutes 30]
 *
 * Defaults: 500 agents x 400 observations = 200,000 observations over 2,000 identities,
 * 25 SIGKILLs, one broker restart, one Redis restart (state lost, then replay --promote),
 * and scaling 1 -> 3 -> 1. With --hostile-every N, one invalid record follows every N
 * valid ones, and the DLQ is audited at the end. Uses KAFKA_BROKERS / REDIS_URL and
 * restarts them through infra/ (set MUFOLD_KAFKA_PORT / MUFOLD_REDIS_PORT to match).
 */
import { parseArgs } from "node:util";
import { testSettings, dropPrefix } from "../support/pipeline.js";
import { auditDlq } from "./dlq-audit.js";
import { readTopic, runChaos } from "./harness.js";
import { hostileRecord } from "./hostile.js";

const { values } = parseArgs({
  options: {
    agents: { type: "string", default: "500" },
    observations: { type: "string", default: "400" },
    "snapshot-every": { type: "string", default: "100" },
    kills: { type: "string", default: "25" },
    "hostile-every": { type: "string", default: "0" },
    "no-restarts": { type: "boolean", default: false },
    seed: { type: "string", default: "1" },
    minutes: { type: "string", default: "30" },
    partitions: { type: "string", default: "12" },
  },
});
const hostileEvery = Number(values["hostile-every"]);
const settings = { ...testSettings(), partitions: Number(values.partitions) };
const report = await runChaos(settings, {
  agents: Number(values.agents),
  observationsPerAgent: Number(values.observations),
  snapshotEvery: Number(values["snapshot-every"]),
  kills: Number(values.kills),
  brokerRestart: !values["no-restarts"],
  redisRestart: !values["no-restarts"],
  hostile: hostileEvery > 0 ? (rng, base) => hostileRecord(rng, base).message : undefined,
  hostileEvery: hostileEvery > 0 ? hostileEvery : undefined,
  seed: Number(values.seed),
  timeLimitSeconds: Number(values.minutes) * 60,
  log: (line) => process.stderr.write(line + "\n"),
});
const audit = hostileEvery > 0 ? await auditDlq(settings, await readTopic(settings)) : null;
process.stdout.write(JSON.stringify({ ...report, dlqAudit: audit }, null, 2) + "\n");
await dropPrefix(settings);
const ok = report.mismatches === 0 && report.lost === 0 && report.doubled === 0 && (audit === null || (audit.missing === 0 && audit.wrongReason === 0 && audit.wrongBytes === 0 && audit.rejected === report.hostile));
process.exit(ok ? 0 : 1);
