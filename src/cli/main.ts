/** The `mufold` command: dispatch to subcommands; every failure ends as one line and an exit code (fatal.ts). */
import { logLevelFromEnv } from "../observability/log.js";
import { UsageError } from "./args.js";
import { configExplainCommand } from "./config-explain.js";
import { demoCommand } from "./demo.js";
import { reportFatal } from "./fatal.js";
import { foldCommand } from "./fold.js";
import { guardClosedPipes, writeOut } from "./io.js";
import { diffCommand, explainCommand } from "./past-commands.js";
import { readCommand } from "./read.js";
import { REWARD_MEMORY_COMMANDS, REWARD_MEMORY_USAGE } from "./reward-memory.js";
import { serveCommand } from "./serve.js";
import { setupCommand } from "./setup.js";
import { DEMO, DIFF, EXPLAIN, FOLD, MAIN_USAGE, PRODUCE, READ, REPLAY, SERVE, SETUP, SIMULATE, STATUS, CONFIG_EXPLAIN } from "./specs.js";
import { statusCommand } from "./status.js";
import { produceCommand, replayCommand, simulateCommand } from "./stream-commands.js";
import { packageVersion } from "./version.js";

type Command = (args: string[]) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  produce: produceCommand,
  simulate: simulateCommand,
  fold: foldCommand,
  read: readCommand,
  explain: explainCommand,
  diff: diffCommand,
  replay: replayCommand,
  status: statusCommand,
  serve: serveCommand,
  setup: setupCommand,
  demo: demoCommand,
};

/** Two-word commands: the group, its usage, its subcommands. */
const GROUPS: Record<string, { usage: string; commands: Record<string, Command> }> = {
  "reward-memory": { usage: REWARD_MEMORY_USAGE, commands: REWARD_MEMORY_COMMANDS },
  config: { usage: CONFIG_EXPLAIN.usage, commands: { explain: configExplainCommand } },
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

/** Resolve `argv` to a command to run, or to text to print. */
function route(argv: string[]): { name: string; run: Command; args: string[] } | { print: string; to: "stdout" | "stderr"; code: number } | { error: UsageError } {
  const [first, second, ...rest] = argv;
  if (first === undefined) return { print: MAIN_USAGE, to: "stderr", code: 2 };
  if (first === "--help" || first === "-h") return { print: MAIN_USAGE, to: "stdout", code: 0 };
  if (first === "help") {
    if (second === undefined) return { print: MAIN_USAGE, to: "stdout", code: 0 };
    const usage = USAGES[second];
    return usage === undefined ? { error: new UsageError(`no command ${JSON.stringify(second)}: mufold --help lists them`) } : { print: usage, to: "stdout", code: 0 };
  }
  if (first === "--version" || first === "-V") return { print: `${packageVersion()}\n`, to: "stdout", code: 0 };
  const command = COMMANDS[first];
  if (command !== undefined) return { name: first, run: command, args: argv.slice(1) };
  const group = GROUPS[first];
  if (group !== undefined) {
    if (second === undefined) return { print: group.usage, to: "stderr", code: 2 };
    if (second === "--help" || second === "-h") return { print: group.usage, to: "stdout", code: 0 };
    const sub = group.commands[second];
    if (sub === undefined) return { error: new UsageError(`unknown subcommand ${JSON.stringify(second)} of mufold ${first}: mufold ${first} --help lists them`) };
    return { name: `${first} ${second}`, run: sub, args: rest };
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
      return reportFatal("", err, { json: false });
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
    if (!target.name.startsWith("reward-memory")) debug = logLevelFromEnv() === "debug";
    return await target.run(target.args);
  } catch (err) {
    return reportFatal(target.name, err, { json, debug });
  }
}
