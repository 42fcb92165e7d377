import { ByteLender } from "./byte-lender.js";

/**
 * A stored part's fragment (a subject's or a history entry's): its text, or,
 * when it is ASCII, its bytes. A fold writes each fragment into a writer's
 * buffer (ascii-text.ts) and copies those bytes out: as a string, a fragment
 * (~400 bytes) was young garbage on the V8 heap from the moment it was made
 * until its apply landed; as bytes it is a view (~100 bytes) lent from
 * FRAGMENTS, outside the heap. The model gives it back once the store holds it
 * (IdentityParts.release), and its room is written again.
 * A fragment of bytes is only ever ASCII, so its latin1 text, its UTF-8 text
 * and its bytes are one.
 */
export type Fragment = string | Buffer;

/** Where fragments of bytes are lent from: 1 MiB slabs, ~600 of the pipeline bench's fragments each. */
export const FRAGMENTS = new ByteLender(1 << 20);

/** `f` is read by nobody any more (the store holds it, or it was made only to be hashed): its room can be written again. */
export function giveBackFragment(f: Fragment): void {
  if (typeof f !== "string") FRAGMENTS.giveBack(f);
}

/** The fragment as text. */
export function fragmentText(f: Fragment): string {
  return typeof f === "string" ? f : f.toString("latin1");
}
