/** The shared conformance cases, copied into the repository's fixtures. */
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";

export interface ConformanceCase {
  file: string;
  name: string;
  input: unknown;
  /** Canonical JSON the reference returned when the case was made. */
  expected: string;
}

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures");

export function conformanceCases(): ConformanceCase[] {
  const dir = join(fixtures, "conformance");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json.gz"))
    .sort()
    .map((file) => {
      const c = JSON.parse(gunzipSync(readFileSync(join(dir, file))).toString("utf8"));
      return { file, name: c.name, input: c.input, expected: c.expected };
    });
}

export interface Divergence {
  case_expected_reason_codes: string[];
  installed_reason_codes: string[];
}

/** Cases where the pinned reference itself differs from the stored expectation (docs/compatibility.md). */
export function conformanceDivergences(): Record<string, Divergence> {
  return JSON.parse(readFileSync(join(fixtures, "conformance-divergences.json"), "utf8")).divergences;
}
