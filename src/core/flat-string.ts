/**
 * Strings built by `+` are trees of concatenation nodes (V8 cons strings),
 * ~30 nodes for one stored fragment. A model keeps its fragments for as long
 * as it is cached, so each is flattened once when made: reading a character
 * makes V8 copy the tree into one sequential string in place, and the nodes
 * become garbage (measured: the cached model of a one-delivery identity went
 * from ~12.8 KB to about half; bench/pipeline.bench.ts, worker RSS).
 */
export function flat(s: string): string {
  s.charCodeAt(0);
  return s;
}
