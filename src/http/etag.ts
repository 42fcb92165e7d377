/** RFC 9110 If-None-Match matching against the strong tags of src/core/digest.ts. */

/**
 * Whether an If-None-Match header matches `etag` (so the answer is 304): `*`
 * matches any current representation; otherwise a comma-separated list of
 * entity tags, compared weakly (a `W/` prefix on either side is ignored).
 * Repeated headers arrive joined with ", " (Node) or as an array.
 */
export function ifNoneMatchHits(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const value = Array.isArray(header) ? header.join(",") : header;
  const opaque = stripWeak(etag);
  for (const raw of splitTags(value)) {
    if (raw === "*") return true;
    if (stripWeak(raw) === opaque) return true;
  }
  return false;
}

function stripWeak(tag: string): string {
  return tag.startsWith("W/") ? tag.slice(2) : tag;
}

/** Split a list of entity tags on commas outside quotes (an opaque tag may contain a comma). */
function splitTags(value: string): string[] {
  const out: string[] = [];
  let current = "";
  let quoted = false;
  for (const ch of value) {
    if (ch === '"') quoted = !quoted;
    if (ch === "," && !quoted) {
      out.push(current.trim());
      current = "";
    } else {
      current += ch;
    }
  }
  out.push(current.trim());
  return out.filter((t) => t.length > 0);
}
