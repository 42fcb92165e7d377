/**
 * Failover takeover, side by side in one run: two fold worker processes on a
 * 6-partition topic, one SIGKILLed (no LeaveGroup), a new batch produced to
 * every partition; timed from the kill until the group has committed every
 * partition's end offset. Default settings (session timeout 10 s, heartbeat
 * 1 s) against MUFOLD_SESSION_TIMEOUT_MS=30000 (the old behaviour), runs
 * alternated. Prints a markdown table of takeover seconds and the ratio.
 *
 *   npm run build && npx tsx bench/failover.bench.ts [--runs 3]
 *
 * Needs KAFKA_BROKERS / REDIS_URL (defaults 127.0.0.1); workers run bin/mufold.js from dist/.
 */
import { waitFor } from "../test/support/wait.js";
import { performance } from "node:perf_hooks";
import kafkajs from "kafkajs";
import type { Admin } from "kafkajs";
import { createKafka } from "../src/adapters/kafka/client.js";
import type { Settings } from "../src/config/settings.js";
import { observationRecord } from "../src/client/producer.js";
import { produce } from "../producers/produce.js";
import { simulate } from "../producers/simulation.js";
import { comparePackets, dropPrefix, expectedPackets, readAllPackets, spawnWorker, stopWorker, testSettings } from "../test/support/pipeline.js";

const { AssignerProtocol } = kafkajs;
const runs = Number(process.argv[process.argv.indexOf("--runs") + 1] || 3);
const PARTITIONS = 6;
const variants = [
  { name: "default (session 10 s, heartbeat 1 s)", env: {} as Record<string, string> },
  { name: "MUFOLD_SESSION_TIMEOUT_MS=30000 (old)", env: { MUFOLD_SESSION_TIMEOUT_MS: "30000" } },
];

async function members(admin: Admin, settings: Settings): Promise<{ state: string; members: Map<string, number[]> }> {
  const { groups } = await admin.describeGroups([settings.group]);
  const out = new Map<string, number[]>();
  for (const m of groups[0]!.members) {
    const assignment = m.memberAssignment.length > 0 ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null;
    out.set(m.memberId, assignment?.assignment[settings.topic] ?? []);
  }
  return { state: groups[0]!.state, members: out };
}

async function caughtUp(admin: Admin, settings: Settings, ends: Map<number, number>): Promise<boolean> {
  const [topic] = await admin.fetchOffsets({ groupId: settings.group, topics: [settings.topic] });
  const committed = new Map((topic?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
  return [...ends].every(([p, high]) => (committed.get(p) ?? -1) >= high);
}

async function ends(admin: Admin, settings: Settings): Promise<Map<number, number>> {
  return new Map((await admin.fetchTopicOffsets(settings.topic)).map((p) => [p.partition, Number(p.high)]));
}


/** One failover; returns seconds from the kill to the dead member dropped and to every partition committed. */
async function failover(env: Record<string, string>, seed: number): Promise<{ dropped: number; takeover: number }> {
  const settings = testSettings({ partitions: PARTITIONS });
  const observations = [...simulate({ agents: 60, observationsPerAgent: 10, duplicateRate: 0.1, conflictRate: 0.03, snapshotEvery: 6, seed })].map((d) => d.observation);
  const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-bench-failover" }).admin();
  await admin.connect();
  const a = spawnWorker(settings, env);
  let b: ReturnType<typeof spawnWorker> | undefined;
  try {
    const alone = await waitFor("a alone in the group", async () => {
      const g = await members(admin, settings);
      return g.state === "Stable" && g.members.size === 1 ? g : undefined;
    });
    const aId = [...alone.members.keys()][0]!;
    b = spawnWorker(settings, env);
    const both = await waitFor("a and b hold partitions", async () => {
      const g = await members(admin, settings);
      return g.state === "Stable" && g.members.size === 2 && g.members.has(aId) && [...g.members.values()].every((p) => p.length > 0) ? g : undefined;
    });
    await produce(settings, observations.slice(0, 300).map(observationRecord));
    const ends1 = await ends(admin, settings);
    await waitFor("first batch committed", async () => ((await caughtUp(admin, settings, ends1)) ? true : undefined));

    const t0 = performance.now();
    await stopWorker(a, "SIGKILL");
    await produce(settings, observations.slice(300).map(observationRecord));
    const ends2 = await ends(admin, settings);
    for (const p of both.members.get(aId)!) if (!(ends2.get(p)! > ends1.get(p)!)) throw new Error(`no new records on the killed worker's partition ${p}`);
    let dropped = NaN;
    const takeover = await waitFor("every partition committed", async () => {
      if (Number.isNaN(dropped) && !(await members(admin, settings)).members.has(aId)) dropped = (performance.now() - t0) / 1000;
      return (await caughtUp(admin, settings, ends2)) ? (performance.now() - t0) / 1000 : undefined;
    });
    const diff = comparePackets(await readAllPackets(settings), expectedPackets(observations));
    if (diff.missing.length + diff.extra.length + diff.different.length > 0) throw new Error(`packets differ from the reducer: ${JSON.stringify(diff)}`);
    return { dropped, takeover };
  } finally {
    if (a.exitCode === null && a.signalCode === null) await stopWorker(a, "SIGKILL");
    if (b !== undefined && b.exitCode === null && b.signalCode === null) await stopWorker(b);
    await admin.disconnect();
    await dropPrefix(settings);
  }
}

const results = variants.map(() => ({ dropped: [] as number[], takeover: [] as number[] }));
for (let run = 0; run < runs; run++) {
  for (const [i, v] of variants.entries()) {
    const r = await failover(v.env, 100 + run);
    results[i]!.dropped.push(r.dropped);
    results[i]!.takeover.push(r.takeover);
    process.stderr.write(`run ${run + 1}/${runs} ${v.name}: dead member dropped ${r.dropped.toFixed(2)} s, takeover ${r.takeover.toFixed(2)} s\n`);
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
console.log("| settings | runs | dead member dropped, median (s) | takeover min (s) | takeover median (s) | takeover max (s) |");
console.log("|---|---|---|---|---|---|");
for (const [i, v] of variants.entries()) {
  const t = results[i]!.takeover;
  console.log(`| ${v.name} | ${t.length} | ${median(results[i]!.dropped).toFixed(2)} | ${Math.min(...t).toFixed(2)} | ${median(t).toFixed(2)} | ${Math.max(...t).toFixed(2)} |`);
}
console.log(`\nold / default takeover (medians): ${(median(results[1]!.takeover) / median(results[0]!.takeover)).toFixed(1)}x`);
