/**
 * Every infra script an operator runs answers -h / --help with its header
 * comment and does nothing else: no broker stopped, no data wiped, no state
 * directory made. Each runs with its state in a temporary directory, on ports
 * nothing listens on, and with a PATH of only bash, sed, dirname and head (all
 * printing the header takes): a script that acted anyway would fail there or
 * leave state behind, without starting or installing anything.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SCRIPTS = [
  "infra/up.sh",
  "infra/down.sh",
  "infra/status.sh",
  "infra/kafka/fetch.sh",
  "infra/kafka/start.sh",
  "infra/kafka/stop.sh",
  "infra/kafka/reset.sh",
  "infra/redis/start.sh",
  "infra/redis/stop.sh",
  "infra/redis-cluster/start.sh",
  "infra/redis-cluster/stop.sh",
  "infra/redis-acl/setup.sh",
];

/** A directory of the only commands the scripts may find. */
const bin = mkdtempSync(join(tmpdir(), "mufold-infra-help-bin-"));
for (const tool of ["bash", "sed", "dirname", "head"]) symlinkSync(execFileSync("bash", ["-c", `command -v ${tool}`], { encoding: "utf8" }).trim(), join(bin, tool));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

let cache = "";
afterEach(() => rmSync(cache, { recursive: true, force: true }));

/** Run `script` with its state under a fresh temporary cache (`prepare` may put files there first). */
function run(script: string, args: string[], prepare: (cache: string) => void = () => {}): { status: number | null; stdout: string; stderr: string } {
  cache = mkdtempSync(join(tmpdir(), "mufold-infra-help-"));
  prepare(cache);
  const env = { PATH: bin, MUFOLD_CACHE_DIR: cache, MUFOLD_KAFKA_PORT: "19990", MUFOLD_REDIS_PORT: "19980", MUFOLD_REDIS_CLUSTER_PORT: "19970" };
  const r = spawnSync(join(bin, "bash"), [join(ROOT, script), ...args], { env, encoding: "utf8", timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The script's header comment as its author wrote it: the comment lines after the shebang, before the first command. */
function header(script: string): string[] {
  const lines = readFileSync(join(ROOT, script), "utf8").split("\n").slice(1);
  const end = lines.findIndex((l) => !l.startsWith("#"));
  return lines.slice(0, end).map((l) => l.replace(/^# ?/, ""));
}

describe("infra scripts: -h and --help", () => {
  it.each(SCRIPTS.flatMap((s) => [[s, "--help"], [s, "-h"]]))("%s %s prints its header and does nothing", (script, flag) => {
    const r = run(script, [flag]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout.trimEnd().split("\n")).toEqual(header(script));
    expect(header(script).length).toBeGreaterThan(0);
    expect(readdirSync(cache)).toEqual([]); // no state directory, no fetched jars
  });

  it.each([["--help"], ["--bogus"], ["--stopped", "extra"]])("reset.sh %s leaves the broker's data (an unknown argument is refused first)", (...args) => {
    const data = (c: string) => join(c, "run", "kafka-19990", "data");
    const r = run("infra/kafka/reset.sh", args, (c) => {
      mkdirSync(data(c), { recursive: true });
      writeFileSync(join(data(c), "meta.properties"), "kept");
    });
    expect(readFileSync(join(data(cache), "meta.properties"), "utf8")).toBe("kept");
    if (args[0] === "--help") expect(r.status).toBe(0);
    else {
      expect(r.status).toBe(1);
      expect(r.stderr).toContain("unknown argument");
    }
  });
});
