/**
 * A bounded map that forgets the least recently used entry first: caches keyed by what a caller chooses (a capability
 * set, a wallet) must not grow with the number of distinct keys callers send.
 */
export interface Lru<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): void;
  delete(key: K): void;
  clear(): void;
  readonly size: number;
}

export function createLru<K, V>(maxEntries: number): Lru<K, V> {
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) throw new RangeError("an LRU holds at least one entry");
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  const entries = new Map<K, V>();
  return {
    get(key) {
      if (!entries.has(key)) return undefined;
      const value = entries.get(key) as V;
      entries.delete(key);
      entries.set(key, value);
      return value;
    },
    set(key, value) {
      entries.delete(key);
      entries.set(key, value);
      while (entries.size > maxEntries) entries.delete(entries.keys().next().value as K);
    },
    delete(key) {
      entries.delete(key);
    },
    clear() {
      entries.clear();
    },
    get size() {
      return entries.size;
    },
  };
}
