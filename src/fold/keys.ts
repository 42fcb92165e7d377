/**
 * Redis key layout. Every key of one identity shares the hash tag `{mur_…}`,
 * so one script call can touch them all, on a single node or a cluster.
 *
 *   <prefix>:control                  hash: generation, paused, epoch
 *   <prefix>:g<N>:index               set of reducer identities in generation N
 *   <prefix>:g<N>:changes             change feed stream of generation N (capped)
 *   <prefix>:g<N>:{mur_…}:<part>      the identity's parts (see IDENTITY_PARTS)
 */
export const IDENTITY_PARTS = ["m", "d", "s", "si", "h", "hi", "hl", "c", "ci", "p"] as const;
export type IdentityPart = (typeof IDENTITY_PARTS)[number];

/** What each part holds (also documented in docs/architecture.md). */
export const PART_MEANING: Record<IdentityPart, string> = {
  m: "meta hash: v (version), w:<topic>:<partition> watermarks, n deliveries, acc accepted, skel packet skeleton, rej rejected packet, ctx context, dig packet digest, chg last change note",
  d: "delivery records: observation_id -> [[fingerprint, count, observation], ...]",
  s: "subject fragments: subject_id -> canonical subject JSON",
  si: "subject order: sorted set of subject members (score 0)",
  h: "history fragments: observation_id -> canonical history entry JSON",
  hi: "history order: sorted set of history members (score 0)",
  hl: "latest history member of each subject: subject_id -> member",
  c: "conflict fragments: observation_id -> canonical rejection JSON",
  ci: "conflict order: sorted set of observation ids (score 0)",
  p: "review proposal fragments: subject_id -> canonical proposal JSON",
};

export function generationPrefix(prefix: string, generation: number): string {
  return `${prefix}:g${generation}`;
}

export function identityKeys(prefix: string, generation: number, identity: string): string[] {
  const base = `${generationPrefix(prefix, generation)}:{${identity}}`;
  return IDENTITY_PARTS.map((part) => `${base}:${part}`);
}

export function partIndex(part: IdentityPart): number {
  return IDENTITY_PARTS.indexOf(part);
}

export function controlKey(prefix: string): string {
  return `${prefix}:control`;
}

export function indexKey(prefix: string, generation: number): string {
  return `${generationPrefix(prefix, generation)}:index`;
}

export function watermarkField(topic: string, partition: number): string {
  return `w:${topic}:${partition}`;
}
