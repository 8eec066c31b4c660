/**
 * Values by key, read by `load` on a miss and kept `ttlMs`, bounded: past `maxEntries` it starts
 * afresh (a burst of new keys costs reads, never memory). The settings caches of ingestion and
 * re-signing keep what they read here, so that a lost notification costs at most `ttlMs` of stale
 * settings.
 */
export class ReadThroughCache<K, V> {
  private readonly entries = new Map<K, { value: V; loadedAt: number }>();

  constructor(
    private readonly load: (key: K) => Promise<V>,
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
  ) {}

  /** The value read for `key` less than `ttlMs` before `now`; undefined when it must be read (`get`). */
  peek(key: K, now = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    return entry !== undefined && now - entry.loadedAt < this.ttlMs ? entry.value : undefined;
  }

  async get(key: K, now = Date.now()): Promise<V> {
    const cached = this.peek(key, now);
    if (cached !== undefined) return cached;
    const value = await this.load(key);
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { value, loadedAt: now });
    return value;
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
}
