/**
 * The simple commands of a documentation shell block, as words: enough shell
 * to read what a command line runs, not to run it. Handles quotes, `\` line
 * continuations, `#` comments, `$ ` prompts (in a ```console block only the
 * prompted lines and their continuations, after a `> ` prompt, are commands;
 * the rest is output), the operators `&&`, `||`, `;`, `|`, `&` between
 * commands, and leading `NAME=value` assignments. Anything it cannot read (an
 * unclosed quote) is an error.
 */
export interface ShellCommand {
  /** 0-based line of the block where the command starts. */
  line: number;
  /** The words, quotes removed, environment assignments dropped. */
  words: string[];
}

/** The commands of one shell block (`console`: only the prompted lines). */
export function shellCommands(body: string, lang: string): ShellCommand[] {
  const lines = body.split("\n");
  const script: { text: string; line: number }[] = [];
  lines.forEach((text, line) => {
    const prompted = /^\s*\$ (.*)$/.exec(text);
    if (prompted !== null) script.push({ text: prompted[1]!, line });
    else if (lang !== "console") script.push({ text, line });
    else if (script.at(-1)?.text.trimEnd().endsWith("\\") === true) script.push({ text: text.replace(/^\s*> /, ""), line }); // a continued command's "> " prompt
  });
  return splitCommands(script);
}

const OPERATORS = ["&&", "||", ";", "|", "&"];

function splitCommands(script: { text: string; line: number }[]): ShellCommand[] {
  const commands: ShellCommand[] = [];
  let words: string[] = [];
  let word: string | undefined;
  let start = -1;
  const endWord = () => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  const endCommand = () => {
    endWord();
    while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!)) words.shift();
    if (words.length > 0) commands.push({ line: start, words });
    words = [];
    start = -1;
  };
  for (const { text: raw, line } of script) {
    const continued = /\\\s*$/.test(raw); // the command goes on on the next line
    const text = continued ? raw.replace(/\\\s*$/, "") : raw;
    let i = 0;
    while (i < text.length) {
      const c = text[i]!;
      if (c === " " || c === "\t") {
        endWord();
        i++;
        continue;
      }
      if (c === "#" && word === undefined) break; // a comment to the end of the line
      const op = OPERATORS.find((o) => text.startsWith(o, i));
      const redirection = op === "&" && (text[i - 1] === ">" || text[i + 1] === ">"); // 2>&1, &>file
      if (op !== undefined && !redirection) {
        endCommand();
        i += op.length;
        continue;
      }
      if (start < 0) start = line;
      if (c === "'" || c === '"') {
        const close = text.indexOf(c, i + 1);
        if (close < 0) throw new Error(`line ${line + 1}: an unclosed ${c} quote`);
        word = (word ?? "") + text.slice(i + 1, close);
        i = close + 1;
        continue;
      }
      if (c === "\\") {
        word = (word ?? "") + (text[i + 1] ?? "");
        i += 2;
        continue;
      }
      word = (word ?? "") + c;
      i++;
    }
    endWord();
    if (!continued) endCommand();
  }
  endCommand();
  return commands;
}

/** The long flags (`--name`) of some words: `--name=value`, `[--name`, `(--name` count as `--name`. */
export function longFlags(words: readonly string[]): string[] {
  return words.flatMap((w) => {
    const m = /^[[(]*(--[A-Za-z0-9][A-Za-z0-9-]*)/.exec(w);
    return m === null ? [] : [m[1]!];
  });
}
