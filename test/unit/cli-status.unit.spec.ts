/**
 * `mufold status` and `replay --to-end` on the command line, in-process:
 * help and listing, and usage errors answered with one line and exit 2 before
 * any connection (KAFKA_BROKERS and REDIS_URL point at a listener that counts
 * connections).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { main } from "../../src/cli/main.js";
import { pointEndpointsAtCountingListener, type CountingListener } from "../support/counting-listener.js";

let listener: CountingListener;
const saved = { ...process.env };

beforeAll(async () => {
  listener = await pointEndpointsAtCountingListener();
});

afterAll(async () => {
  await listener.close();
  process.env = saved;
});

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const capture = (sink: string[]) =>
    ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      sink.push(String(chunk));
      const cb = rest.find((r): r is (e?: Error | null) => void => typeof r === "function");
      if (cb) queueMicrotask(() => cb(null));
      return true;
    }) as typeof process.stdout.write;
  vi.spyOn(process.stdout, "write").mockImplementation(capture(out));
  vi.spyOn(process.stderr, "write").mockImplementation(capture(err));
  try {
    return { code: await main(args), stdout: out.join(""), stderr: err.join("") };
  } finally {
    vi.restoreAllMocks();
  }
}

describe("mufold status on the command line", () => {
  it("--help prints its usage with the verdicts and --json, without connecting; mufold --help lists it", async () => {
    const before = listener.connections;
    const r = await run(["status", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith("usage: mufold status [--json] ")).toBe(true);
    for (const word of ["waiting_for_setup", "rebuilding", "behind_log", "ready", "--json"]) expect(r.stdout).toContain(word);
    expect((await run(["help", "status"])).stdout).toBe(r.stdout);
    expect((await run(["--help"])).stdout).toContain("mufold status [--json]");
    expect(listener.connections).toBe(before);
  });

  for (const [args, text] of [
    [["status", "--bogus"], "unknown option --bogus"],
    [["status", "--json=yes"], "option --json takes no value"],
    [["status", "extra"], 'unexpected argument "extra"'],
    [["replay", "--to-end"], "--to-end needs --verify"],
  ] as const) {
    it(`mufold ${args.join(" ")}: exit 2, one line, no connection`, async () => {
      const before = listener.connections;
      const r = await run([...args]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      const line = r.stderr.startsWith("{") ? (JSON.parse(r.stderr) as { msg: string }).msg : r.stderr;
      expect(line).toContain(text);
      expect(r.stderr.trimEnd().includes("\n")).toBe(false);
      expect(listener.connections).toBe(before);
    });
  }

  it("replay --help documents --to-end", async () => {
    const r = await run(["replay", "--help"]);
    expect(r.stdout).toContain("[--verify [--to-end] [--report FILE.html]]");
    expect(r.stdout).toMatch(/--to-end\s+with --verify: hold the live generation to the log's end/);
  });
});
