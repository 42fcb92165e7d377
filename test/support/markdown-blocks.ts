/**
 * The fenced code blocks of the documentation (README.md and docs/*.md), with
 * where each starts, for the tests that check them against the package, the
 * CLI and package.json. An unclosed fence is an error, not a block that ends
 * the file.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface FencedBlock {
  /** The Markdown file, relative to the repository root (`README.md`, `docs/operations.md`). */
  file: string;
  /** 1-based line of the block's first body line in that file. */
  line: number;
  /** The first word of the info string, lowercased; "" for a fence without one. */
  lang: string;
  /** The block's text, the fence's indentation removed, without the fence lines. */
  body: string;
}

export const TS_LANGS: ReadonlySet<string> = new Set(["ts", "typescript"]);
export const SHELL_LANGS: ReadonlySet<string> = new Set(["sh", "bash", "shell", "console"]);

/** The Markdown files whose code blocks are checked: README.md, then docs/*.md. */
export function docFiles(root: string): string[] {
  const docs = readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  return ["README.md", ...docs];
}

/** Every fenced block (``` or ~~~, CommonMark rules for opening and closing) of one Markdown text. */
export function fencedBlocks(markdown: string, file: string): FencedBlock[] {
  const lines = markdown.split("\n");
  const blocks: FencedBlock[] = [];
  let open: { indent: number; char: string; length: number; lang: string; start: number } | undefined;
  let body: string[] = [];
  lines.forEach((raw, i) => {
    const text = raw.replace(/\r$/, "");
    if (open === undefined) {
      const m = /^( *)(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/.exec(text);
      if (m === null) return;
      open = { indent: m[1]!.length, char: m[2]![0]!, length: m[2]!.length, lang: m[3]!.toLowerCase(), start: i + 2 };
      body = [];
      return;
    }
    const close = /^ *(`{3,}|~{3,})\s*$/.exec(text);
    if (close !== null && close[1]![0] === open.char && close[1]!.length >= open.length) {
      blocks.push({ file, line: open.start, lang: open.lang, body: body.join("\n") });
      open = undefined;
      return;
    }
    const indent = open.indent;
    body.push(text.replace(new RegExp(`^ {0,${indent}}`), ""));
  });
  if (open !== undefined) throw new Error(`${file}:${open.start - 1}: a code fence that is never closed`);
  return blocks;
}

/** The fenced blocks of every documentation file under `root`. */
export function docBlocks(root: string): FencedBlock[] {
  return docFiles(root).flatMap((file) => fencedBlocks(readFileSync(join(root, file), "utf8"), file));
}

/** `README.md:344`: where a block (and a line inside it, 0-based) is. */
export function where(block: FencedBlock, lineInBlock = 0): string {
  return `${block.file}:${block.line + lineInBlock}`;
}

/** True when a TypeScript block imports the package by name (`"mufold"`, not only `"mufold/core"`). */
export function importsPackage(block: FencedBlock): boolean {
  return TS_LANGS.has(block.lang) && /\bfrom\s+["']mufold["']/.test(block.body);
}

/** The README's worked example (convention: the first ```ts block of README.md that imports "mufold"). */
export function workedExample(readme: string): FencedBlock {
  const example = fencedBlocks(readme, "README.md").find(importsPackage);
  if (example === undefined) throw new Error('README.md has no ```ts block that imports "mufold" (the worked example)');
  return example;
}

/** The example of a README section: the first ```ts block importing "mufold" under the `## heading`, before the next `## `. */
export function sectionExample(readme: string, heading: string): FencedBlock {
  const lines = readme.split("\n");
  const start = lines.indexOf(`## ${heading}`) + 1;
  const next = lines.findIndex((l, i) => i >= start && l.startsWith("## "));
  const block = fencedBlocks(readme, "README.md").find((b) => b.line > start && (next < 0 || b.line <= next) && importsPackage(b));
  if (start === 0 || block === undefined) throw new Error(`README.md has no \`\`\`ts block that imports "mufold" under "## ${heading}"`);
  return block;
}

/** What the README says its worked example prints: the next fenced block, a ```text block before the next heading. */
export function documentedOutput(readme: string, example: FencedBlock): FencedBlock {
  const blocks = fencedBlocks(readme, "README.md");
  const prints = blocks[blocks.findIndex((b) => b.line === example.line) + 1];
  const between = prints === undefined ? "" : readme.split("\n").slice(example.line - 1, prints.line - 1).join("\n");
  if (prints === undefined || prints.lang !== "text" || /^#{1,6}\s/m.test(between)) {
    throw new Error(`${where(example)}: the worked example must be followed, before the next heading, by a \`\`\`text block of what it prints`);
  }
  return prints;
}

/**
 * Does `actual` (a program's output) match `claimed` (a documented output)?
 * Line by line, trailing whitespace ignored; "…" in a claimed line stands for
 * any text on that line. Returns the first difference, or undefined.
 */
export function outputDifference(claimed: string, actual: string): string | undefined {
  const split = (s: string) => s.replace(/\s+$/, "").split("\n").map((l) => l.replace(/\s+$/, ""));
  const want = split(claimed);
  const got = split(actual);
  for (let i = 0; i < Math.max(want.length, got.length); i++) {
    const w = want[i];
    const g = got[i];
    if (w === undefined) return `line ${i + 1}: printed ${JSON.stringify(g)}, which the documented output does not have`;
    if (g === undefined) return `line ${i + 1}: documented ${JSON.stringify(w)}, not printed`;
    const pattern = new RegExp(`^${w.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`);
    if (!pattern.test(g)) return `line ${i + 1}: documented ${JSON.stringify(w)}, printed ${JSON.stringify(g)}`;
  }
  return undefined;
}
