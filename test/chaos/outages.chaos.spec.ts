/**
 * Outages ridden out without a restart: the Kafka broker stopped for 30 s and
 * Redis hung (SIGSTOP) for 40 s while two fold workers fold live traffic. No
 * worker may exit; afterwards every packet equals the reducer over the log.
 * Runs in the chaos tier: it stops the shared broker and Redis.
 */
import { until } from "../support/wait.js";
import { execFileSync, type ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { groupOffsets } from "../../src/adapters/kafka/topics.js";
import { openSender } from "../../producers/produce.js";
import { observationRecord } from "../../src/client/producer.js";
import { simulate } from "../../producers/simulation.js";
import type { Observation } from "../../src/core/index.js";
import { REPO_ROOT } from "../support/reference.js";
import { servicePid } from "../support/services/pidfiles.js";
import { ensureSetup } from "../../src/adapters/redis/functions.js";
import { comparePackets, dropPrefix, expectedPackets, readAllPackets, spawnWorker, stopWorker, testSettings, waitCaughtUp } from "../support/pipeline.js";

const settings = testSettings({ partitions: 4 });
afterAll(() => dropPrefix(settings));

const infra = (script: string) => execFileSync("bash", [`${REPO_ROOT}/infra/${script}`], { stdio: ["ignore", "ignore", "inherit"] });
const redisPid = () => servicePid("redis");


async function committed(): Promise<number> {
  const admin = createKafka({ brokers: settings.brokers, clientId: "mufold-chaos-outage" }).admin();
  try {
    await admin.connect();
    let sum = 0;
    for (const o of (await groupOffsets(admin, settings.group, settings.topic)).values()) if (o > 0n) sum += Number(o);
    return sum;
  } catch {
    return -1; // the broker is down
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

describe("outages are ridden out without a restart", () => {
  it("broker stopped 30 s, Redis hung 40 s: no worker exits, every packet exact", async () => {
    const observations: Observation[] = [...simulate({ agents: 30, observationsPerAgent: 60, snapshotEvery: 20, duplicateRate: 0.1, conflictRate: 0.02, seed: 5150 })].map(
      (d) => d.observation,
    );
    const messages = observations.map(observationRecord);
    await ensureSetup(settings);
    const sender = await openSender(settings);
    const thirds = Math.ceil(messages.length / 3);
    await sender.send(messages.slice(0, thirds));
    const workers: ChildProcess[] = [spawnWorker(settings), spawnWorker(settings)];
    const exits: (number | null)[] = [];
    for (const w of workers) w.once("exit", (code) => exits.push(code));
    try {
      await until("the first third folded", async () => (await committed()) >= thirds);

      // Kafka down for 30 s.
      infra("kafka/stop.sh");
      const kafkaDown = Date.now();
      await until("30 s of broker outage", () => Date.now() - kafkaDown >= 30_000, 40_000);
      expect(exits).toEqual([]);
      infra("kafka/start.sh");
      await sender.send(messages.slice(thirds, 2 * thirds));
      await until("the second third folded", async () => (await committed()) >= 2 * thirds, 180_000);
      expect(exits).toEqual([]);

      // Redis hung for 40 s (a stopped process: connections stay open, nothing answers).
      await sender.send(messages.slice(2 * thirds));
      process.kill(redisPid(), "SIGSTOP");
      const redisDown = Date.now();
      try {
        await until("40 s of Redis outage", () => Date.now() - redisDown >= 40_000, 50_000);
      } finally {
        process.kill(redisPid(), "SIGCONT");
      }
      expect(exits).toEqual([]);
      await waitCaughtUp(settings, 180_000);
      expect(exits).toEqual([]);
      console.log(`[outages] ${JSON.stringify({ observations: observations.length, kafkaDownSeconds: 30, redisHungSeconds: 40, workerExits: exits.length })}`);
      expect(comparePackets(await readAllPackets(settings), expectedPackets(observations))).toEqual({ missing: [], extra: [], different: [] });
    } finally {
      try {
        await sender.close().catch(() => undefined);
        for (const w of workers) await stopWorker(w, "SIGTERM");
      } finally {
        // Whatever failed, leave the broker running for the tests after this one (start.sh is a no-op when it runs).
        infra("kafka/start.sh");
      }
    }
  });
});
