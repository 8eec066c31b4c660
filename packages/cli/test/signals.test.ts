import { describe, expect, it } from 'vitest';
import { sleepUnlessStopped, StopSignals } from '../src/signals.js';

describe('StopSignals', () => {
  it('stops cleanly on the first signal and quits with 130 on the second', () => {
    const exits: number[] = [];
    const calls: string[] = [];
    const stop = new StopSignals({ exit: (code) => exits.push(code) });
    stop.onStop(() => calls.push(`stop, aborted=${stop.signal.aborted}`));
    stop.onQuit(() => calls.push('quit'));
    expect(stop.stopping).toBe(false);
    stop.trigger();
    expect(stop.stopping).toBe(true);
    expect(stop.signal.aborted).toBe(true);
    expect(exits).toEqual([]);
    stop.trigger();
    expect(exits).toEqual([130]);
    // Stop hooks run before the signal aborts (a "stopping…" line comes before the listener's last words).
    expect(calls).toEqual(['stop, aborted=false', 'quit']);
  });

  it('runs a stop hook at once when the stop already came; unsubscribed hooks do not run', () => {
    const stop = new StopSignals({ exit: () => {} });
    const calls: string[] = [];
    const off = stop.onStop(() => calls.push('removed'));
    off();
    stop.trigger();
    stop.onStop(() => calls.push('late'));
    expect(calls).toEqual(['late']);
  });

  it('handles a real signal while installed, and leaves it alone after dispose', () => {
    const stop = new StopSignals({ signals: ['SIGUSR2'], exit: () => {} }).install();
    const before = process.listenerCount('SIGUSR2');
    process.emit('SIGUSR2', 'SIGUSR2');
    expect(stop.stopping).toBe(true);
    stop.dispose();
    expect(process.listenerCount('SIGUSR2')).toBe(before - 1);
  });
});

describe('sleepUnlessStopped', () => {
  it('ends early when stopped', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const sleeping = sleepUnlessStopped(10_000, controller.signal);
    controller.abort();
    await sleeping;
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
