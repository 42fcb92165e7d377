/**
 * A reader for the repository's Dockerfile, enough for the deployment tests:
 * instructions (continuation lines joined, comments dropped), build ARGs
 * substituted, grouped by stage. JSON-form arguments (`["a", "b"]`) are parsed
 * as JSON; the shell form is split on whitespace. Anything it does not know
 * is kept as is, so a test that looks for it fails rather than guesses.
 */
import { readFileSync } from "node:fs";

export interface Instruction {
  /** Upper-case keyword: FROM, COPY, RUN, … */
  keyword: string;
  /** The rest of the line, ARGs substituted. */
  text: string;
  /** `--name=value` flags at the start (COPY --from=build, HEALTHCHECK --interval=…). */
  flags: Record<string, string>;
  /** The arguments after the flags: a JSON array's items, or whitespace-separated words. */
  args: string[];
}

export interface Stage {
  /** The name after AS, or the stage's index. */
  name: string;
  from: string;
  instructions: Instruction[];
}

export interface Dockerfile {
  /** ARGs declared before the first FROM, with their defaults. */
  globalArgs: Record<string, string>;
  stages: Stage[];
}

function logicalLines(text: string): string[] {
  const out: string[] = [];
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = raw.trimEnd();
    if (/^\s*#/.test(line)) continue; // a comment (also inside a continued instruction)
    if (line.endsWith("\\")) {
      pending += line.slice(0, -1) + " ";
      continue;
    }
    const whole = (pending + line).trim();
    pending = "";
    if (whole !== "") out.push(whole);
  }
  if (pending.trim() !== "") out.push(pending.trim());
  return out;
}

function substitute(text: string, args: Record<string, string>): string {
  return text.replace(/\$\{(\w+)\}|\$(\w+)/g, (all, a: string | undefined, b: string | undefined) => args[(a ?? b)!] ?? all);
}

function parseInstruction(keyword: string, rest: string): Instruction {
  const flags: Record<string, string> = {};
  let body = rest;
  for (let m = /^--([\w-]+)=(\S+)\s*/.exec(body); m !== null; m = /^--([\w-]+)=(\S+)\s*/.exec(body)) {
    flags[m[1]!] = m[2]!;
    body = body.slice(m[0].length);
  }
  let args: string[];
  if (keyword === "HEALTHCHECK" && /^CMD\s/.test(body)) {
    const inner = body.slice(4).trim();
    args = ["CMD", ...(inner.startsWith("[") ? (JSON.parse(inner) as string[]) : [inner])];
  } else if (body.startsWith("[")) {
    args = JSON.parse(body) as string[];
  } else {
    args = body.split(/\s+/).filter(Boolean);
  }
  return { keyword, text: rest, flags, args };
}

export function parseDockerfile(path: string): Dockerfile {
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const line of logicalLines(readFileSync(path, "utf8"))) {
    const m = /^(\w+)\s+(.*)$/.exec(line);
    if (m === null) throw new Error(`Dockerfile: cannot read ${JSON.stringify(line)}`);
    const keyword = m[1]!.toUpperCase();
    const rest = substitute(m[2]!, globalArgs);
    if (keyword === "ARG" && stages.length === 0) {
      const [name, value = ""] = rest.split("=", 2) as [string, string?];
      globalArgs[name.trim()] = value.trim();
      continue;
    }
    if (keyword === "FROM") {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      if (from === null) throw new Error(`Dockerfile: cannot read FROM ${rest}`);
      stages.push({ name: from[2] ?? String(stages.length), from: from[1]!, instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (stage === undefined) throw new Error(`Dockerfile: ${keyword} before the first FROM`);
    stage.instructions.push(parseInstruction(keyword, rest));
  }
  return { globalArgs, stages };
}

/** The one instruction of this keyword in a stage (the last wins, as in Docker). */
export function last(stage: Stage, keyword: string): Instruction | undefined {
  return stage.instructions.filter((i) => i.keyword === keyword).at(-1);
}

/**
 * Would `.dockerignore` keep `path` (relative, `/`-separated) out of the build
 * context? Patterns as Docker reads them: relative to the context root, `*`
 * within one path segment, `**` across segments, a match on a directory
 * excludes what is under it, `!` re-includes; the last matching line wins.
 */
export function dockerIgnored(patterns: readonly string[], path: string): boolean {
  let ignored = false;
  for (const raw of patterns) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const negate = line.startsWith("!");
    const pattern = (negate ? line.slice(1) : line).replace(/^\/+|\/+$/g, "");
    const re = new RegExp(
      "^" +
        pattern
          .split("/")
          .map((seg) => (seg === "**" ? ".*" : seg.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]")))
          .join("/") +
        "(/.*)?$",
    );
    if (re.test(path)) ignored = !negate;
  }
  return ignored;
}
