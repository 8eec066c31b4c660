import type { GapReport } from '../format/listen.js';

export type { GapReport };

/**
 * The gap a lost connection leaves, for the one line that sums it up once the listener is back
 * ("reconnected after 1m32s; 41 webhooks arrived meanwhile"). An outage starts when a connection
 * that worked is lost: at the last moment the server was heard from, with the last message then
 * received. It ends at the next connection, when the endpoint's newest message (read just before
 * connecting) says how far its catch-up goes; the report comes once the listener has forwarded up
 * to there, counting the messages it forwarded above the outage's start: those that arrived while
 * it was away, and had not been forwarded. An outage during a catch-up extends it.
 */
export class ConnectionGap {
  private outage: { since: number; from: string } | null = null;
  private catchUp: { from: string; to: string; count: number; downMs: number } | null = null;

  /** Whether a connection was lost and none has been made since. */
  get open(): boolean {
    return this.outage !== null;
  }

  /**
   * The connection was lost. `heardAt`: when the server was last heard from; `cursor`: the last
   * message received by then (null before the first connection, which is no outage). Only the
   * first loss of an outage counts: the attempts after it fail within the same gap.
   */
  lost(heardAt: number, cursor: string | null): void {
    if (this.outage !== null || cursor === null) return;
    this.outage = { since: heardAt, from: cursor };
  }

  /**
   * Connected again at `now`. `newest`: the endpoint's newest message just before connecting (null:
   * it has none; undefined: it could not be read, and the report says no count). The report at once
   * when nothing above the outage's start is to be forwarded, else null (it comes from
   * `forwarding`, `forwarded` or `passed`).
   */
  reconnected(now: number, newest: string | null | undefined): GapReport | null {
    const outage = this.outage;
    if (outage === null) return null;
    this.outage = null;
    const earlier = this.catchUp;
    this.catchUp = null;
    const downMs = Math.max(0, now - outage.since) + (earlier?.downMs ?? 0);
    const from = earlier?.from ?? outage.from;
    const count = earlier?.count ?? 0;
    if (newest === undefined) return { downMs, arrived: null };
    // The catch-up goes to the later of the two ends (a loss during a catch-up keeps its end).
    const to = earlier !== null && (newest === null || earlier.to > newest) ? earlier.to : newest;
    if (to === null || to <= from) return { downMs, arrived: count };
    this.catchUp = { from, to, count, downMs };
    return null;
  }

  /** Before a message of the stream is forwarded: past the catch-up's end, the report comes first. */
  forwarding(id: string): GapReport | null {
    return this.catchUp !== null && id > this.catchUp.to ? this.finish() : null;
  }

  /** A message of the stream was forwarded (or handed to no route): counted, and the report at the catch-up's end. */
  forwarded(id: string): GapReport | null {
    const catchUp = this.catchUp;
    if (catchUp === null) return null;
    if (id > catchUp.from && id <= catchUp.to) catchUp.count += 1;
    return id >= catchUp.to ? this.finish() : null;
  }

  /** The cursor moved to `id` past messages a filter skipped. */
  passed(id: string): GapReport | null {
    return this.catchUp !== null && id >= this.catchUp.to ? this.finish() : null;
  }

  private finish(): GapReport | null {
    const catchUp = this.catchUp;
    this.catchUp = null;
    return catchUp === null ? null : { downMs: catchUp.downMs, arrived: catchUp.count };
  }
}
