/** The writes that turn one stored PartsView into the next: only what changed. */
import type { IdentityPart } from "./keys.js";
import type { PartsView } from "../core/packet-parts.js";

export type OpCode = "HSET" | "HDEL" | "ZADD" | "ZREM" | "DEL";

export interface PartOp {
  op: OpCode;
  part: IdentityPart;
  field: string;
  value: string;
}

const hset = (part: IdentityPart, field: string, value: string): PartOp => ({ op: "HSET", part, field, value });
const hdel = (part: IdentityPart, field: string): PartOp => ({ op: "HDEL", part, field, value: "" });
const zadd = (part: IdentityPart, member: string): PartOp => ({ op: "ZADD", part, field: member, value: "" });
const zrem = (part: IdentityPart, member: string): PartOp => ({ op: "ZREM", part, field: member, value: "" });

/** Parts an identity drops entirely once it is past the delivery bound. */
const SEALED_PARTS: IdentityPart[] = ["d", "s", "si", "h", "hi", "hl", "c", "ci", "p"];

export function diffParts(prev: PartsView, next: PartsView, sealed: boolean): PartOp[] {
  const ops: PartOp[] = [];
  if (next.rejected !== prev.rejected) ops.push(next.rejected === null ? hdel("m", "rej") : hset("m", "rej", next.rejected));
  if (next.deliveries !== prev.deliveries) ops.push(hset("m", "n", String(next.deliveries)));
  if (sealed) {
    // Past 1024 deliveries the packet is a constant rejected packet: drop the rest.
    if (prev.skeleton !== "") ops.push(hdel("m", "skel"), hdel("m", "acc"));
    for (const part of SEALED_PARTS) ops.push({ op: "DEL", part, field: "", value: "" });
    return ops;
  }
  if (next.skeleton !== prev.skeleton) ops.push(hset("m", "skel", next.skeleton));
  if (next.accepted !== prev.accepted) ops.push(hset("m", "acc", String(next.accepted)));

  for (const [id, part] of prev.subjects) {
    if (next.subjects.has(id)) continue;
    ops.push(hdel("s", id), zrem("si", part.member), hdel("hl", id));
    if (part.proposal !== null) ops.push(hdel("p", id));
  }
  for (const [id, part] of next.subjects) {
    const old = prev.subjects.get(id);
    if (old === part) continue;
    if (old === undefined || old.member !== part.member) {
      if (old !== undefined) ops.push(zrem("si", old.member));
      ops.push(zadd("si", part.member));
    }
    if (old === undefined || old.fragment !== part.fragment) ops.push(hset("s", id, part.fragment));
    if (old === undefined || old.latest !== part.latest) ops.push(hset("hl", id, part.latest));
    if ((old?.proposal ?? null) !== part.proposal) ops.push(part.proposal === null ? hdel("p", id) : hset("p", id, part.proposal));
  }

  for (const [id, part] of prev.history) {
    if (!next.history.has(id)) ops.push(hdel("h", id), zrem("hi", part.member));
  }
  for (const [id, part] of next.history) {
    const old = prev.history.get(id);
    if (old === part) continue;
    if (old === undefined || old.member !== part.member) {
      if (old !== undefined) ops.push(zrem("hi", old.member));
      ops.push(zadd("hi", part.member));
    }
    if (old === undefined || old.fragment !== part.fragment) ops.push(hset("h", id, part.fragment));
  }

  for (const id of prev.conflicts.keys()) {
    if (!next.conflicts.has(id)) ops.push(hdel("c", id), zrem("ci", id));
  }
  for (const [id, fragment] of next.conflicts) {
    const old = prev.conflicts.get(id);
    if (old === fragment) continue;
    if (old === undefined) ops.push(zadd("ci", id));
    ops.push(hset("c", id, fragment));
  }
  return ops;
}
