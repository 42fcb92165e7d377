/**
 * A stored part's fragment (a subject's or a history entry's): its text, or,
 * when it is ASCII, its bytes. A fold writes each fragment into a writer's
 * buffer (ascii-text.ts) and copies those bytes out: as a string, a fragment
 * (~400 bytes) was young garbage on the V8 heap from the moment it was made
 * until its apply landed; as bytes it is a view (~100 bytes) into Node's
 * buffer pool, outside the heap. The model lets go of it once the store holds
 * it (IdentityParts.release), so no view keeps a pool slab alive for long.
 * A fragment of bytes is only ever ASCII, so its latin1 text, its UTF-8 text
 * and its bytes are one.
 */
export type Fragment = string | Buffer;

/** The fragment as text. */
export function fragmentText(f: Fragment): string {
  return typeof f === "string" ? f : f.toString("latin1");
}
