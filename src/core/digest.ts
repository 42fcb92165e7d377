/** sha256 over UTF-8 text; hashing is computation, not IO, so the core may use node:crypto. */
import * as crypto from "node:crypto";
import { canonicalJson } from "./canonical-json.js";
import type { PyValue } from "./pyvalue.js";

// crypto.hash (Node >= 20.12) skips the Hash object per call: the reducer hashes twice per delivery.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: "hex") => string }).hash;

export const sha256Hex: (text: string) => string = oneShot
  ? (text) => oneShot("sha256", text, "hex")
  : (text) => crypto.createHash("sha256").update(text, "utf8").digest("hex");

/** `prefix + sha256(canonical_json(value))`, the shape of every id in the contract. */
export function canonicalDigest(value: PyValue, prefix: string): string {
  return prefix + sha256Hex(canonicalJson(value));
}
