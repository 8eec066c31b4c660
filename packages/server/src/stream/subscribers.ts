/** What the registry needs of a socket that follows one endpoint. */
export interface Subscriber {
  readonly endpointId: string;
  /** New messages may exist: read after the socket's cursor. */
  wake(): void;
  /** A frame outside the message sequence (a refused request). */
  sendRaw(text: string): void;
  /** The socket is gone or the process stops: send nothing more. */
  close(): void;
}

/**
 * The sockets of one kind (CLI streams, watching pages) by endpoint, as a hub holds them: who follows
 * an endpoint, a wake-up for all of them on a timer (a NOTIFY may be lost) or at once (the listening
 * connection was re-established), and a frame sent to every socket of an endpoint.
 */
export class SubscriberRegistry<S extends Subscriber> {
  private readonly byEndpoint = new Map<string, Set<S>>();
  private recheckTimer: NodeJS.Timeout | undefined;

  /** `recheckMs`: how often every subscriber is woken without a NOTIFY. */
  constructor(private readonly recheckMs: number) {}

  start(): void {
    this.recheckTimer = setInterval(() => this.wakeAll(), this.recheckMs);
    this.recheckTimer.unref();
  }

  /** Ends the timer and closes every subscriber. */
  stop(): void {
    clearInterval(this.recheckTimer);
    this.recheckTimer = undefined;
    this.byEndpoint.forEach((set) => set.forEach((s) => s.close()));
    this.byEndpoint.clear();
  }

  add(subscriber: S): S {
    const set = this.byEndpoint.get(subscriber.endpointId) ?? new Set();
    set.add(subscriber);
    this.byEndpoint.set(subscriber.endpointId, set);
    return subscriber;
  }

  /** Closes the subscriber and forgets it; an endpoint nobody follows any more is dropped. */
  remove(subscriber: S): void {
    subscriber.close();
    const set = this.byEndpoint.get(subscriber.endpointId);
    set?.delete(subscriber);
    if (set?.size === 0) this.byEndpoint.delete(subscriber.endpointId);
  }

  /** The subscribers of an endpoint; undefined when it has none. */
  of(endpointId: string): ReadonlySet<S> | undefined {
    return this.byEndpoint.get(endpointId);
  }

  has(endpointId: string): boolean {
    return this.byEndpoint.has(endpointId);
  }

  get count(): number {
    let n = 0;
    this.byEndpoint.forEach((set) => (n += set.size));
    return n;
  }

  wakeAll(): void {
    this.byEndpoint.forEach((set) => set.forEach((s) => s.wake()));
  }

  /** Sends a frame to every subscriber of the endpoint, rendered once and only when there is one. */
  sendRaw(endpointId: string, render: () => string): void {
    const targets = this.byEndpoint.get(endpointId);
    if (targets === undefined) return;
    const text = render();
    targets.forEach((s) => s.sendRaw(text));
  }
}
