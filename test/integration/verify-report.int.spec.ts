/**
 * `mufold replay --verify --report FILE.html` as an operator runs it (the built
 * CLI, dist/): a verified run writes a page that says so; after one live
 * packet is corrupted on purpose in Redis, the run exits 1 and its page names
 * that identity as bytes_differ, at the first differing byte offset this test
 * computes itself from the two packets it reads back from Redis.
 * `npx tsc -p tsconfig.build.json` first.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { settingsEnv } from "../../consumers/fold/fold-process.js";
import { observationRecord } from "../../src/client/producer.js";
import { produce } from "../../producers/produce.js";
import { simulate } from "../../producers/simulation.js";
import { connectRedis } from "../../src/adapters/redis/connect.js";
import { RedisControlStore } from "../../src/adapters/redis/control-store.js";
import { RedisIdentityStore } from "../../src/adapters/redis/identity-store.js";
import type { Settings } from "../../src/config/settings.js";
import { identityKeys, partIndex } from "../../src/adapters/redis/keys.js";
import { contextOfObservation, reducerIdentity } from "../../src/core/index.js";
import { BIN, dropPrefix, quietLog, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { byClass, findAll, parseXml, textOf, type XmlElement } from "../support/xml.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

function replay(settings: Settings, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, "replay", ...args], { env: { ...process.env, ...settingsEnv(settings) }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

function summaryRows(page: XmlElement): Map<string, string> {
  const cell = (tr: XmlElement, name: string) => textOf(tr.children.find((c): c is XmlElement => typeof c !== "string" && c.name === name)!);
  return new Map(findAll(byClass(page, "summary")[0]!, (e) => e.name === "tr").map((tr) => [cell(tr, "th"), cell(tr, "td")]));
}

/** The first byte where two byte strings differ (the shorter one's length when it is a prefix). */
function firstDifferingByte(a: Buffer, b: Buffer): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

describe("replay --verify --report", () => {
  it("a verified run's page says verified; a corrupted live packet is named bytes_differ at its first differing byte", async () => {
    const settings = testSettings();
    const redis = connectRedis(settings.redisUrl);
    const store = new RedisIdentityStore(redis, settings.prefix);
    const dir = mkdtempSync(join(tmpdir(), "mufold-report-"));
    cleanups.push(
      () => redis.quit(),
      () => dropPrefix(settings),
      async () => rmSync(dir, { recursive: true, force: true }),
    );
    const observations = [...simulate({ agents: 3, observationsPerAgent: 8, duplicateRate: 0, conflictRate: 0, seed: 5 })].map((d) => d.observation);
    await produce(settings, observations.map(observationRecord));
    const worker = await FoldWorker.start(settings, quietLog);
    await waitCaughtUp(settings);
    await worker.stop();
    const live = (await new RedisControlStore(redis, settings.prefix).liveGeneration())!;
    const identities = await store.listIdentities(live);
    expect(identities.length).toBeGreaterThan(1);

    const verified = await replay(settings, ["--verify", "--report", join(dir, "ok.html")]);
    expect(verified.code).toBe(0);
    const okPage = parseXml(readFileSync(join(dir, "ok.html"), "utf8"));
    expect(summaryRows(okPage).get("verdict")).toBe("verified");
    expect(summaryRows(okPage).get("equal")).toBe(String(identities.length));
    expect(byClass(okPage, "mismatch")).toEqual([]);

    // Corrupt one live packet: its agent id, inside the stored skeleton (P:gN:{I}:m, field skel), upper-cased.
    const victim = identities[0]!;
    const packetBefore = (await store.read(live, victim))!;
    const agentId = (JSON.parse(packetBefore) as { scope: { agent_id: string } }).scope.agent_id;
    const metaKey = identityKeys(settings.prefix, live, victim)[partIndex("m")]!;
    const skeleton = (await redis.hget(metaKey, "skel"))!;
    expect(skeleton).toContain(agentId);
    await redis.hset(metaKey, "skel", skeleton.replace(agentId, agentId.toUpperCase()));

    const reportPath = join(dir, "r.html");
    const failed = await replay(settings, ["--verify", "--keep-shadow", "--report", reportPath]);
    expect(failed.code).toBe(1);
    const summary = JSON.parse(failed.stdout) as { verified: boolean; rebuiltGeneration: number };
    expect(summary.verified).toBe(false);
    // The two packets as Redis serves them now; the offset is computed here, not taken from the page.
    const livePacket = Buffer.from((await store.read(live, victim))!, "utf8");
    const rebuiltPacket = Buffer.from((await store.read(summary.rebuiltGeneration, victim))!, "utf8");
    expect(rebuiltPacket.toString()).toBe(packetBefore);
    const offset = firstDifferingByte(livePacket, rebuiltPacket);
    expect(offset).toBeLessThan(livePacket.length);

    const page = parseXml(readFileSync(reportPath, "utf8"));
    const rows = summaryRows(page);
    expect(rows.get("verdict")).toBe("not verified");
    expect([rows.get("bytes differ"), rows.get("equal")]).toEqual(["1", String(identities.length - 1)]);
    expect(rows.get("topic")).toBe(settings.topic);
    const statuses = findAll(page, (e) => e.attrs["data-status"] !== undefined && e.attrs["data-status"] !== "equal").map((e) => [e.attrs["data-identity"], e.attrs["data-status"]]);
    expect(statuses).toEqual([[victim, "bytes_differ"]]);
    const [mismatch] = byClass(page, "mismatch");
    expect(mismatch!.attrs["data-identity"]).toBe(victim);
    expect(textOf(byClass(mismatch!, "offset")[0]!)).toBe(String(offset));
    const marked = Object.fromEntries(byClass(mismatch!, "bytes").map((b) => [b.attrs["data-side"], byClass(b, "diff").map(textOf)]));
    expect(marked).toEqual({ live: [String.fromCharCode(livePacket[offset]!)], rebuilt: [String.fromCharCode(rebuiltPacket[offset]!)] });

    // The differing identity links to its explanation: one row per record of that identity on the topic.
    const link = findAll(page, (e) => e.name === "a" && e.attrs.class === "explain");
    expect(link.map((a) => a.attrs.href)).toEqual([`#explain-${victim}`]);
    const [explanation] = byClass(page, "explanation");
    expect(explanation!.attrs.id).toBe(`explain-${victim}`);
    const victimRecords = observations.filter((o) => reducerIdentity(contextOfObservation(o, settings.reducerVersion)) === victim);
    const rows2 = findAll(explanation!, (e) => e.name === "tr" && e.attrs.class === "delivery");
    expect(rows2.map((tr) => textOf(tr.children.filter((c): c is XmlElement => typeof c !== "string")[3]!))).toEqual(victimRecords.map((o) => o.observation_id));
    expect(rows2.every((tr) => tr.attrs["data-decision"] === "accepted")).toBe(true); // no duplicates, no conflicts were sent
  });
});
