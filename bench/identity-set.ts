/**
 * A set of reducer identities as one digest (sha256 of the sorted identities, a line each): what the pipeline bench's
 * decide-only reader (raw-kafkajs.ts --decide) made and what the fold indexed are compared by it.
 */
import { createHash } from "node:crypto";

export function identitySetDigest(identities: Iterable<string>): string {
  const h = createHash("sha256");
  for (const identity of [...identities].sort()) h.update(identity).update("\n");
  return h.digest("hex");
}
