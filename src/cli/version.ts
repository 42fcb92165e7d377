/** The version in package.json (found from src/cli or dist/src/cli): for `--version` and `mufold_build_info`. */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function packageVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)), i = 0; i < 5; dir = dirname(dir), i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "mufold" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // not here: go up
    }
  }
  return "unknown";
}
