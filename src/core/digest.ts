/** sha256 over UTF-8 text; hashing is computation, not IO, so the core may use node:crypto. */
import { createHash } from "node:crypto";
import { canonicalJson } from "./canonical-json.js";
import type { PyValue } from "./pyvalue.js";

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** `prefix + sha256(canonical_json(value))`, the shape of every id in the contract. */
export function canonicalDigest(value: PyValue, prefix: string): string {
  return prefix + sha256Hex(canonicalJson(value));
}
