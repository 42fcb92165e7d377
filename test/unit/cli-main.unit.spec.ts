/**
 * The `mufold` command in-process: --help everywhere, --version, unknown
 * options and bad values answered with one line and exit 2, all before any
 * connection (KAFKA_BROKERS and REDIS_URL point at a listener that counts
 * connections), fatal errors as one JSON line for the JSON-logging commands,
 * and a closed stdout ending the command quietly.
 */
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { main } from "../../src/cli/main.js";
import { pointEndpointsAtCountingListener, type CountingListener } from "../support/counting-listener.js";
import { createLogger, logLevelFromEnv } from "../../src/observability/log.js";

const PACKAGE = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

let listener: CountingListener;
const saved = { ...process.env };

beforeAll(async () => {
  listener = await pointEndpointsAtCountingListener();
  delete process.env.MUFOLD_LOG_LEVEL;
  delete process.env.MUFOLD_HTTP_PORT;
});

afterAll(async () => {
  await listener.close();
  process.env = saved;
});

afterEach(() => {
  vi.restoreAllMocks();
  delete process.env.MUFOLD_LOG_LEVEL;
});

type WriteCallback = (err?: Error | null) => void;

/** Run main with stdout/stderr captured; `stdoutError` makes every stdout write fail with it. */
async function run(args: string[], stdoutError?: NodeJS.ErrnoException): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const capture = (sink: string[], fail?: NodeJS.ErrnoException) =>
    ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      if (fail === undefined) sink.push(String(chunk));
      const cb = rest.find((r): r is WriteCallback => typeof r === "function");
      if (cb) queueMicrotask(() => cb(fail ?? null));
      return true;
    }) as typeof process.stdout.write;
  vi.spyOn(process.stdout, "write").mockImplementation(capture(out, stdoutError));
  vi.spyOn(process.stderr, "write").mockImplementation(capture(err));
  const code = await main(args);
  vi.restoreAllMocks();
  return { code, stdout: out.join(""), stderr: err.join("") };
}

const oneLine = (text: string) => text.endsWith("\n") && !text.slice(0, -1).includes("\n");
/** The message of a fatal line: plain, or the msg of a JSON log line (fold, serve, replay). */
const message = (line: string) => (line.startsWith("{") ? (JSON.parse(line) as { msg: string }).msg : line);

const COMMANDS = [
  "produce",
  "simulate",
  "fold",
  "read",
  "replay",
  "serve",
  "demo",
  "config explain",
  "reward-memory utility-project",
  "reward-memory validate",
];

describe("--help and --version", () => {
  for (const command of COMMANDS) {
    for (const flag of ["--help", "-h"]) {
      it(`mufold ${command} ${flag}: its usage on stdout, exit 0, no connection`, async () => {
        const before = listener.connections;
        const r = await run([...command.split(" "), flag]);
        expect(r.code).toBe(0);
        expect(r.stdout.startsWith(`usage: mufold ${command} `)).toBe(true);
        expect(r.stderr).toBe("");
        expect(listener.connections).toBe(before);
      });
    }
  }

  it("help comes first wherever it is, even after other flags", async () => {
    const r = await run(["read", "--identity", "garbage", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: mufold read /);
  });

  it("mufold --help, -h, help and help <command> print usage; mufold alone prints it on stderr with exit 2", async () => {
    for (const args of [["--help"], ["-h"], ["help"]]) {
      const r = await run(args);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^usage: mufold <command>/);
      for (const command of COMMANDS) expect(r.stdout).toContain(`mufold ${command.split(" ")[0]}`);
    }
    expect((await run(["help", "fold"])).stdout).toMatch(/^usage: mufold fold /);
    expect((await run(["reward-memory", "--help"])).stdout).toContain("mufold reward-memory utility-project");
    const bare = await run([]);
    expect(bare.code).toBe(2);
    expect(bare.stdout).toBe("");
    expect(bare.stderr).toMatch(/^usage: mufold <command>/);
  });

  it("--version and -V print the version of package.json", async () => {
    for (const flag of ["--version", "-V"]) {
      const r = await run([flag]);
      expect(r).toEqual({ code: 0, stdout: `${PACKAGE.version}\n`, stderr: "" });
    }
  });

  it("--version, --help and an unknown command load no command's modules: no Kafka, Redis, logging or metrics client", () => {
    // A fresh process: this one has loaded everything. What it loaded through require (the clients are CommonJS) is listed after main returns.
    const script = `
      import { createRequire } from "node:module";
      const { main } = await import(${JSON.stringify(new URL("../../src/cli/main.ts", import.meta.url).href)});
      for (const args of [["--version"], ["--help"], ["help", "fold"], ["--bogus"], ["bogus"]]) await main(args);
      const loaded = Object.keys(createRequire(import.meta.url).cache).map((p) => /node_modules\\/(kafkajs|ioredis|pino|prom-client)\\//.exec(p)?.[1]).filter(Boolean);
      process.stderr.write("LOADED " + JSON.stringify([...new Set(loaded)]) + "\\n");`;
    const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", cwd: new URL("../..", import.meta.url).pathname });
    expect(r.stderr).toContain("unknown option --bogus"); // the script ran main to the end
    expect(/LOADED (.*)/.exec(r.stderr)?.[1]).toBe("[]");
  });

  it("every reward-memory subcommand is routed to its module (utility-reduce is utility-project's other name)", async () => {
    for (const sub of ["utility-project", "utility-reduce", "validate"]) {
      const r = await run(["reward-memory", sub, "--bogus"]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/--bogus/);
    }
  });
});

describe("bad command lines: exit 2 with one line, before any work", () => {
  for (const command of COMMANDS) {
    it(`mufold ${command} --bogus`, async () => {
      const before = listener.connections;
      const r = await run([...command.split(" "), "--bogus"]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(oneLine(r.stderr)).toBe(true);
      expect(message(r.stderr)).toContain("unknown option --bogus");
      expect(listener.connections).toBe(before);
    });
  }

  it("an unknown command, subcommand or top-level option", async () => {
    for (const [args, text] of [
      [["bogus"], 'unknown command "bogus"'],
      [["--bogus"], "unknown option --bogus"],
      [["config", "show"], 'unknown subcommand "show" of mufold config'],
      [["reward-memory", "reduce"], 'unknown subcommand "reduce" of mufold reward-memory'],
      // Names an object has without having them as keys are no commands either.
      [["constructor"], 'unknown command "constructor"'],
      [["toString"], 'unknown command "toString"'],
      [["reward-memory", "toString"], 'unknown subcommand "toString" of mufold reward-memory'],
      [["help", "hasOwnProperty"], 'no command "hasOwnProperty"'],
    ] as const) {
      const r = await run([...args]);
      expect(r.code).toBe(2);
      expect(oneLine(r.stderr)).toBe(true);
      expect(r.stderr).toContain(text);
    }
  });

  for (const [args, text] of [
    [["read", "--agent", "A"], "missing --project, --corpus, --surface, --retrieval, --policy"],
    [["read", "--identity", "garbage"], 'invalid --identity "garbage"'],
    [["simulate", "--agents", "-1"], 'invalid --agents = "-1"'],
    [["simulate", "--rate", "x"], 'invalid --rate = "x"'],
    [["simulate", "--duplicate-rate", "2"], 'invalid --duplicate-rate = "2"'],
    [["replay", "--drop-after", "soon"], 'invalid --drop-after = "soon"'],
    [["replay", "--report", "r.html"], "--report needs --verify"],
    [["serve", "--port", "99999"], 'invalid setting httpPort (--port / MUFOLD_HTTP_PORT) = "99999"'],
    [["produce", "--input"], "option --input needs a value"],
  ] as const) {
    it(`mufold ${args.join(" ")}`, async () => {
      const before = listener.connections;
      const r = await run([...args]);
      expect(r.code).toBe(2);
      expect(oneLine(r.stderr)).toBe(true);
      expect(message(r.stderr)).toContain(text);
      expect(listener.connections).toBe(before);
    });
  }

  it("fold --http-port abc: one JSON log line (the fold logs JSON), before it joins anything", async () => {
    const before = listener.connections;
    const r = await run(["fold", "--http-port", "abc"]);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(true);
    const line = JSON.parse(r.stderr) as Record<string, unknown>;
    expect(line).toMatchObject({ level: "fatal", service: "mufold", command: "fold", exitCode: 2 });
    expect(line.msg).toBe('invalid setting httpPort (--http-port / MUFOLD_HTTP_PORT) = "abc": must be a port number from 0 to 65535');
    expect(Number.isNaN(Date.parse(String(line.time)))).toBe(false);
    expect(listener.connections).toBe(before);
  });

  it("MUFOLD_HTTP_PORT is checked like --http-port", async () => {
    process.env.MUFOLD_HTTP_PORT = "eighty";
    try {
      const r = await run(["fold"]);
      expect(r.code).toBe(2);
      expect((JSON.parse(r.stderr) as { msg: string }).msg).toBe('invalid setting httpPort (--http-port / MUFOLD_HTTP_PORT) = "eighty": must be a port number from 0 to 65535');
    } finally {
      delete process.env.MUFOLD_HTTP_PORT;
    }
  });

  it("fold --http-port is checked exactly as serve's port: the same value, the same one-line refusal, before any connection", async () => {
    const before = listener.connections;
    const expected = (flag: string) => `invalid setting httpPort (${flag} / MUFOLD_HTTP_PORT) = "70000": must be a port number from 0 to 65535`;
    const fold = await run(["fold", "--http-port", "70000"]);
    const serveHttpPort = await run(["serve", "--http-port", "70000"]);
    const servePort = await run(["serve", "--port", "70000"]);
    for (const r of [fold, serveHttpPort, servePort]) {
      expect(r.code).toBe(2);
      expect(oneLine(r.stderr)).toBe(true);
    }
    expect((JSON.parse(fold.stderr) as { msg: string }).msg).toBe(expected("--http-port"));
    expect((JSON.parse(serveHttpPort.stderr) as { msg: string }).msg).toBe(expected("--http-port"));
    expect((JSON.parse(servePort.stderr) as { msg: string }).msg).toBe(expected("--port"));
    expect(listener.connections).toBe(before);
  });

  it("a bad change-feed setting stops the fold with one line naming the variable, before any connection", async () => {
    process.env.MUFOLD_CHANGE_FEED = "maybe";
    const before = listener.connections;
    try {
      const r = await run(["fold"]);
      expect(r.code).toBe(2);
      expect((JSON.parse(r.stderr) as { msg: string }).msg).toBe('invalid setting changeFeed (MUFOLD_CHANGE_FEED) = "maybe": must be on or off');
      expect(listener.connections).toBe(before);
    } finally {
      delete process.env.MUFOLD_CHANGE_FEED;
    }
  });
});

describe("MUFOLD_LOG_LEVEL", () => {
  it("an unknown level is refused with one line naming it, as JSON for the fold, before any connection", async () => {
    process.env.MUFOLD_LOG_LEVEL = "verbose";
    const before = listener.connections;
    const read = await run(["read", "--list"]);
    expect(read.code).toBe(2);
    expect(read.stderr).toBe('mufold read: invalid setting logLevel (MUFOLD_LOG_LEVEL) = "verbose": must be one of debug, info, warn, error, silent\n');
    const fold = await run(["fold"]);
    expect(fold.code).toBe(2);
    expect(JSON.parse(fold.stderr)).toMatchObject({ level: "fatal", command: "fold", msg: 'invalid setting logLevel (MUFOLD_LOG_LEVEL) = "verbose": must be one of debug, info, warn, error, silent' });
    expect((await run(["config", "explain"])).code).toBe(2);
    expect(listener.connections).toBe(before);
  });

  it("logLevelFromEnv and createLogger refuse what they do not know; unset means info", () => {
    expect(logLevelFromEnv({})).toBe("info");
    expect(logLevelFromEnv({ MUFOLD_LOG_LEVEL: "warn" })).toBe("warn");
    expect(() => logLevelFromEnv({ MUFOLD_LOG_LEVEL: "INFO" })).toThrow(/^invalid setting logLevel \(MUFOLD_LOG_LEVEL\) = "INFO": must be one of debug, info, warn, error, silent$/);
    expect(() => createLogger({}, "trace" as never)).toThrow(/invalid log level "trace"/);
  });
});

describe("a closed standard output", () => {
  const epipe = Object.assign(new Error("write EPIPE"), { code: "EPIPE" });

  it("ends the command quietly with exit 141, no stack", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mufold-cli-"));
    const input = join(dir, "in.json");
    writeFileSync(input, JSON.stringify({ observations: [], scope: {}, retrieval_snapshot_ref: "r", policy_snapshot_ref: "p" }));
    for (const args of [["--help"], ["fold", "--help"], ["reward-memory", "utility-project", "--input", input], ["config", "explain"]]) {
      const r = await run(args, epipe);
      expect(r.code).toBe(141);
      expect(r.stderr).toBe("");
    }
  });

  it("any other write error is still reported", async () => {
    const r = await run(["config", "explain"], Object.assign(new Error("disk full"), { code: "ENOSPC" }));
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("mufold config explain: Error: disk full\n");
  });
});
