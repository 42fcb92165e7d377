// Prints `KAFKA_BROKERS=… REDIS_URL=…` for the tests (see ./locate-services.ts; run with tsx by scripts/test.sh),
// starting the project's own Kafka and Redis when nothing is configured.
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { existsSync } from "node:fs";
import { chooseServices } from "./locate-services.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../../..");
const has = (cmd: string) => spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;
const choice = chooseServices({
  env: { KAFKA_BROKERS: process.env.KAFKA_BROKERS, REDIS_URL: process.env.REDIS_URL },
  hasJava: has("java"),
  hasRedisServer: has("redis-server"),
  isRoot: process.getuid?.() === 0,
  hasAptGet: has("apt-get"),
  // A socket is not enough: `docker version` must get an answer from the engine.
  hasContainerEngine:
    (Boolean(process.env.DOCKER_HOST) || existsSync("/var/run/docker.sock")) &&
    spawnSync("docker", ["version", "--format", "{{.Server.Version}}"], { stdio: "ignore", timeout: 5000 }).status === 0,
});
if (choice.source === "none") {
  process.stderr.write(`tests need Kafka and Redis; install: ${choice.missing.join("; ")}\n`);
  process.exit(1);
}
if (choice.source === "environment") {
  process.stdout.write(`KAFKA_BROKERS=${choice.brokers}\nREDIS_URL=${choice.redisUrl}\n`);
} else if (choice.source === "containers") {
  // The containers must outlive this short script, so testcontainers' reaper is off for them.
  process.env.TESTCONTAINERS_RYUK_DISABLED = "true";
  const { startContainers } = await import("./containers.js");
  const services = await startContainers();
  process.stderr.write("tests: Kafka and Redis run in containers started by testcontainers; remove them with `docker rm -f` when done\n");
  process.stdout.write(`KAFKA_BROKERS=${services.brokers}\nREDIS_URL=${services.redisUrl}\n`);
} else {
  execFileSync("bash", [join(root, "infra/up.sh")], { stdio: ["ignore", process.stderr, "inherit"] });
  process.stdout.write(readFileSync(join(root, ".cache/run/endpoints.env"), "utf8"));
}
