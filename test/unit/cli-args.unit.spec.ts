/** The argument parser, the typed flag values and `read`'s target, all checked before any work. */
import { describe, expect, it } from "vitest";
import { UsageError, parseCommandArgs, type CommandSpec } from "../../src/cli/args.js";
import { parsePoint, readTarget } from "../../src/cli/read.js";
import { parseAsOfTime } from "../../src/client/past.js";
import { READ, UTILITY_PROJECT } from "../../src/cli/specs.js";
import { SERVE_ALIASES } from "../../src/cli/serve.js";
import { intFlag, listenAddress, numberFlag } from "../../src/cli/values.js";
import { resolveSettings } from "../../src/config/settings.js";
import { MufoldError } from "../../src/errors.js";
import { identityOf } from "../../src/client/readback.js";

const spec: CommandSpec = { name: "t", usage: "usage: t\n", flags: { input: { type: "string" }, raw: { type: "boolean" }, rate: { type: "string" } } };

/** The UsageError message of a throwing call. */
function usageError(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error("expected a UsageError");
}

describe("parseCommandArgs", () => {
  it("reads --name value, --name=value and booleans; the last repeat wins", () => {
    expect(parseCommandArgs(spec, ["--input", "a.json", "--raw", "--rate=0.5", "--input", "b.json"])).toEqual({
      help: false,
      values: { input: "b.json", raw: true, rate: "0.5" },
    });
  });

  it("answers help for --help or -h anywhere, even after a bad option", () => {
    for (const args of [["--help"], ["-h"], ["--bogus", "--help"], ["--input", "x", "-h"], ["--input"].concat("--help")]) {
      expect(parseCommandArgs(spec, args)).toEqual({ help: true });
    }
    // After "--" it is an argument, not a flag.
    expect(usageError(() => parseCommandArgs(spec, ["--", "--help"]))).toBe('unexpected argument "--help"');
  });

  it("names an unknown option, a stray argument, a missing value and a value given to a boolean", () => {
    expect(usageError(() => parseCommandArgs(spec, ["--bogus"]))).toBe("unknown option --bogus");
    expect(usageError(() => parseCommandArgs(spec, ["--bogus=1"]))).toBe("unknown option --bogus");
    expect(usageError(() => parseCommandArgs(spec, ["-x"]))).toBe("unknown option -x");
    expect(usageError(() => parseCommandArgs(spec, ["file.json"]))).toBe('unexpected argument "file.json"');
    expect(usageError(() => parseCommandArgs(spec, ["--input"]))).toBe("option --input needs a value");
    expect(usageError(() => parseCommandArgs(spec, ["--input", "--raw"]))).toMatch(/^option --input needs a value \(write --input=--raw/);
    expect(usageError(() => parseCommandArgs(spec, ["--raw=yes"]))).toBe("option --raw takes no value");
    // Abbreviations are off unless the command asks for them.
    expect(usageError(() => parseCommandArgs(spec, ["--inp", "x"]))).toBe("unknown option --inp");
  });

  it("takes '-' and negative numbers as values (argparse's rule), so a range check can name them", () => {
    expect(parseCommandArgs(spec, ["--input", "-"])).toEqual({ help: false, values: { input: "-" } });
    expect(parseCommandArgs(spec, ["--rate", "-1"])).toEqual({ help: false, values: { rate: "-1" } });
    expect(parseCommandArgs(spec, ["--rate", "-.5"])).toEqual({ help: false, values: { rate: "-.5" } });
  });

  it("reward-memory accepts unique prefixes as the reference's argparse does, and refuses ambiguous ones", () => {
    expect(parseCommandArgs(UTILITY_PROJECT, ["--inp", "f.json", "--form", "json"])).toEqual({ help: false, values: { input: "f.json", format: "json" } });
    expect(parseCommandArgs(UTILITY_PROJECT, ["--he"])).toEqual({ help: true });
    const ambiguous: CommandSpec = { ...UTILITY_PROJECT, flags: { input: { type: "string" }, inplace: { type: "boolean" } } };
    expect(usageError(() => parseCommandArgs(ambiguous, ["--in", "x"]))).toBe("ambiguous option --in: could be --input, --inplace");
  });
});

describe("typed flag values", () => {
  // fold's --http-port, serve's --port and MUFOLD_HTTP_PORT are one setting (httpPort), checked by the registry.
  const fold = (flags: Record<string, string>, env: Record<string, string> = {}) => resolveSettings(flags, env);
  const serve = (flags: Record<string, string>, env: Record<string, string> = {}) => resolveSettings(flags, env, { aliases: SERVE_ALIASES });
  const settingError = (f: () => unknown): string => {
    try {
      f();
    } catch (err) {
      expect(err).toBeInstanceOf(MufoldError);
      return (err as Error).message;
    }
    throw new Error("expected a MufoldError");
  };

  it("ports: 0-65535 digits only, one check for fold and serve, naming the flag or variable given", () => {
    expect(fold({ "http-port": "0" }).httpPort).toBe(0);
    expect(serve({ port: "65535" }).httpPort).toBe(65535);
    expect(fold({}, { MUFOLD_HTTP_PORT: "9100" }).httpPort).toBe(9100);
    for (const bad of ["abc", "-1", "65536", "80.5", " 80", "1e3"]) {
      const why = `= ${JSON.stringify(bad)}: must be a port number from 0 to 65535`;
      expect(settingError(() => fold({ "http-port": bad }))).toBe(`invalid setting httpPort (--http-port / MUFOLD_HTTP_PORT) ${why}`);
      expect(settingError(() => serve({ "http-port": bad }))).toBe(`invalid setting httpPort (--http-port / MUFOLD_HTTP_PORT) ${why}`);
      expect(settingError(() => serve({ port: bad }))).toBe(`invalid setting httpPort (--port / MUFOLD_HTTP_PORT) ${why}`);
      expect(settingError(() => fold({}, { MUFOLD_HTTP_PORT: bad }))).toBe(`invalid setting httpPort (--http-port / MUFOLD_HTTP_PORT) ${why}`);
      expect(settingError(() => serve({}, { MUFOLD_HTTP_PORT: bad }))).toBe(`invalid setting httpPort (--http-port / MUFOLD_HTTP_PORT) ${why}`);
    }
    expect(settingError(() => serve({ port: "80", "http-port": "81" }))).toBe("--port and --http-port both set httpPort: give one of them");
  });

  it("where to listen: fold only with a port, serve on its default port; the host from the flag or MUFOLD_HTTP_HOST", () => {
    expect(listenAddress(fold({}), undefined)).toBeUndefined();
    expect(listenAddress(fold({ "http-port": "9100" }), undefined)).toEqual({ port: 9100, host: "127.0.0.1" });
    expect(listenAddress(serve({}, { MUFOLD_HTTP_HOST: "0.0.0.0" }), 8080)).toEqual({ port: 8080, host: "0.0.0.0" });
    expect(listenAddress(serve({ port: "0", host: "::1" }), 8080)).toEqual({ port: 0, host: "::1" });
    expect(settingError(() => serve({ host: " " }))).toBe('invalid setting httpHost (--host / MUFOLD_HTTP_HOST) = " ": must not be empty');
  });

  it("integers and numbers: the default when absent, else in range, or an error naming the flag", () => {
    expect(intFlag(undefined, "agents", 50, { min: 1 })).toBe(50);
    expect(intFlag("7", "agents", 50, { min: 1 })).toBe(7);
    expect(usageError(() => intFlag("-1", "agents", 50, { min: 1 }))).toBe('invalid --agents = "-1": must be an integer at least 1');
    expect(usageError(() => intFlag("2.5", "agents", 50, { min: 1 }))).toBe('invalid --agents = "2.5": must be an integer at least 1');
    expect(usageError(() => intFlag("99999999999999999999", "seed", 1, { min: 0 }))).toMatch(/^invalid --seed/);
    expect(numberFlag("0.25", "duplicate-rate", 0.1, { min: 0, max: 1 })).toBe(0.25);
    expect(usageError(() => numberFlag("x", "rate", 0, { min: 0 }))).toBe('invalid --rate = "x": must be a number at least 0');
    expect(usageError(() => numberFlag("1.5", "conflict-rate", 0, { min: 0, max: 1 }))).toBe('invalid --conflict-rate = "1.5": must be a number from 0 to 1');
    expect(usageError(() => numberFlag("Infinity", "rate", 0, { min: 0 }))).toMatch(/^invalid --rate/);
  });
});

describe("read: what to read, decided before connecting", () => {
  const scope = { agent: "agent-1", project: "proj", corpus: "corpus", surface: "surface", retrieval: "retrieval:1", policy: "policy:1" };
  const parsed = (args: string[]) => {
    const p = parseCommandArgs(READ, args);
    if (p.help) throw new Error("unexpected help");
    return p.values;
  };

  it("a partial scope names every missing flag", () => {
    expect(usageError(() => readTarget(parsed(["--agent", "A"]), "memory_utility_reducer_v0"))).toBe(
      "missing --project, --corpus, --surface, --retrieval, --policy: a scope needs all six of --agent --project --corpus --surface --retrieval --policy",
    );
  });

  it("an identity must be mur_ and 64 lowercase hex digits", () => {
    const good = `mur_${"ab".repeat(32)}`;
    expect(readTarget(parsed(["--identity", good]), "v")).toEqual({ list: false, identity: good, validate: false });
    for (const bad of ["garbage", `mur_${"AB".repeat(32)}`, `mur_${"a".repeat(63)}`, `mur_${"a".repeat(65)}`, `mui_${"a".repeat(64)}`]) {
      expect(usageError(() => readTarget(parsed(["--identity", bad]), "v"))).toMatch(/^invalid --identity ".*": must be mur_ followed by 64 lowercase hex digits$/);
    }
  });

  it("the six flags give the identity a consumer computes itself", () => {
    const args = Object.entries(scope).flatMap(([k, v]) => [`--${k}`, v]);
    const expected = identityOf({
      scope: { agent_id: "agent-1", project_id: "proj", corpus_id: "corpus", surface_id: "surface" },
      retrieval_snapshot_ref: "retrieval:1",
      policy_snapshot_ref: "policy:1",
      reducer_version: "memory_utility_reducer_v0",
    });
    expect(readTarget(parsed([...args, "--validate"]), "memory_utility_reducer_v0")).toEqual({ list: false, identity: expected, validate: true });
    expect(usageError(() => readTarget(parsed([...args.slice(0, -2), "--policy=-policy"]), "memory_utility_reducer_v0"))).toMatch(/^invalid scope or snapshot ref: /);
  });

  it("exactly one of --identity, the scope or --list", () => {
    expect(usageError(() => readTarget(parsed([]), "v"))).toMatch(/^needs --identity mur_…, the six scope flags/);
    expect(usageError(() => readTarget(parsed(["--list", "--agent", "A"]), "v"))).toBe("give one of --identity, the six scope flags or --list, not several");
    expect(usageError(() => readTarget(parsed(["--list", "--validate"]), "v"))).toBe("--validate checks one packet: it does not go with --list");
    expect(readTarget(parsed(["--list"]), "v")).toEqual({ list: true });
  });

  it("as of offsets or a time, not both, never with --list; a malformed one names the accepted form", () => {
    const id = `mur_${"ab".repeat(32)}`;
    expect(readTarget(parsed(["--identity", id, "--as-of-offset", "3:1200,0:17"]), "v")).toEqual({
      list: false,
      identity: id,
      validate: false,
      asOf: [
        { partition: 3, offset: 1200n },
        { partition: 0, offset: 17n },
      ],
    });
    expect(readTarget(parsed(["--identity", id, "--as-of-time", "2026-12-05T09:30:00+02:00"]), "v")).toEqual({
      list: false,
      identity: id,
      validate: false,
      asOf: { time: "2026-12-05T09:30:00+02:00" },
    });
    expect(usageError(() => readTarget(parsed(["--identity", id, "--as-of-offset", "0:1", "--as-of-time", "2026-12-05T09:30:00Z"]), "v"))).toBe(
      "give --as-of-offset or --as-of-time, not both",
    );
    expect(usageError(() => readTarget(parsed(["--list", "--as-of-time", "2026-12-05T09:30:00Z"]), "v"))).toMatch(/do not go with --list$/);
    expect(usageError(() => readTarget(parsed(["--identity", id, "--as-of-offset", "3@12"]), "v"))).toMatch(/^invalid --as-of-offset "3@12": expected PARTITION:OFFSET/);
    expect(usageError(() => readTarget(parsed(["--identity", id, "--as-of-offset", "1:2,1:3"]), "v"))).toBe('invalid --as-of-offset "1:2,1:3": partition 1 is named twice');
    // A naive time, a date alone, an impossible date, a space instead of T: refused.
    for (const bad of ["2026-12-05T09:30:00", "2026-12-05", "2026-02-30T00:00:00Z", "2026-12-05 09:30:00Z", "yesterday"]) {
      expect(usageError(() => readTarget(parsed(["--identity", id, "--as-of-time", bad]), "v"))).toBe(
        `invalid --as-of-time ${JSON.stringify(bad)}: expected an ISO 8601 date-time with its UTC offset, like 2026-12-05T09:30:00Z or 2026-12-05T11:30:00.250+02:00`,
      );
    }
  });
});

describe("diff --from/--to: a time when it starts like a date, else offsets", () => {
  it("reads either form and refuses anything else", () => {
    expect(parsePoint("2:40", "--from")).toEqual([{ partition: 2, offset: 40n }]);
    expect(parsePoint("2026-12-05T09:30:00.250Z", "--to")).toEqual({ time: "2026-12-05T09:30:00.250Z" });
    expect(usageError(() => parsePoint("2:x", "--from"))).toMatch(/^invalid --from "2:x": expected PARTITION:OFFSET/);
    expect(usageError(() => parsePoint("soon", "--to"))).toMatch(/^invalid --to "soon": expected PARTITION:OFFSET/);
    expect(usageError(() => parsePoint("2026-12-05", "--to"))).toMatch(/^invalid --to "2026-12-05": expected an ISO 8601 date-time/);
    expect(parsePoint("20261205T093000Z", "--from")).toEqual({ time: "20261205T093000Z" }); // the basic format --as-of-time takes
  });

  it("times are the instants JavaScript's own ISO parser gives, years before 100 and offsets included", () => {
    for (const text of ["0099-06-01T00:00:00Z", "0001-01-01T00:00:00+00:00", "2026-12-05T11:30:00.250+02:00", "2024-02-29T23:59:59.999999Z"]) {
      // Date.parse takes at most ms: the expected instant is the text cut to ms, then parsed by the runtime.
      expect(parseAsOfTime(text), text).toBe(Date.parse(text.replace(/(\.\d{3})\d+/, "$1")));
    }
  });
});
