/** The streaming commands: produce, simulate, fold, read, replay. */
import { parseArgs } from "node:util";
import { canonicalJson, ContractError, parsePyJson, validateProjection } from "../core/index.js";
import { resolveSettings, settingFlags, type Settings } from "../config.js";
import { MufoldError } from "../errors.js";
import { createLogger } from "../log.js";
import { connectRedis, redisClientSettings } from "../adapters/redis/connect.js";
import { ProjectionReader, identityOf } from "../readback.js";
import { createFoldMetrics } from "../metrics.js";
import { Readiness } from "../http/readiness.js";
import { startHttpServer } from "../http/server.js";
import { redisReadiness } from "./serve.js";
import { FoldWorker } from "../../consumers/fold-worker.js";
import { runReplay } from "../../consumers/replay.js";
import { openSender, prepareMessages, produce } from "../../producers/produce.js";
import { observationMessage } from "../../producers/observation-message.js";
import { simulate, DEFAULT_SIMULATION } from "../../producers/simulation.js";
import { readInputText, writeOut } from "./io.js";
import { progressBar } from "./progress.js";

function parse(args: string[], extra: Record<string, { type: "string" | "boolean"; short?: string }>) {
  const { values } = parseArgs({ args, options: { ...settingFlags(), ...extra }, allowPositionals: false });
  const settings = resolveSettings(values as Record<string, string | boolean | undefined>);
  return { values: values as Record<string, string | boolean | undefined>, settings };
}

const num = (v: unknown, fallback: number, name: string): number => {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new MufoldError(`--${name} must be a non-negative number, got ${JSON.stringify(v)}`);
  return n;
};

export async function produceCommand(args: string[]): Promise<number> {
  const { values, settings } = parse(args, { input: { type: "string" }, raw: { type: "boolean" } });
  const text = await readInputText(String(values.input ?? "-"));
  const { messages, invalid } = prepareMessages(text, values.raw === true);
  for (const bad of invalid) process.stderr.write(JSON.stringify({ invalid: bad.index, reason: bad.reason, error: bad.error }) + "\n");
  const sent = await produce(settings, messages);
  await writeOut(canonicalJson({ sent, invalid: invalid.length, topic: settings.topic }) + "\n");
  return invalid.length > 0 ? 1 : 0;
}

export async function simulateCommand(args: string[]): Promise<number> {
  const { values, settings } = parse(args, {
    agents: { type: "string" },
    observations: { type: "string" },
    "scopes-per-agent": { type: "string" },
    "snapshot-every": { type: "string" },
    "duplicate-rate": { type: "string" },
    "conflict-rate": { type: "string" },
    seed: { type: "string" },
    rate: { type: "string" },
    malformed: { type: "string" },
  });
  const result = await runSimulation(settings, {
    agents: num(values.agents, DEFAULT_SIMULATION.agents, "agents"),
    observationsPerAgent: num(values.observations, DEFAULT_SIMULATION.observationsPerAgent, "observations"),
    scopesPerAgent: num(values["scopes-per-agent"], DEFAULT_SIMULATION.scopesPerAgent, "scopes-per-agent"),
    snapshotEvery: num(values["snapshot-every"], DEFAULT_SIMULATION.snapshotEvery, "snapshot-every"),
    duplicateRate: num(values["duplicate-rate"], DEFAULT_SIMULATION.duplicateRate, "duplicate-rate"),
    conflictRate: num(values["conflict-rate"], DEFAULT_SIMULATION.conflictRate, "conflict-rate"),
    seed: num(values.seed, DEFAULT_SIMULATION.seed, "seed"),
    rate: num(values.rate, 0, "rate"),
    malformed: num(values.malformed, 0, "malformed"),
  });
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
    messages.push(observationMessage(d.observation));
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

export async function foldCommand(args: string[]): Promise<number> {
  const { values, settings } = parse(args, { "http-port": { type: "string" }, "http-host": { type: "string" } });
  const log = createLogger({ service: "mufold" });
  const metrics = createFoldMetrics();
  const worker = await FoldWorker.start(settings, log, metrics);
  // Optional HTTP side: /metrics, /healthz, /readyz and the readback API, in the fold process.
  const httpPort = (values["http-port"] as string | undefined) ?? process.env.MUFOLD_HTTP_PORT;
  let http: { close(): Promise<void> } | undefined;
  let httpRedis: ReturnType<typeof connectRedis> | undefined;
  if (httpPort !== undefined) {
    httpRedis = connectRedis(redisClientSettings(settings));
    http = await startHttpServer({
      reader: new ProjectionReader(httpRedis, settings.prefix),
      registry: metrics.registry,
      readiness: Object.entries(worker.readinessChecks()).reduce(
        (r, [name, check]) => r.register(name, check),
        new Readiness().register("redis", redisReadiness(httpRedis)),
      ),
      port: Number(httpPort),
      host: (values["http-host"] as string | undefined) ?? process.env.MUFOLD_HTTP_HOST ?? "127.0.0.1",
      log: log.child({ component: "http" }),
      reducerVersion: settings.reducerVersion,
    });
  }
  return new Promise<number>((resolve) => {
    const stop = (code: number) => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      const done = () => resolve(code);
      void Promise.allSettled([worker.stop(), http?.close(), httpRedis?.quit()]).then(done, done);
    };
    const onSignal = () => {
      log.info("stopping: finishing the current batch and leaving the group");
      stop(0);
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
    // A consumer that stopped on a non-retriable error ends the process, so a supervisor restarts it.
    void worker.crashed.then(() => stop(1));
  });
}

export async function readCommand(args: string[]): Promise<number> {
  const { values, settings } = parse(args, {
    identity: { type: "string" },
    agent: { type: "string" },
    project: { type: "string" },
    corpus: { type: "string" },
    surface: { type: "string" },
    retrieval: { type: "string" },
    policy: { type: "string" },
    list: { type: "boolean" },
    validate: { type: "boolean" },
  });
  const redis = connectRedis(redisClientSettings(settings));
  try {
    const reader = new ProjectionReader(redis, settings.prefix);
    if (values.list) {
      await writeOut(canonicalJson({ generation: await reader.generation(), identities: await reader.identities() }) + "\n");
      return 0;
    }
    const identity =
      (values.identity as string | undefined) ??
      identityOf({
        scope: { agent_id: String(values.agent), project_id: String(values.project), corpus_id: String(values.corpus), surface_id: String(values.surface) },
        retrieval_snapshot_ref: String(values.retrieval),
        policy_snapshot_ref: String(values.policy),
        reducer_version: settings.reducerVersion,
      });
    const packet = await reader.read(identity);
    if (packet === null) {
      process.stderr.write(`mufold: no projection for identity ${identity}\n`);
      return 3;
    }
    if (values.validate) {
      try {
        validateProjection(parsePyJson(packet));
      } catch (err) {
        if (!(err instanceof ContractError)) throw err;
        process.stderr.write(`mufold: packet for ${identity} failed readback validation: ${err.message}\n`);
        return 1;
      }
    }
    await writeOut(packet + "\n");
    return 0;
  } finally {
    await redis.quit().catch(() => undefined);
  }
}

export async function replayCommand(args: string[]): Promise<number> {
  const { values, settings } = parse(args, {
    verify: { type: "boolean" },
    promote: { type: "boolean" },
    "keep-shadow": { type: "boolean" },
    "drop-after": { type: "string" },
  });
  const bar = progressBar("replay");
  const summary = await runReplay(
    settings,
    {
      verify: values.verify === true,
      promote: values.promote === true,
      keepShadow: values["keep-shadow"] === true,
      dropAfterSeconds: num(values["drop-after"], 5, "drop-after"),
      onProgress: (p) => bar.update(p.consumed, p.total, p.elapsedSeconds),
    },
    createLogger({ service: "mufold" }),
  );
  bar.done();
  await writeOut(canonicalJson(JSON.parse(JSON.stringify(summary))) + "\n");
  return summary.mismatches === 0 ? 0 : 1;
}
