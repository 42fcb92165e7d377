/** The `mufold` command: dispatch to subcommands. */
import { MufoldError } from "../errors.js";
import { REWARD_MEMORY_USAGE, rewardMemory } from "./reward-memory.js";
import { foldCommand, produceCommand, readCommand, replayCommand, simulateCommand } from "./stream-commands.js";
import { demoCommand } from "./demo.js";
import { serveCommand } from "./serve.js";
import { CONFIG_USAGE, configCommand } from "./config-explain.js";

const USAGE = `mufold — exact, reproducible memory utility projections

${REWARD_MEMORY_USAGE}
  mufold produce --input FILE|- [--raw]        validate and send observations (JSON array or lines)
  mufold simulate [--agents N --observations N --duplicate-rate R --conflict-rate R --seed S --rate R --malformed N]
  mufold fold                                  join the consumer group and fold into Redis (SIGTERM stops cleanly)
  mufold read (--identity ID | --agent A --project P --corpus C --surface S --retrieval R --policy P | --list) [--validate]
  mufold replay [--verify] [--promote] [--keep-shadow]
  mufold serve [--port 8080] [--host 127.0.0.1]   read-only HTTP API: /v1/projections, /v1/identities, /metrics, /healthz, /readyz
  mufold demo                                  start Kafka + Redis, simulate, fold with two workers, replay --verify
${CONFIG_USAGE}
Settings (flag / environment): --brokers KAFKA_BROKERS, --redis-url REDIS_URL, --topic MUFOLD_TOPIC,
  --group MUFOLD_GROUP, --prefix MUFOLD_PREFIX, --reducer-version MUFOLD_REDUCER_VERSION,
  --partitions MUFOLD_PARTITIONS, --cache-size MUFOLD_CACHE_SIZE, --max-value-bytes MUFOLD_MAX_VALUE_BYTES,
  --allow-finite-retention MUFOLD_ALLOW_FINITE_RETENTION, --client-id MUFOLD_CLIENT_ID
Security (docs/security.md): --kafka-tls KAFKA_TLS, --kafka-tls-ca KAFKA_TLS_CA,
  --kafka-sasl-mechanism KAFKA_SASL_MECHANISM, --kafka-sasl-username KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD,
  --kafka-sasl-password-file KAFKA_SASL_PASSWORD_FILE, --redis-tls-ca REDIS_TLS_CA,
  --redis-password-file REDIS_PASSWORD_FILE; Redis user and password go in REDIS_URL
`;

const STREAM_COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  produce: produceCommand,
  simulate: simulateCommand,
  fold: foldCommand,
  read: readCommand,
  replay: replayCommand,
  demo: demoCommand,
  serve: serveCommand,
  config: configCommand,
};

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const stream = command === undefined ? undefined : STREAM_COMMANDS[command];
  if (stream !== undefined) {
    try {
      return await stream(rest);
    } catch (err) {
      if (err instanceof MufoldError || (err instanceof TypeError && (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS"))) {
        process.stderr.write(`mufold ${command}: ${err.message}\n`);
        return 2;
      }
      throw err;
    }
  }
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
