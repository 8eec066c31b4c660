/**
 * `--follow` for a log that lists newest first: each poll asks for the rows received since a little
 * before the newest one seen (rows are committed a moment after their `received_at`, so a short look
 * back catches late ones), and only rows not printed before come out, oldest first. Memory stays
 * small: only the ids inside the look-back window are remembered.
 */
export class LogFollower<Row> {
  private readonly seen = new Map<string, number>();
  private watermark: number | undefined;

  constructor(
    private readonly key: (row: Row) => string,
    private readonly time: (row: Row) => string,
    private readonly lookbackMs = 5_000,
  ) {}

  /** The rows of a poll not seen before, oldest first; remembers them. */
  accept(rows: readonly Row[]): Row[] {
    const fresh: { row: Row; at: number; key: string }[] = [];
    // The window this poll asked for: an older row was printed before the window moved past it.
    const before = this.threshold();
    for (const row of rows) {
      const key = this.key(row);
      if (this.seen.has(key)) continue;
      const at = Date.parse(this.time(row));
      if (before !== undefined && at < before) continue;
      this.seen.set(key, at);
      fresh.push({ row, at, key });
    }
    for (const entry of fresh) {
      if (this.watermark === undefined || entry.at > this.watermark) this.watermark = entry.at;
    }
    const threshold = this.threshold();
    if (threshold !== undefined) {
      for (const [key, at] of this.seen) if (at < threshold) this.seen.delete(key);
    }
    fresh.sort((a, b) => a.at - b.at || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return fresh.map((entry) => entry.row);
  }

  /**
   * Remembers rows without printing them: what the first page left out of the window (an older row
   * the page's limit cut off is not new, and must not come out at the first poll).
   */
  seed(rows: readonly Row[]): void {
    this.accept(rows);
  }

  private threshold(): number | undefined {
    return this.watermark === undefined ? undefined : this.watermark - this.lookbackMs;
  }

  /** `received_after` of the next poll: the start of the window (or `floor`, when later). */
  receivedAfter(floor?: string): string | undefined {
    const threshold = this.threshold();
    const floorMs = floor === undefined ? undefined : Date.parse(floor);
    if (threshold === undefined) return floor;
    if (floorMs !== undefined && floorMs > threshold) return floor;
    return new Date(threshold).toISOString();
  }

  /** How many ids are remembered (tests). */
  get remembered(): number {
    return this.seen.size;
  }
}
