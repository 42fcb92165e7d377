/** The streaming commands: produce, simulate, replay (fold and read have their own modules). */
import { accessSync, constants, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { canonicalJson, PyJsonDecodeError } from "../core/index.js";
import { resolveSettings, type Settings } from "../config/settings.js";
import { createLogger } from "../observability/log.js";
import { runReplay } from "../../consumers/replay/replay.js";
import { DEFAULT_CHUNK_BYTES } from "../../consumers/replay/replay-summary.js";
import { VerifyDetails } from "../../consumers/verify/verify.js";
import { verifyReportHtml } from "../../consumers/verify/verify-report.js";
import { openSender, prepareMessages, produce } from "../../producers/produce.js";
import { observationRecord } from "../client/producer.js";
import { ProjectionReader, type ProjectionExplanation } from "../client/readback.js";
import { openRedis, readerClientSettings } from "../adapters/redis/connect.js";
import { simulate, DEFAULT_SIMULATION } from "../../producers/simulation.js";
import { UsageError } from "./args.js";
import { commandFlags, stringFlag } from "./command.js";
import { InputReadError, readInputText, writeOut } from "./io.js";
import { preflight } from "./preflight.js";
import { progressBar } from "./progress.js";
import { PRODUCE, REPLAY, SIMULATE } from "./specs.js";
import { intFlag, numberFlag } from "./values.js";

export async function produceCommand(args: string[]): Promise<number> {
  const values = await commandFlags(PRODUCE, args);
  if (values === undefined) return 0;
  const settings = resolveSettings(values);
  let prepared: ReturnType<typeof prepareMessages>;
  try {
    prepared = prepareMessages(await readInputText(stringFlag(values, "input") ?? "-"), values.raw === true);
  } catch (err) {
    if (err instanceof InputReadError) throw new UsageError(err.message);
    if (err instanceof PyJsonDecodeError) throw new UsageError(`the input is not JSON: ${err.message}`);
    throw err;
  }
  const { messages, invalid } = prepared;
  for (const bad of invalid) process.stderr.write(JSON.stringify({ invalid: bad.index, reason: bad.reason, error: bad.error }) + "\n");
  await preflight(settings, { kafka: true });
  const sent = await produce(settings, messages);
  await writeOut(canonicalJson({ sent, invalid: invalid.length, topic: settings.topic }) + "\n");
  return invalid.length > 0 ? 1 : 0;
}

export async function simulateCommand(args: string[]): Promise<number> {
  const values = await commandFlags(SIMULATE, args);
  if (values === undefined) return 0;
  const settings = resolveSettings(values);
  const d = DEFAULT_SIMULATION;
  const options = {
    agents: intFlag(values.agents, "agents", d.agents, { min: 1 }),
    observationsPerAgent: intFlag(values.observations, "observations", d.observationsPerAgent, { min: 0 }),
    scopesPerAgent: intFlag(values["scopes-per-agent"], "scopes-per-agent", d.scopesPerAgent, { min: 1 }),
    snapshotEvery: intFlag(values["snapshot-every"], "snapshot-every", d.snapshotEvery, { min: 1 }),
    duplicateRate: numberFlag(values["duplicate-rate"], "duplicate-rate", d.duplicateRate, { min: 0, max: 1 }),
    conflictRate: numberFlag(values["conflict-rate"], "conflict-rate", d.conflictRate, { min: 0, max: 1 }),
    seed: intFlag(values.seed, "seed", d.seed, { min: 0, max: 0xffffffff }),
    rate: numberFlag(values.rate, "rate", 0, { min: 0 }),
    malformed: intFlag(values.malformed, "malformed", 0, { min: 0 }),
  };
  await preflight(settings, { kafka: true });
  const result = await runSimulation(settings, options);
  await writeOut(canonicalJson(result) + "\n");
  return 0;
}

/** Malformed records a demo sends raw, one per DLQ reason class. */
export const MALFORMED_SAMPLES: { key: string | null; value: string }[] = [
  { key: "agent:x/project:x/corpus:x/surface:x", value: "{not json" },
  { key: "agent:x/project:x/corpus:x/surface:x", value: '{"schema_version":"memory_utility_observation_v99"}' },
  { key: null, value: '{"schema_version":"memory_utility_observation_v0","scope":"viking://private"}' },
  { key: "agent:x/project:x/corpus:x/surface:x", value: "[1,2,3]" },
];

export async function runSimulation(
  settings: Settings,
  o: Partial<typeof DEFAULT_SIMULATION> & { rate: number; malformed: number },
): Promise<{ produced: number; retries: number; conflicts: number; malformed: number; seconds: number; perSecond: number }> {
  const started = Date.now();
  const messages = [];
  let retries = 0;
  let conflicts = 0;
  for (const d of simulate(o)) {
    messages.push(observationRecord(d.observation));
    if (d.kind === "retry") retries++;
    if (d.kind === "conflict") conflicts++;
  }
  for (let i = 0; i < o.malformed; i++) messages.push(MALFORMED_SAMPLES[i % MALFORMED_SAMPLES.length]!);
  const sender = await openSender(settings);
  try {
    if (o.rate > 0) {
      const chunk = Math.max(1, Math.round(o.rate / 10));
      for (let i = 0; i < messages.length; i += chunk) {
        const t0 = Date.now();
        await sender.send(messages.slice(i, i + chunk));
        const wait = (chunk / o.rate) * 1000 - (Date.now() - t0);
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
    } else {
      await sender.send(messages);
    }
  } finally {
    await sender.close();
  }
  const seconds = (Date.now() - started) / 1000;
  return { produced: messages.length, retries, conflicts, malformed: o.malformed, seconds, perSecond: Math.round(messages.length / seconds) };
}

export async function replayCommand(args: string[]): Promise<number> {
  const values = await commandFlags(REPLAY, args);
  if (values === undefined) return 0;
  const settings = resolveSettings(values);
  const dropAfterSeconds = numberFlag(values["drop-after"], "drop-after", 5, { min: 0 });
  const workers = intFlag(values.workers, "workers", 1, { min: 1, max: 256 });
  const chunkBytes = intFlag(values["chunk-bytes"], "chunk-bytes", DEFAULT_CHUNK_BYTES, { min: 65_536 });
  const reportPath = stringFlag(values, "report");
  if (reportPath !== undefined) checkReportPath(reportPath, values.verify === true);
  if (values["to-end"] === true && values.verify !== true) throw new UsageError("--to-end needs --verify: it says how far the live generation must reach (a replay without --verify always reads to the end)");
  const details = reportPath === undefined ? undefined : new VerifyDetails();
  const startedAt = new Date();
  const log = createLogger({ service: "mufold" });
  await preflight(settings, { topic: settings.topic, redis: true });
  const bar = progressBar("replay");
  // SIGINT/SIGTERM abort the replay: it releases the fleet pause and drops the shadow before exiting.
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let summary;
  try {
    summary = await runReplay(
      settings,
      {
        verify: values.verify === true,
        toEnd: values["to-end"] === true,
        promote: values.promote === true,
        keepShadow: values["keep-shadow"] === true,
        dropAfterSeconds,
        changeReducerVersion: values["change-reducer-version"] === true,
        workers,
        chunkBytes,
        details,
        signal: abort.signal,
        onProgress: (p) => bar.update(p.consumed, p.total, p.elapsedSeconds),
      },
      log,
    );
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    bar.done();
  }
  if (reportPath !== undefined) {
    const explanations = await explainDiffering(settings, details!);
    writeFileSync(reportPath, verifyReportHtml({ summary, details: details!, topic: settings.topic, prefix: settings.prefix, startedAt, finishedAt: new Date(), explanations }));
  }
  await writeOut(canonicalJson(JSON.parse(JSON.stringify(summary))) + "\n");
  // With --verify the exit code is the verdict: 0 only when every identity was compared and found equal and no live mark is behind.
  return summary.verified === false || summary.mismatches > 0 ? 1 : 0;
}

/**
 * For the report: the first MAX_EXPLAINED differing identities explained from the live generation, or why
 * one could not be (not in it, folded before the index existed, Redis failing). A bound, so a replay that
 * finds everything different still writes a page a browser opens.
 */
const MAX_EXPLAINED = 100;

async function explainDiffering(settings: Settings, details: VerifyDetails): Promise<Map<string, ProjectionExplanation | string>> {
  const out = new Map<string, ProjectionExplanation | string>();
  const differing = details.notEqual.slice(0, MAX_EXPLAINED);
  if (differing.length === 0) return out;
  const redis = await openRedis(readerClientSettings(settings), settings.connectTimeoutMs);
  try {
    const reader = new ProjectionReader(redis, settings.prefix, settings.reducerVersion, settings.topic);
    for (const { identity } of differing) {
      try {
        out.set(identity, (await reader.explain(identity)) ?? "no packet in the live generation");
      } catch (err) {
        out.set(identity, err instanceof Error ? err.message : String(err));
      }
    }
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
  return out;
}

/** --report needs --verify, and a folder it can write into: refused before the replay starts, not after it. */
function checkReportPath(path: string, verify: boolean): void {
  if (!verify) throw new UsageError("--report needs --verify: the page reports what the verification compared");
  const dir = dirname(resolve(path));
  try {
    accessSync(dir, constants.W_OK);
  } catch (err) {
    throw new UsageError(`--report ${path}: cannot write into ${dir} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
}
