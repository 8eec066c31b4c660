import { afterEach, describe, expect, it, vi } from 'vitest';
import { SubscriberRegistry, type Subscriber } from '../../src/stream/subscribers.js';

/** A subscriber that keeps what the registry did to it. */
function fake(endpointId: string): Subscriber & { wakes: number; sent: string[]; closed: boolean } {
  return {
    endpointId,
    wakes: 0,
    sent: [],
    closed: false,
    wake() {
      this.wakes++;
    },
    sendRaw(text: string) {
      this.sent.push(text);
    },
    close() {
      this.closed = true;
    },
  };
}

type Fake = ReturnType<typeof fake>;

describe('SubscriberRegistry', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('holds subscribers by endpoint and counts them all', () => {
    const registry = new SubscriberRegistry<Fake>(1000);
    const a1 = registry.add(fake('a'));
    const a2 = registry.add(fake('a'));
    const b = registry.add(fake('b'));
    expect(registry.count).toBe(3);
    expect(registry.has('a')).toBe(true);
    expect(registry.has('c')).toBe(false);
    expect([...registry.of('a')!]).toEqual([a1, a2]);
    expect([...registry.of('b')!]).toEqual([b]);
    expect(registry.of('c')).toBeUndefined();
  });

  it('closes a removed subscriber, and forgets an endpoint once nobody follows it', () => {
    const registry = new SubscriberRegistry<Fake>(1000);
    const a1 = registry.add(fake('a'));
    const a2 = registry.add(fake('a'));
    registry.remove(a1);
    expect(a1.closed).toBe(true);
    expect(a2.closed).toBe(false);
    expect([...registry.of('a')!]).toEqual([a2]);
    registry.remove(a2);
    expect(registry.has('a')).toBe(false);
    expect(registry.of('a')).toBeUndefined();
    expect(registry.count).toBe(0);
    // A second remove changes nothing.
    registry.remove(a2);
    expect(registry.count).toBe(0);
  });

  it('sends a frame to the subscribers of its endpoint only, rendered once, and not at all without one', () => {
    const registry = new SubscriberRegistry<Fake>(1000);
    const a1 = registry.add(fake('a'));
    const a2 = registry.add(fake('a'));
    const b = registry.add(fake('b'));
    const render = vi.fn(() => 'frame');
    registry.sendRaw('a', render);
    expect(render).toHaveBeenCalledTimes(1);
    expect(a1.sent).toEqual(['frame']);
    expect(a2.sent).toEqual(['frame']);
    expect(b.sent).toEqual([]);
    registry.sendRaw('nobody', render);
    expect(render).toHaveBeenCalledTimes(1);
  });

  it('wakes every subscriber at once, and on its timer from start to stop', () => {
    vi.useFakeTimers();
    const registry = new SubscriberRegistry<Fake>(1000);
    const a = registry.add(fake('a'));
    const b = registry.add(fake('b'));
    registry.wakeAll();
    expect([a.wakes, b.wakes]).toEqual([1, 1]);
    vi.advanceTimersByTime(5000);
    expect([a.wakes, b.wakes]).toEqual([1, 1]);
    registry.start();
    vi.advanceTimersByTime(999);
    expect([a.wakes, b.wakes]).toEqual([1, 1]);
    vi.advanceTimersByTime(1);
    expect([a.wakes, b.wakes]).toEqual([2, 2]);
    vi.advanceTimersByTime(2000);
    expect([a.wakes, b.wakes]).toEqual([4, 4]);
    registry.stop();
    vi.advanceTimersByTime(5000);
    expect([a.wakes, b.wakes]).toEqual([4, 4]);
  });

  it('closes and forgets every subscriber when it stops', () => {
    const registry = new SubscriberRegistry<Fake>(1000);
    const a = registry.add(fake('a'));
    const b = registry.add(fake('b'));
    registry.start();
    registry.stop();
    expect([a.closed, b.closed]).toEqual([true, true]);
    expect(registry.count).toBe(0);
    expect(registry.has('a')).toBe(false);
  });
});
