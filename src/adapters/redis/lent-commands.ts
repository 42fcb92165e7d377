/**
 * The fold's apply commands, lent from reused slabs (byte-lender.ts). A lent
 * command is given back only once Redis has replied to it: it has read every
 * byte, and ioredis will not write it again (it resends after a reconnect only
 * commands without a reply). A command that fails or times out is never given
 * back, so its bytes stay as they are for as long as anything holds them.
 */
import { ByteLender } from "../../core/byte-lender.js";

/** A slab's size: a hundred applies of the bench's size (~8.5 KB each). */
export const COMMAND_SLAB_BYTES = 1 << 20;

const lender = new ByteLender(COMMAND_SLAB_BYTES);

/** A command's bytes, lent. */
export class LentBytes {
  private lent = true;
  constructor(readonly bytes: Buffer) {}

  /** Nobody reads the bytes any more: their room can be written again. A second call does nothing. */
  giveBack(): void {
    if (!this.lent) return;
    this.lent = false;
    lender.giveBack(this.bytes);
  }
}

/** Lent commands not given back (those of failed commands included). */
export function commandsOut(): number {
  return lender.out;
}

/** The first `length` bytes of `source`, lent; give them back once Redis replied. */
export function lend(source: Buffer, length: number): LentBytes {
  return new LentBytes(lender.lend(source, 0, length));
}
