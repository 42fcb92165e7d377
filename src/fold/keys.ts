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
