/**
 * Strings built by `+` are trees of concatenation nodes (V8 cons strings),
 * ~30 nodes for one stored fragment, ~70 for a record's value. IdentityParts
 * flattens each fragment it keeps as soon as it is made, and the producer each
 * value: V8 copies the tree into one sequential string in place, and the nodes
 * die young instead of being copied by every scavenge until the string is
 * written out (which flattens it anyway, so the copy is made once either way).
 * The embedded reducer joins its fragments at once, so it does not flatten them
 * first. Returns `s`.
 *
 * A regexp runs on a flat string, so testing one flattens on every V8; reading
 * a character (`charCodeAt`) did on Node 20 but walks the tree on Node 22 and
 * 24. test/unit/flat-string.unit.spec.ts holds it on each pinned Node.
 */
const ANY = /^/;

export function flat(s: string): string {
  ANY.test(s);
  return s;
}

/**
 * A copy of `s` that does not keep alive the text it was cut from. In V8 a
 * substring of 13 or more characters is a view into its parent, so a kept id
 * would hold its whole ~1 KB record. Array.prototype.join writes its pieces
 * into one new sequential string. Measured on Node 20, 22 and 24 by
 * test/unit/observation-retention.unit.spec.ts (a concatenation read once, as
 * `flat` does, detached on Node 20 only; cutting a character off a
 * concatenation detaches too, but keeps a 32-byte view besides the copy).
 * Shorter substrings are copies already.
 */
export function detached(s: string): string {
  if (s.length < 13) return s;
  return [s.slice(0, 1), s.slice(1)].join("");
}
