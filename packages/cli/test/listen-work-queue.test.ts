import type { CliMessageOut } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { bodyBytes, WorkQueue, type WorkItem } from '../src/listen/work-queue.js';

/** The queue between the listener's connection side and its processing side. */

function message(id: string, size: number, byReference = false): CliMessageOut {
  return {
    message_id: id,
    content_type: 'application/json',
    headers: {},
    raw_headers: [],
    size_bytes: size,
    payload_sha256: '',
    received_at: new Date(0).toISOString(),
    method: 'POST',
    path: '/',
    query: '',
    event_type: null,
    ...(byReference ? { body_url: `/v1/inbound-messages/${id}/body` } : { body: Buffer.alloc(size).toString('base64'), body_encoding: 'base64' as const }),
  };
}

const item = (id: string, size = 10): WorkItem => ({ kind: 'sequence', id, message: message(id, size) });
const ids = (queue: WorkQueue): string[] => {
  const out: string[] = [];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) out.push(next.id);
  return out;
};

describe('WorkQueue', () => {
  it('hands items out in the order they came; pushFront puts one before every waiting one', () => {
    const queue = new WorkQueue(new AbortController().signal);
    queue.push(item('a'));
    queue.push(item('b'));
    queue.pushFront({ kind: 'replay', id: 'r', message: message('r', 1) });
    queue.push({ kind: 'cursor', id: 'c' });
    expect(queue.length).toBe(4);
    expect(ids(queue)).toEqual(['r', 'a', 'b', 'c']);
    expect(queue.length).toBe(0);
  });

  it('pushFront after items were taken keeps the order of the rest', () => {
    const queue = new WorkQueue(new AbortController().signal);
    for (const id of ['a', 'b', 'c']) queue.push(item(id));
    expect(queue.shift()?.id).toBe('a');
    queue.pushFront(item('a'));
    expect(ids(queue)).toEqual(['a', 'b', 'c']);
  });

  it('keeps its order across many items (the storage behind it is compacted as it goes)', () => {
    const queue = new WorkQueue(new AbortController().signal);
    const all = Array.from({ length: 5000 }, (_, i) => `m${String(i).padStart(5, '0')}`);
    const taken: string[] = [];
    for (const [i, id] of all.entries()) {
      queue.push(item(id, 1));
      if (i % 3 === 0) taken.push(queue.shift()!.id);
    }
    taken.push(...ids(queue));
    expect(taken).toEqual(all);
    expect(queue.bytes).toBe(0);
  });

  it('counts the body bytes of what waits: a body sent by reference and a cursor move hold none', () => {
    expect(bodyBytes(message('a', 300))).toBe(300);
    expect(bodyBytes(message('b', 300, true))).toBe(0);
    const queue = new WorkQueue(new AbortController().signal);
    queue.push(item('a', 300));
    queue.push({ kind: 'sequence', id: 'b', message: message('b', 5000, true) });
    queue.push({ kind: 'cursor', id: 'c' });
    queue.pushFront(item('r', 7));
    expect(queue.bytes).toBe(307);
    queue.shift();
    expect(queue.bytes).toBe(300);
    queue.shift();
    expect(queue.bytes).toBe(0);
  });

  it('whenReady calls back at once when an item waits, else synchronously inside the next push, once', () => {
    const queue = new WorkQueue(new AbortController().signal);
    const calls: string[] = [];
    queue.whenReady(() => calls.push(`ready with ${queue.length}`));
    expect(calls).toEqual([]);
    queue.push(item('a'));
    expect(calls).toEqual(['ready with 1']);
    queue.push(item('b'));
    expect(calls).toEqual(['ready with 1']);
    queue.whenReady(() => calls.push('at once'));
    expect(calls).toEqual(['ready with 1', 'at once']);
  });

  it('drainTo resolves once at most that many items and bytes wait', async () => {
    const queue = new WorkQueue(new AbortController().signal);
    for (const id of ['a', 'b', 'c']) queue.push(item(id, 100));
    let drained = false;
    const draining = queue.drainTo(1, 1000).then(() => (drained = true));
    queue.shift();
    await Promise.resolve();
    expect(drained).toBe(false);
    queue.shift();
    await draining;
    expect(queue.length).toBe(1);

    const byBytes = queue.drainTo(10, 50).then(() => (drained = false));
    await Promise.resolve();
    expect(drained).toBe(true);
    queue.shift();
    await byBytes;
    expect(queue.bytes).toBe(0);
  });

  it('its halt ends the waits and calls the idle processing side back', async () => {
    const halt = new AbortController();
    const queue = new WorkQueue(halt.signal);
    queue.push(item('a'));
    queue.push(item('b'));
    const draining = queue.drainTo(0, 0);
    const ready: string[] = [];
    const idle = new WorkQueue(halt.signal);
    idle.whenReady(() => ready.push('resumed'));
    halt.abort();
    await draining;
    expect(ready).toEqual(['resumed']);
    expect(queue.length).toBe(2);
    idle.whenReady(() => ready.push('at once, halted'));
    expect(ready).toEqual(['resumed', 'at once, halted']);
    await queue.drainTo(0, 0);
  });
});
