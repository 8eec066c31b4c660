/**
 * Per-endpoint token bucket (docs/api.md, How a delivery is sent) as GCRA: one timestamp per
 * endpoint, the theoretical arrival time (TAT) of the next request, stored in the endpoint's row
 * and advanced under its row lock by whichever worker claims deliveries for it, so the limit holds
 * across every worker process.
 *
 * With rate r tokens/s and capacity C (`burst`, or r when burst is 0), each request costs T = 1/r s
 * and may run at `max(TAT, now) - (C - 1)·T` at the earliest: C requests pass at once from an idle
 * bucket, then one every T.
 */

export interface RateLimitState {
  rps: number;
  burst: number;
  /** The stored TAT in ms since the epoch, or null for an endpoint that never sent. */
  tatMs: number | null;
  /** The database's now, in ms: every worker measures against the same clock. */
  nowMs: number;
}

export interface SlotReservation {
  /** Start offsets (ms from `nowMs`, 0 = at once) of the first `offsets.length` requests. */
  offsets: number[];
  /** The TAT to store after reserving those slots. */
  tatMs: number;
  /** For the requests that got no slot: offsets at which slots would come free, in order. */
  laterOffsets: number[];
}

export function capacityOf(rps: number, burst: number): number {
  return burst > 0 ? burst : rps;
}

/**
 * Reserves slots for `count` requests, taking those that start within `horizonMs` (the worker waits
 * for them in process); the others are given the times their slots would come, to be retried then
 * without spending an attempt.
 */
export function reserveSlots(state: RateLimitState, count: number, horizonMs: number): SlotReservation {
  const interval = 1000 / state.rps;
  const tolerance = (capacityOf(state.rps, state.burst) - 1) * interval;
  let tat = Math.max(state.tatMs ?? state.nowMs, state.nowMs);
  const offsets: number[] = [];
  const laterOffsets: number[] = [];
  for (let i = 0; i < count; i++) {
    const earliest = Math.max(0, tat - tolerance - state.nowMs);
    if (laterOffsets.length === 0 && earliest <= horizonMs) {
      offsets.push(Math.ceil(earliest));
      tat += interval;
    } else {
      // Not reserved: the next worker to claim it competes for the bucket again.
      laterOffsets.push(Math.ceil(Math.max(0, tat + (laterOffsets.length) * interval - tolerance - state.nowMs)));
    }
  }
  return { offsets, tatMs: tat, laterOffsets };
}
