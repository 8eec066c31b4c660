import type { BudgetRefusal } from '../errors.js';
import { parseAddress } from '../security/cidr.js';

/**
 * Ingest body bytes in flight in one process (docs/operating.md, Body limits and memory): what a
 * request declares (Content-Length) is reserved before any of its body is read, a chunked body's
 * bytes as they arrive; a reservation lasts until its answer is sent or its connection closes.
 * Without it, any holder of an ingest URL could open connections that each declare 25 MiB, send all
 * but the last byte and wait, until the process runs out of memory.
 *
 * - `maxBytes` bounds the whole process.
 * - `perSourceBytes` bounds one source address (an IPv6 address by its /64, which one host
 *   usually holds whole), so one sender cannot take the whole budget from the others.
 * - `smallReserveBytes`: the last part of the budget is kept for small bodies (at most
 *   `smallBodyBytes`), so that large uploads held by slow senders never refuse an ordinary webhook.
 */
export interface BodyBudgetOptions {
  maxBytes: number;
  perSourceBytes: number;
  smallBodyBytes: number;
  smallReserveBytes: number;
}

export interface BodyReservation {
  /** Adds `bytes` to the reservation (a chunked body growing); the refusal when the budget is spent. */
  grow(bytes: number): BudgetRefusal | null;
  /** Returns the bytes to the budget; further calls do nothing. */
  release(): void;
}

export class BodyBudget {
  private inFlight = 0;
  private readonly bySource = new Map<string, number>();

  constructor(private readonly options: BodyBudgetOptions) {}

  /** Bytes reserved now, in all and by one source address. */
  get bytesInFlight(): number {
    return this.inFlight;
  }

  sourceBytesInFlight(address: string): number {
    return this.bySource.get(sourceKey(address)) ?? 0;
  }

  /** Reserves `bytes` for a body from `address`, or says which bound it would pass. */
  reserve(address: string, bytes: number): BodyReservation | BudgetRefusal {
    const source = sourceKey(address);
    const refusal = this.refusal(source, 0, bytes);
    if (refusal !== null) return refusal;
    let held = 0;
    let released = false;
    const add = (n: number): void => {
      held += n;
      this.inFlight += n;
      this.bySource.set(source, (this.bySource.get(source) ?? 0) + n);
    };
    add(bytes);
    return {
      grow: (n) => {
        if (released) return null;
        const why = this.refusal(source, held, n);
        if (why === null) add(n);
        return why;
      },
      release: () => {
        if (released) return;
        released = true;
        this.inFlight -= held;
        const left = (this.bySource.get(source) ?? 0) - held;
        if (left <= 0) this.bySource.delete(source);
        else this.bySource.set(source, left);
      },
    };
  }

  private refusal(source: string, held: number, more: number): BudgetRefusal | null {
    const { maxBytes, perSourceBytes, smallBodyBytes, smallReserveBytes } = this.options;
    const total = held + more;
    const ceiling = total <= smallBodyBytes ? maxBytes : maxBytes - smallReserveBytes;
    if (this.inFlight + more > ceiling) return 'process';
    if ((this.bySource.get(source) ?? 0) + more > perSourceBytes) return 'source';
    return null;
  }
}

/** One budget share per IPv4 address, per IPv6 /64; what does not parse shares one key per text. */
export function sourceKey(address: string): string {
  const parsed = parseAddress(address);
  if (parsed === undefined) return address;
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = parsed.toNormalizedString().split(':');
  return `${parts.slice(0, 4).join(':')}::/64`;
}
