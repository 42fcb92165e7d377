/** The `mufold` command: dispatch to subcommands. */
import { REWARD_MEMORY_USAGE, rewardMemory } from "./reward-memory.js";

const USAGE = `mufold — exact, reproducible memory utility projections

${REWARD_MEMORY_USAGE}`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "reward-memory":
      return rewardMemory(rest);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`mufold: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}
