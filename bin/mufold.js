#!/usr/bin/env -S node --max-semi-space-size=32 --no-allocation-site-pretenuring
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (and by `npm pack`, the prepack script).
import module from "node:module";

// V8's compiled code of every module loaded after this, kept on disk (Node >= 22.8; NODE_COMPILE_CACHE names the
// directory, the OS's temporary one by default; NODE_DISABLE_COMPILE_CACHE=1 turns it off): each later start of a
// command, a spawned fold or replay worker among them, skips compiling its ~400 modules again. A directory that
// cannot be written only costs that saving.
module.enableCompileCache?.();
const { main } = await import("../dist/src/cli/main.js");

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // A client library may still hold a socket or a retry timer (a broker that never
    // answered): exit anyway, shortly, without keeping the process alive for it.
    setTimeout(() => process.exit(code), 1000).unref();
  },
  (err) => {
    process.stderr.write(`mufold: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
