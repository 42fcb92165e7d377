/**
 * Every flag a command's parser accepts is in that command's --help, and each
 * command's own flags (not the shared setting flags) are in `mufold --help` on
 * the command's entry. The flags come from the specs the parser reads, so a
 * flag added without help fails here.
 */
import { describe, expect, it } from "vitest";
import { parseCommandArgs, type CommandSpec } from "../../src/cli/args.js";
import * as specs from "../../src/cli/specs.js";
import { settingFlags } from "../../src/config/settings.js";

function isSpec(value: unknown): value is CommandSpec {
  return typeof value === "object" && value !== null && "name" in value && "usage" in value && "flags" in value;
}

const SPECS = Object.values(specs).filter(isSpec);
const SETTING_FLAGS = new Set(Object.keys(settingFlags()));

/** `--name` as a whole option in `text`: not a prefix of a longer one (--report vs --report-dir). */
function mentions(text: string, flag: string): boolean {
  return new RegExp(`(?<![\\w-])--${flag.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w-])`).test(text);
}

/** The entry of `mufold <name>` in the main usage: its first line to the next command's. */
function mainEntry(name: string): string | undefined {
  const lines = specs.MAIN_USAGE.split("\n");
  const start = lines.findIndex((l) => l === `  mufold ${name}` || l.startsWith(`  mufold ${name} `));
  if (start < 0) return undefined;
  const next = lines.findIndex((l, i) => i > start && l.startsWith("  mufold "));
  return lines.slice(start, next < 0 ? undefined : next).join("\n");
}

describe("--help lists every flag the parser accepts", () => {
  it("finds the commands (else the checks below prove nothing)", () => {
    expect(SPECS.map((s) => s.name).sort()).toEqual(
      ["config explain", "demo", "diff", "explain", "fold", "produce", "read", "replay", "reward-memory utility-project", "reward-memory validate", "serve", "setup", "simulate", "status"],
    );
  });

  for (const spec of SPECS) {
    it(`mufold ${spec.name} --help`, () => {
      const flags = Object.keys(spec.flags);
      expect(flags.length).toBeGreaterThan(0);
      for (const flag of flags) {
        // The parser takes it: the set under test is the parser's own.
        const args = spec.flags[flag]!.type === "boolean" ? [`--${flag}`] : [`--${flag}`, "x"];
        expect(parseCommandArgs(spec, args)).toEqual({ help: false, values: { [flag]: spec.flags[flag]!.type === "boolean" ? true : "x" } });
        expect(mentions(spec.usage, flag), `--${flag} is missing from mufold ${spec.name} --help`).toBe(true);
      }
    });

    it(`mufold --help shows ${spec.name} with its own flags`, () => {
      const entry = mainEntry(spec.name);
      expect(entry, `mufold --help has no entry for ${spec.name}`).toBeDefined();
      for (const flag of Object.keys(spec.flags).filter((f) => !SETTING_FLAGS.has(f))) {
        expect(mentions(entry!, flag), `--${flag} is missing from the ${spec.name} entry of mufold --help`).toBe(true);
      }
    });
  }

  it("replay's flags the first user missed are there, in both", () => {
    const entry = mainEntry("replay")!;
    for (const flag of ["report", "change-reducer-version", "chunk-bytes"]) {
      expect(mentions(specs.REPLAY.usage, flag)).toBe(true);
      expect(mentions(entry, flag)).toBe(true);
    }
  });

  it("the worker's internal argument is no flag of replay", () => {
    expect(() => parseCommandArgs(specs.REPLAY, [specs.REPLAY_WORKER_ARG])).toThrow("unknown option --internal-worker");
  });
});
