#!/usr/bin/env -S node --max-semi-space-size=32 --no-allocation-site-pretenuring
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (and by `npm pack`, the prepack script).
import { main } from "../dist/src/cli/main.js";

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
