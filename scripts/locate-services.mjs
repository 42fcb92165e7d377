// Prints `KAFKA_BROKERS=… REDIS_URL=…` for the tests (see src/testing/locate-services.ts),
// starting the project's own Kafka and Redis when nothing is configured.
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chooseServices } from "../dist/src/testing/locate-services.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const has = (cmd) => spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;
const choice = chooseServices({
  env: { KAFKA_BROKERS: process.env.KAFKA_BROKERS, REDIS_URL: process.env.REDIS_URL },
  hasJava: has("java"),
  hasRedisServer: has("redis-server"),
  isRoot: process.getuid?.() === 0,
  hasAptGet: has("apt-get"),
});
if (choice.source === "none") {
  process.stderr.write(`tests need Kafka and Redis; install: ${choice.missing.join("; ")}\n`);
  process.exit(1);
}
if (choice.source === "environment") {
  process.stdout.write(`KAFKA_BROKERS=${choice.brokers}\nREDIS_URL=${choice.redisUrl}\n`);
} else {
  execFileSync("bash", [join(root, "infra/up.sh")], { stdio: ["ignore", process.stderr, "inherit"] });
  process.stdout.write(readFileSync(join(root, ".cache/run/endpoints.env"), "utf8"));
}
