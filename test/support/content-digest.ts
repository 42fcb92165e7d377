/**
 * The change feed's content digest (`dig`), written out from its documented
 * formula (docs/architecture.md, "Change feed") for tests to compare against:
 *
 *   rejected packet:  sha256("r\0" + rej)
 *   otherwise:        sha256("p\0" + skel + "\0" + hex(S)),  S = Σ sha256(e) mod 2^256 over
 *     every subject   fragment, or fragment "\0" proposal when it has one
 *     every history   fragment
 *     every conflict  fragment
 *
 * Independent of the fold's incremental bookkeeping: the elements come from a
 * PartsView built from scratch (computeParts) or from the keys in Redis.
 */
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import type { PartsView } from "../../src/core/packet-parts.js";
import { fragmentText } from "../../src/core/fragment.js";
import { identityKeys } from "../../src/adapters/redis/keys.js";

export interface DigestElements {
  rejected: string | null;
  skeleton: string;
  subjects: { fragment: string; proposal: string | null }[];
  history: { fragment: string }[];
  conflicts: { fragment: string }[];
}

const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** What a subject's element hash covers: its fragment, then NUL and its proposal when it has one. */
export const subjectElement = (fragment: string, proposal: string | null): string => (proposal === null ? fragment : `${fragment}\u0000${proposal}`);

export function contentDigest(e: DigestElements): string {
  if (e.rejected !== null) return sha("r\u0000" + e.rejected);
  let sum = 0n;
  const add = (element: string) => (sum += BigInt("0x" + sha(element)));
  for (const s of e.subjects) add(subjectElement(s.fragment, s.proposal));
  for (const h of e.history) add(h.fragment);
  for (const c of e.conflicts) add(c.fragment);
  sum %= 1n << 256n;
  return sha("p\u0000" + e.skeleton + "\u0000" + sum.toString(16));
}

export function elementsOfParts(parts: PartsView): DigestElements {
  return {
    rejected: parts.rejected,
    skeleton: parts.skeleton,
    subjects: [...parts.subjects.values()].map(({ fragment, proposal }) => ({ fragment: fragmentText(fragment), proposal })),
    history: [...parts.history.values()].map(({ fragment }) => ({ fragment: fragmentText(fragment) })),
    conflicts: [...parts.conflicts.values()].map((fragment) => ({ fragment })),
  };
}

/**
 * The elements as stored in Redis for one identity of one generation, found through the order sets: a member
 * without its fragment fails here instead of leaving the sum.
 */
export async function elementsInRedis(redis: Redis, prefix: string, generation: number, identity: string): Promise<DigestElements> {
  const [m, , s, si, h, hi, , c, , p] = identityKeys(prefix, generation, identity);
  const meta = await redis.hgetall(m!);
  const idOf = (member: string) => member.slice(member.lastIndexOf("\u0000") + 1);
  const [subjects, proposals, history, historyOrder, conflicts] = await Promise.all([
    redis.hgetall(s!), redis.hgetall(p!), redis.hgetall(h!), redis.zrange(hi!, 0, -1), redis.hgetall(c!),
  ]);
  const subjectMembers = await redis.zrange(si!, 0, -1);
  const fragmentOf = (fragments: Record<string, string>, member: string, kind: string): string => {
    const fragment = fragments[idOf(member)];
    if (fragment === undefined) throw new Error(`${identity}: ${kind} member ${JSON.stringify(member)} has no fragment`);
    return fragment;
  };
  return {
    rejected: meta.rej ?? null,
    skeleton: meta.skel ?? "",
    subjects: subjectMembers.map((member) => ({ fragment: fragmentOf(subjects, member, "subject"), proposal: proposals[idOf(member)] ?? null })),
    history: historyOrder.map((member) => ({ fragment: fragmentOf(history, member, "history") })),
    conflicts: Object.values(conflicts).map((fragment) => ({ fragment })),
  };
}
