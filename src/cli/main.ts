/** The `mufold` command: dispatch to subcommands; every failure ends as one line and an exit code (fatal.ts). */
import { UsageError } from "./args.js";
import { guardClosedPipes, writeOut } from "./io.js";
import { DEMO, DIFF, EXPLAIN, FOLD, MAIN_USAGE, PRODUCE, READ, REPLAY, REPLAY_WORKER_ARG, SERVE, SETUP, SIMULATE, STATUS, CONFIG_EXPLAIN, REWARD_MEMORY_SUBCOMMANDS, REWARD_MEMORY_USAGE } from "./specs.js";
import { packageVersion } from "./version.js";

type Command = (args: string[]) => Promise<number>;
/**
 * A command, loaded when it runs: `mufold --help`, `--version` and a usage
 * error load none of the Kafka, Redis and HTTP clients (importing every
 * command's modules cost ~0.5 s of CPU before anything was printed).
 */
type Load = () => Promise<Command>;

const COMMANDS: Record<string, Load> = {
  produce: async () => (await import("./stream-commands.js")).produceCommand,
  simulate: async () => (await import("./stream-commands.js")).simulateCommand,
  fold: async () => (await import("./fold.js")).foldCommand,
  read: async () => (await import("./read.js")).readCommand,
  explain: async () => (await import("./past-commands.js")).explainCommand,
  diff: async () => (await import("./past-commands.js")).diffCommand,
  replay: async () => (await import("./stream-commands.js")).replayCommand,
  status: async () => (await import("./status.js")).statusCommand,
  serve: async () => (await import("./serve.js")).serveCommand,
  setup: async () => (await import("./setup.js")).setupCommand,
  demo: async () => (await import("./demo.js")).demoCommand,
};

/**
 * `mufold replay --internal-worker`, a worker process of `replay --workers N` (its settings and job come over the IPC
 * channel): it loads the worker's modules only, not the coordinator's, the verifier's or the producer's.
 */
const REPLAY_WORKER: Load = async () => {
  const [{ runReplayWorker }, { createLogger }] = await Promise.all([import("../../consumers/replay/replay-worker.js"), import("../observability/log.js")]);
  return async () => runReplayWorker(createLogger({ service: "mufold" }));
};

const rewardMemory = (name: (typeof REWARD_MEMORY_SUBCOMMANDS)[number]): Load => async () => (await import("./reward-memory.js")).REWARD_MEMORY_COMMANDS[name];

/** Two-word commands: the group, its usage, its subcommands. */
const GROUPS: Record<string, { usage: string; commands: Record<string, Load> }> = {
  "reward-memory": { usage: REWARD_MEMORY_USAGE, commands: Object.fromEntries(REWARD_MEMORY_SUBCOMMANDS.map((name) => [name, rewardMemory(name)])) },
  config: { usage: CONFIG_EXPLAIN.usage, commands: { explain: async () => (await import("./config-explain.js")).configExplainCommand } },
};

/** `mufold help <command>`. */
const USAGES: Record<string, string> = {
  produce: PRODUCE.usage,
  simulate: SIMULATE.usage,
  fold: FOLD.usage,
  read: READ.usage,
  explain: EXPLAIN.usage,
  diff: DIFF.usage,
  replay: REPLAY.usage,
  status: STATUS.usage,
  serve: SERVE.usage,
  setup: SETUP.usage,
  demo: DEMO.usage,
  config: CONFIG_EXPLAIN.usage,
  "reward-memory": REWARD_MEMORY_USAGE,
};

/** Commands whose stderr is JSON log lines: their fatal error is one JSON line too. */
const JSON_LOGGING = new Set(["fold", "serve", "replay", "setup"]);

/** `table[name]` if `name` is one of its own keys: `mufold constructor` names no command. */
function own<T>(table: Record<string, T>, name: string): T | undefined {
  return Object.hasOwn(table, name) ? table[name] : undefined;
}

/** Resolve `argv` to a command to run, or to text to print. */
function route(argv: string[]): { name: string; load: Load; args: string[] } | { print: string; to: "stdout" | "stderr"; code: number } | { error: UsageError } {
  const [first, second, ...rest] = argv;
  if (first === undefined) return { print: MAIN_USAGE, to: "stderr", code: 2 };
  if (first === "--help" || first === "-h") return { print: MAIN_USAGE, to: "stdout", code: 0 };
  if (first === "help") {
    if (second === undefined) return { print: MAIN_USAGE, to: "stdout", code: 0 };
    const usage = own(USAGES, second);
    return usage === undefined ? { error: new UsageError(`no command ${JSON.stringify(second)}: mufold --help lists them`) } : { print: usage, to: "stdout", code: 0 };
  }
  if (first === "--version" || first === "-V") return { print: `${packageVersion()}\n`, to: "stdout", code: 0 };
  if (first === "replay" && second === REPLAY_WORKER_ARG && rest.length === 0) return { name: first, load: REPLAY_WORKER, args: [] };
  const command = own(COMMANDS, first);
  if (command !== undefined) return { name: first, load: command, args: argv.slice(1) };
  const group = own(GROUPS, first);
  if (group !== undefined) {
    if (second === undefined) return { print: group.usage, to: "stderr", code: 2 };
    if (second === "--help" || second === "-h") return { print: group.usage, to: "stdout", code: 0 };
    const sub = own(group.commands, second);
    if (sub === undefined) return { error: new UsageError(`unknown subcommand ${JSON.stringify(second)} of mufold ${first}: mufold ${first} --help lists them`) };
    return { name: `${first} ${second}`, load: sub, args: rest };
  }
  if (first.startsWith("-")) return { error: new UsageError(`unknown option ${first}: mufold --help lists the commands`) };
  return { error: new UsageError(`unknown command ${JSON.stringify(first)}: mufold --help lists the commands`) };
}

export async function main(argv: string[]): Promise<number> {
  guardClosedPipes();
  const target = route(argv);
  if ("print" in target) {
    try {
      await writeOut(target.print, target.to === "stdout" ? process.stdout : process.stderr);
    } catch (err) {
      return (await import("./fatal.js")).reportFatal("", err, { json: false });
    }
    return target.code;
  }
  if ("error" in target) {
    process.stderr.write(`mufold: ${target.error.message}\n`);
    return 2;
  }
  const json = JSON_LOGGING.has(target.name);
  let debug = false;
  try {
    // The reference CLI's commands ignore MUFOLD_LOG_LEVEL; mufold's own refuse an unknown one before any work.
    if (!target.name.startsWith("reward-memory")) debug = (await import("../observability/log.js")).logLevelFromEnv() === "debug";
    const run = await target.load();
    return await run(target.args);
  } catch (err) {
    return (await import("./fatal.js")).reportFatal(target.name, err, { json, debug });
  }
}
