/**
 * A read-only Map of what `pick` takes from each entry of a source map, read
 * through as the source is now: no second table for what the source already
 * holds. An identity's history parts are its accepted versions (identity-parts.ts):
 * a Map of them beside the map of versions cost a cached observation ~40 bytes.
 */
export class PickedMap<S, V> implements ReadonlyMap<string, V> {
  constructor(
    private readonly source: ReadonlyMap<string, S>,
    private readonly pick: (entry: S) => V | undefined,
    /** How many entries `pick` takes (the owner counts them; a view would walk the source). */
    private readonly count: () => number,
  ) {}

  get size(): number {
    return this.count();
  }

  get(key: string): V | undefined {
    const entry = this.source.get(key);
    return entry === undefined ? undefined : this.pick(entry);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  *entries(): MapIterator<[string, V]> {
    for (const [key, entry] of this.source) {
      const value = this.pick(entry);
      if (value !== undefined) yield [key, value];
    }
  }

  *keys(): MapIterator<string> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): MapIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }

  forEach(callback: (value: V, key: string, map: ReadonlyMap<string, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }
}
