/**
 * Strings built by `+` are trees of concatenation nodes (V8 cons strings),
 * ~30 nodes for one stored fragment. IdentityParts flattens each fragment it
 * keeps as soon as it is made: reading a character makes V8 copy the tree into
 * one sequential string in place, and the nodes die young instead of being
 * copied by every scavenge until the store writes the string (ioredis
 * flattens what it writes, so the copy is made once either way). Measured side
 * by side on the fold, two runs each: 92 and 87 µs of CPU per record without
 * it, 73 and 83 with it (docs/benchmarks.md). The embedded reducer joins its
 * fragments at once, so it does not flatten them first. Returns `s`.
 */
export function flat(s: string): string {
  s.charCodeAt(0);
  return s;
}

/** Flatten each string in place (nulls skipped). */
export function flatAll(...strings: (string | null)[]): void {
  for (const s of strings) if (s !== null) flat(s);
}

/**
 * A copy of `s` that does not keep alive the text it was cut from. In V8 a
 * substring of 13 or more characters is a view into its parent, so a kept id
 * would hold its whole ~1 KB record. A substring of a concatenation is made
 * after V8 copies the concatenation into one new string, so cutting the
 * appended character off again gives a view into that copy only (measured on
 * Node 20, 22 and 24 by test/unit/observation-retention.unit.spec.ts; joining
 * and then reading a character, as `flat` does, detached on Node 20 only).
 * Shorter substrings are copies already.
 */
export function detached(s: string): string {
  if (s.length < 13) return s;
  return (s + "\u0000").slice(0, -1);
}
