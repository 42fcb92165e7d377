/** The version in package.json, found through the package's own name: for `--version` and `mufold_build_info`. */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

export function packageVersion(): string {
  const path = createRequire(import.meta.url).resolve("mufold/package.json");
  const pkg = JSON.parse(readFileSync(path, "utf8")) as { version?: unknown };
  return typeof pkg.version === "string" ? pkg.version : "unknown";
}
