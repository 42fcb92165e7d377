/**
 * A memo that cannot grow without bound: a Map emptied when it reaches its
 * limit. A value forgotten is computed again, never answered wrong, so the
 * memos of formatting and sharing (float reprs, pooled strings and lists)
 * bound their memory this way rather than tracking what was used last.
 */
export function remember<K, V>(memo: Map<K, V>, limit: number, key: K, value: V): V {
  if (memo.size >= limit) memo.clear();
  memo.set(key, value);
  return value;
}
