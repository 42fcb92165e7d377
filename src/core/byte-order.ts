/**
 * String comparison in UTF-8 byte order (memcmp of the encodings), which for
 * well-formed strings is code-point order: what Python's str comparison and
 * Redis's ZRANGE over equal scores give. JavaScript's `<` compares UTF-16
 * units, which puts U+10000 and above (surrogate pairs) before U+E000..U+FFFF.
 */

/** A UTF-16 unit's rank in byte order: surrogates (astral code points) after U+E000..U+FFFF. */
const byteRank = (unit: number): number => (unit >= 0xd800 && unit <= 0xdfff ? unit + 0x2000 : unit >= 0xe000 ? unit - 0x800 : unit);

export function compareBytes(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return byteRank(x) - byteRank(y);
  }
  return a.length - b.length;
}

/** A unit at or above U+D800: only there do UTF-16 order and byte order part. */
const HIGH_UNIT = /[\ud800-\uffff]/;

/**
 * `items` sorted by `key` in byte order. When no key holds a unit at or above
 * U+D800 (the usual case: ASCII members), UTF-16 order is byte order and the
 * engine's native string comparison sorts them; otherwise compareBytes does.
 */
export function sortedByBytes<T>(items: T[], key: (item: T) => string): T[] {
  if (items.some((item) => HIGH_UNIT.test(key(item)))) return items.sort((x, y) => compareBytes(key(x), key(y)));
  return items.sort((x, y) => {
    const a = key(x);
    const b = key(y);
    return a < b ? -1 : a > b ? 1 : 0;
  });
}
