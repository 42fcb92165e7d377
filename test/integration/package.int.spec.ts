/**
 * The package as a user gets it: `npm pack`, then `npm install --omit=dev` of
 * the tarball into an empty directory, then a TypeScript program (module
 * NodeNext, strict, compiled with this repository's tsc) that imports `mufold`
 * and `mufold/core`, against the live broker and Redis: the installed bin
 * answers --version and --help and runs `setup` and `fold`; the program builds
 * an observation with the typed builder, publishes it, reads the packet back
 * (by scope and by identity, with version and ETag), follows the change feed,
 * and reduces the same observation with `mufold/core`. The packet must be the
 * one this repository's core computes, byte for byte.
 *
 * Then the README's worked example (the first ```ts block of README.md that
 * imports "mufold"), compiled strictly in the same install and run against a
 * fold worker on a topic and prefix of its own (given by the environment): it
 * exits 0, prints what the README says it prints (the ```text block after it),
 * and the packets it left in Redis are those this repository's core computes
 * from the observations it published. Then the example of "Asking about the
 * past", on what the first one left: it prints what the README shows too.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settingsEnv } from "../../consumers/fold/fold-process.js";
import { connectRedis } from "../../src/adapters/redis/connect.js";
import { identityKeys } from "../../src/adapters/redis/keys.js";
import { parsePyJson, validateObservation } from "../../src/core/index.js";
import { documentedOutput, outputDifference, sectionExample, where, workedExample } from "../support/markdown-blocks.js";
import { packAndInstall, REPO_ROOT, repoPackage, run, runResult, tsc, writeStrictTsconfig, type PackedInstall } from "../support/packed-install.js";
import { comparePackets, dropPrefix, expectedPackets, readAllPackets, stopWorker, testSettings, waitCaughtUp } from "../support/pipeline.js";
import { topicValues } from "../support/topic-records.js";

const PACKAGE = repoPackage();
const work = mkdtempSync(join(tmpdir(), "mufold-package-"));
const children: ChildProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];
let installed: PackedInstall;
let app: string;

beforeAll(() => {
  // Pack (npm runs `prepare`: the compile) and install into an empty directory, production dependencies only.
  installed = packAndInstall(work);
  app = installed.app;
}, 600_000);

afterAll(async () => {
  for (const child of children) await stopWorker(child, "SIGKILL");
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(work, { recursive: true, force: true });
});

const scope = { agent_id: "agent:reviewer-7", project_id: "project:payments", corpus_id: "corpus:runbooks", surface_id: "surface:issue_fix" };
const FACTS = {
  receipt: {
    application_id: "app:pr-4812", artifact_ref: "artifact:pr-4812", corpus_id: scope.corpus_id, surface_id: scope.surface_id,
    mode: "function_boundary", query_kind: "business_recall", query_evidence: [], outcome: "applied",
    memory_ref_digests: ["3f9a1c0d5e7b2a46", "8c2e4b6a0d1f3e57"], reasoning_summary: "applied the retry runbook and the idempotency-key note",
    current_artifact_verified: true, result_readback_verified: true, provider_call_count: 1, model_reasoning_preserved: true,
    grants_new_action_authority: false, external_writes_performed: false, raw_content_captured: false,
  },
  outcome: { verified: true, outcome_ref: "outcome:pr-4812-merged", artifact_ref: "artifact:pr-4812", outcome_status: "merged" },
  context: { scope, retrieval_snapshot_ref: "retrieval:2026-11-01", policy_snapshot_ref: "policy:v3" },
  proposal: {
    scope, application_id: "app:pr-4812", artifact_ref: "artifact:pr-4812", outcome_ref: "outcome:pr-4812-merged", outcome_status: "merged",
    retrieval_snapshot_ref: "retrieval:2026-11-01", policy_snapshot_ref: "policy:v3", memory_ref_digests: ["3f9a1c0d5e7b2a46"],
    utility_label: "harmful", attribution_level: "item", evidence_basis: "deterministic_effect", confidence: 0.8,
    reason_codes: ["signal:tests_fail"], evidence_refs: ["evidence:ci-run-4812"], evaluator_ref: "evaluator:ci", evaluation_version: "eval:v1",
  },
  createdAt: "2026-11-01T09:30:00Z",
};

/** The user's program: typed imports from both entries; the @ts-expect-error lines fail the build if the types were loose. */
const PROGRAM = `
import { readFileSync } from "node:fs";
import { ObservationProducer, ProjectionReader, observation, type FeedEvent, type ObservationInput, type Projection, type ProjectionRead } from "mufold";
import { canonicalJson, observationToPy, reduceObservations } from "mufold/core";

const [mode, factsPath] = process.argv.slice(2);
const input: ObservationInput = JSON.parse(readFileSync(factsPath!, "utf8"));
const obs = observation(input);
const ref = { scope: obs.scope, retrieval_snapshot_ref: obs.retrieval_snapshot_ref, policy_snapshot_ref: obs.policy_snapshot_ref };

if (mode === "produce") {
  const producer = await ObservationProducer.connect(); // brokers and topic from the environment
  await producer.publish([obs]);
  await producer.close();
  console.log(JSON.stringify({ topic: producer.topic, observation: canonicalJson(observationToPy(obs)) }));
} else {
  const reader = await ProjectionReader.connect(); // Redis and prefix from the environment
  const byScope: ProjectionRead | null = await reader.get(ref, { validate: true });
  if (byScope === null) throw new Error("no packet for the observation's scope");
  const byIdentity = await reader.get(byScope.identity);
  const projection: Projection = byScope.projection;
  const events: FeedEvent[] = [];
  for await (const event of reader.subscribe({ signal: AbortSignal.timeout(60_000) })) {
    events.push(event);
    if (event.type === "change" && event.identity === byScope.identity) break;
  }
  await reader.close();
  const local = canonicalJson(reduceObservations({ observations: [observationToPy(obs)], ...ref }));
  const subject = projection.subjects[0];
  console.log(JSON.stringify({
    identity: byScope.identity, generation: byScope.generation, version: byScope.version, etag: byScope.etag, text: byScope.text,
    byIdentity: byIdentity?.text ?? null, status: projection.status, label: subject?.effective_utility_label ?? null,
    proposals: projection.review_proposals.map((p) => p.state), local, events,
  }));
  // @ts-expect-error: not a status of the contract
  if (projection.status === "approved") throw new Error("unreachable");
  // @ts-expect-error: a subject has no field "utility"
  void subject?.utility;
}
// @ts-expect-error: confidence is a number
if (mode === "never") observation({ ...input, proposal: { ...input.proposal, confidence: "high" } });
`;

describe("the packed package, installed with production dependencies only", () => {
  it("packs lean, installs without devDependencies, typechecks a strict NodeNext program, and runs bin and API against the live services", async () => {
    // What the tarball holds.
    const files = installed.files;
    for (const needed of ["bin/mufold.js", "dist/src/client/index.js", "dist/src/client/index.d.ts", "dist/src/core/index.js", "dist/src/core/index.d.ts", "dist/src/cli/main.js", "dist/src/adapters/redis/functions/mufold_v1.lua"]) {
      expect(files).toContain(needed);
    }
    expect(files.filter((f) => /^(test|bench|src|scripts|consumers|producers|docs)\//.test(f) || f.endsWith(".map") || (f.endsWith(".ts") && !f.endsWith(".d.ts")))).toEqual([]);

    // Every devDependency that the lockfile marks dev-only (no production package needs it) stays out.
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, { dev?: boolean }> };
    const devOnly = Object.keys(PACKAGE.devDependencies).filter((name) => lock.packages[`node_modules/${name}`]?.dev === true);
    expect(devOnly).toEqual(expect.arrayContaining(["typescript", "tsx", "vitest"]));
    expect(devOnly.filter((name) => existsSync(join(app, "node_modules", name)))).toEqual([]);
    expect(existsSync(join(app, "node_modules", "mufold", "dist", "src", "client", "index.js"))).toBe(true);

    // The user's program: strict, NodeNext, this repository's tsc; our declarations are checked too (no skipLibCheck).
    writeFileSync(join(app, "facts.json"), JSON.stringify(FACTS));
    writeFileSync(join(app, "program.ts"), PROGRAM);
    const compiled = tsc(writeStrictTsconfig(app, "tsconfig.json", ["program.ts"], { outDir: "out", compilerOptions: { noUncheckedIndexedAccess: true } }), app);
    expect(compiled.status, compiled.describe).toBe(0);

    // The installed bin.
    const bin = join(app, "node_modules", ".bin", "mufold");
    expect(run(bin, ["--version"], { cwd: app }).trim()).toContain(PACKAGE.version);
    const help = run(bin, ["--help"], { cwd: app });
    for (const command of ["fold", "read", "setup", "produce", "replay"]) expect(help).toContain(command);

    // setup, publish with the typed producer, fold with the installed bin.
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const env = { ...process.env, ...settingsEnv(settings), MUFOLD_LOG_LEVEL: "error" };
    run(bin, ["setup"], { cwd: app, env });
    const produced = JSON.parse(run(process.execPath, ["out/program.js", "produce", "facts.json"], { cwd: app, env })) as { topic: string; observation: string };
    expect(produced.topic).toBe(settings.topic);
    const worker = spawn(bin, ["fold"], { cwd: app, env, stdio: ["ignore", "ignore", "inherit"] });
    children.push(worker);
    await waitCaughtUp(settings);

    // Read back with the API, follow the feed, reduce locally.
    const read = JSON.parse(run(process.execPath, ["out/program.js", "read", "facts.json"], { cwd: app, env })) as {
      identity: string; generation: number; version: number; etag: string; text: string; byIdentity: string | null;
      status: string; label: string | null; proposals: string[]; local: string; events: Record<string, unknown>[];
    };
    const expected = expectedPackets([validateObservation(parsePyJson(produced.observation))]);
    expect([...expected.keys()]).toEqual([read.identity]);
    expect(read.text).toBe(expected.get(read.identity));
    expect(read.local).toBe(read.text);
    expect(read.byIdentity).toBe(read.text);
    expect(read.etag).toBe(`"${createHash("sha256").update(read.text).digest("hex")}"`);
    expect([read.status, read.label, read.proposals]).toEqual(["ready", "harmful", ["attenuation_proposed"]]);

    const redis = connectRedis(settings.redisUrl);
    cleanups.push(async () => void (await redis.quit()));
    const meta = await redis.hgetall(identityKeys(settings.prefix, read.generation, read.identity)[0]!);
    expect(read.version).toBe(Number(meta.v));
    expect(read.events[0]).toEqual({ type: "generation", generation: read.generation, previous: null });
    expect(read.events.at(-1)).toMatchObject({ type: "change", generation: read.generation, identity: read.identity, version: read.version, status: "ready", digest: meta.dig, deliveries: 1, repeated: false });

    expect(await stopWorker(worker)).toBe(0);
  });

  it("the README's worked example compiles strictly against the install, runs against a fold on the live services, and prints what the README says", async () => {
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    const example = workedExample(readme);
    writeFileSync(join(app, "readme-example.ts"), example.body);
    const compiled = tsc(writeStrictTsconfig(app, "tsconfig.readme.json", ["readme-example.ts"], { outDir: "out-readme" }), app);
    expect(compiled.status, `${where(example)}: the README's example does not compile\n${compiled.describe}`).toBe(0);

    // Its own topic, group and prefix, through the environment (what the example does not set comes from there).
    const settings = testSettings();
    cleanups.push(() => dropPrefix(settings));
    const env = { ...process.env, ...settingsEnv(settings), MUFOLD_LOG_LEVEL: "error" };
    run(process.execPath, [installed.binScript, "setup"], { cwd: app, env });
    const worker = spawn(process.execPath, [installed.binScript, "fold"], { cwd: app, env, stdio: ["ignore", "ignore", "inherit"] });
    children.push(worker);

    // The example waits for its projection itself: no help from here but the fold worker.
    const ran = runResult(process.execPath, ["out-readme/readme-example.js"], { cwd: app, env, timeoutMs: 180_000 });
    expect(ran.status, `${where(example)}: the README's example failed\n${ran.describe}`).toBe(0);
    // It prints what the README shows it prints (the ```text block after it).
    const prints = documentedOutput(readme, example);
    const difference = outputDifference(prints.body, ran.stdout);
    expect(difference, `${where(prints)}: the README's example prints something else than the README shows\n${ran.stdout}`).toBeUndefined();

    // What it published, reduced by this repository's core, is exactly what the fold stored.
    await waitCaughtUp(settings);
    const published = (await topicValues(settings)).map((value) => validateObservation(parsePyJson(value.toString("utf8"))));
    expect(published.length, "the README's example published no observation").toBeGreaterThan(0);
    const expected = expectedPackets(published);
    expect(comparePackets(await readAllPackets(settings), expected)).toEqual({ missing: [], extra: [], different: [] });
    // The README shows a ready projection, and says so in its output.
    const statuses = [...expected.values()].map((text) => (JSON.parse(text) as { status: string }).status);
    expect(statuses).toEqual(statuses.map(() => "ready"));
    expect(prints.body).toMatch(/\bready\b/);
    // Every id the README's output shows is one the core computes: an identity of those packets, an observation published.
    const ids = new Set([...expected.keys(), ...published.map((o) => o.observation_id)]);
    expect((prints.body.match(/\bmu[ro]_[0-9a-f]{64}\b/g) ?? []).filter((id) => !ids.has(id))).toEqual([]);

    // "Asking about the past": explain and an as-of read of what the first example left.
    const past = sectionExample(readme, "Asking about the past");
    writeFileSync(join(app, "readme-past.ts"), past.body);
    const compiledPast = tsc(writeStrictTsconfig(app, "tsconfig.past.json", ["readme-past.ts"], { outDir: "out-past" }), app);
    expect(compiledPast.status, `${where(past)}: the README's example does not compile\n${compiledPast.describe}`).toBe(0);
    const ranPast = runResult(process.execPath, ["out-past/readme-past.js"], { cwd: app, env, timeoutMs: 60_000 });
    expect(ranPast.status, `${where(past)}: the README's example failed\n${ranPast.describe}`).toBe(0);
    const pastPrints = documentedOutput(readme, past);
    expect(outputDifference(pastPrints.body, ranPast.stdout), `${where(pastPrints)}: it prints something else than the README shows\n${ranPast.stdout}`).toBeUndefined();
    expect((pastPrints.body.match(/\bmuo_[0-9a-f]{64}\b/g) ?? []).filter((id) => !ids.has(id))).toEqual([]);

    expect(await stopWorker(worker)).toBe(0);
  });
});
