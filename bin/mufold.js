#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm ci` (the prepare script).
import { main } from "../dist/src/cli/main.js";

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`mufold: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
