/**
 * kafkajs on the pinned current Node versions (scripts/node-versions.sh), with
 * the real broker: mufold's clients do a round trip (admin, producer, group
 * consumer) without a single process warning. kafkajs 2.2.4 alone, on Node 24,
 * reports a TimeoutNegativeWarning (the control: it shows the probe sees one);
 * src/adapters/kafka/timeout-patch.ts is what removes it. The probe runs the
 * compiled clients in dist/.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/reference.js";

const PROBE = join(REPO_ROOT, "test/support/kafka-warning-probe.mjs");
const brokers = process.env.KAFKA_BROKERS ?? "127.0.0.1:9092";

let nodes: string[] = [];
beforeAll(() => {
  nodes = execFileSync("bash", [join(REPO_ROOT, "scripts/node-versions.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] })
    .trim()
    .split("\n");
});

interface ProbeResult {
  version: string;
  warnings: string[];
  received: number;
}

function probe(node: string, mode: "mufold" | "kafkajs"): ProbeResult {
  const id = randomBytes(4).toString("hex");
  const r = spawnSync(node, [PROBE, mode, brokers, `mufold-test.${id}`, `mufold-test.${id}`], { cwd: REPO_ROOT, encoding: "utf8", timeout: 120_000 });
  expect(r.status, `${node} probe (${mode}) failed: ${r.stderr}`).toBe(0);
  const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as { warning?: string; received?: number });
  const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
  return { version, warnings: lines.flatMap((l) => (l.warning === undefined ? [] : [l.warning])), received: lines.at(-1)!.received ?? 0 };
}

describe("kafkajs on the pinned Node versions", () => {
  it("mufold's clients do a round trip on each without a process warning", () => {
    expect(nodes.length).toBeGreaterThanOrEqual(2);
    for (const node of nodes) {
      const r = probe(node, "mufold");
      expect(r.received, r.version).toBe(1);
      expect(r.warnings, r.version).toEqual([]);
    }
  });

  it("bare kafkajs 2.2.4 on Node 24 reports a TimeoutNegativeWarning (the probe sees what the patch removes)", () => {
    const node24 = nodes.find((n) => execFileSync(n, ["--version"], { encoding: "utf8" }).startsWith("v24."));
    expect(node24, `no Node 24 among ${nodes.join(", ")}`).toBeDefined();
    const r = probe(node24!, "kafkajs");
    expect(r.received).toBe(1);
    expect(r.warnings).toContain("TimeoutNegativeWarning");
  });
});
