/**
 * Insert into and remove from a kept list in place. `Array.prototype.splice`
 * returns a new array of what it removed, one per call even when it removes
 * nothing: a fold that keeps its lists sorted made one or more per delivery.
 */

/** `list.splice(at, 0, item)`, without the returned array. */
export function insertAt<T>(list: T[], at: number, item: T): void {
  list.push(item);
  for (let i = list.length - 1; i > at; i--) list[i] = list[i - 1]!;
  list[at] = item;
}

/** `list.splice(at, 1)`, without the returned array. */
export function removeAt<T>(list: T[], at: number): void {
  for (let i = at; i < list.length - 1; i++) list[i] = list[i + 1]!;
  list.length--;
}

/** Index of the first of the sorted `list` above `key` (numbers by value, strings by code unit, as `<=` compares them). */
export function firstAbove<T extends number | string>(list: readonly T[], key: T): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! <= key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
