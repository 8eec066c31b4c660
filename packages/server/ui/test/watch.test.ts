import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KEY_REVOKED_CLOSE } from '@hookrelay/shared/sockets';
import { PORTAL_WATCH, WATCH_COALESCE_MS, WATCH_RETRY_MAX_MS, WATCH_RETRY_MS, WatchConnection, type WatchSocketEvents, type WatchState, type WatchUpdate } from '../src/watch.js';

/**
 * The watch socket's connection on its own, on fake timers: sockets are stand-ins that the test
 * opens, feeds frames and closes.
 */

interface FakeSocket {
  on: WatchSocketEvents;
  closed: boolean;
}

function harness(options: { failOpens?: number } = {}) {
  const sockets: FakeSocket[] = [];
  const states: WatchState[] = [];
  const batches: WatchUpdate[][] = [];
  let opens = 0;
  let failures = options.failOpens ?? 0;
  let revoked = 0;
  const connection = new WatchConnection({
    open: async (on) => {
      opens++;
      if (failures > 0) {
        failures--;
        throw new Error('no ticket');
      }
      const socket: FakeSocket = { on, closed: false };
      sockets.push(socket);
      return { close: () => void (socket.closed = true) };
    },
    onFrames: (frames) => batches.push(frames),
    onState: (state) => states.push(state),
    onRevoked: () => revoked++,
  });
  return {
    connection,
    sockets,
    states,
    batches,
    opens: () => opens,
    revoked: () => revoked,
    last: () => sockets[sockets.length - 1]!,
  };
}

/** A connection started, its first open settled. */
async function started(options: { failOpens?: number } = {}) {
  const h = harness(options);
  h.connection.start();
  await vi.advanceTimersByTimeAsync(0);
  return h;
}

const message = (id: string) => ({ type: 'message', message: { id } }) as unknown as WatchUpdate;
const rejection = (id: string) => ({ type: 'rejection', rejection: { id } }) as unknown as WatchUpdate;
const send = (socket: FakeSocket, frame: unknown) => socket.on.message(JSON.stringify(frame));

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('WatchConnection', () => {
  it('is connecting until the ready frame, then live', async () => {
    const h = await started();
    expect(h.states).toEqual(['connecting']);
    send(h.last(), { type: 'ready', cursor: null });
    expect(h.states).toEqual(['connecting', 'live']);
    expect(h.batches).toEqual([]);
    h.connection.stop();
  });

  it('hands the frames that arrive within the coalescing window over together, in order, and later ones in the next batch', async () => {
    const h = await started();
    const socket = h.last();
    send(socket, { type: 'ready', cursor: null });
    send(socket, message('m1'));
    await vi.advanceTimersByTimeAsync(WATCH_COALESCE_MS - 1);
    send(socket, rejection('r1'));
    send(socket, message('m2'));
    expect(h.batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.batches).toEqual([[message('m1'), rejection('r1'), message('m2')]]);
    send(socket, message('m3'));
    await vi.advanceTimersByTimeAsync(WATCH_COALESCE_MS);
    expect(h.batches).toEqual([[message('m1'), rejection('r1'), message('m2')], [message('m3')]]);
    h.connection.stop();
  });

  it('passes over frames that are not JSON or of a type it does not know', async () => {
    const h = await started();
    const socket = h.last();
    socket.on.message('not json');
    send(socket, { type: 'something_new' });
    await vi.advanceTimersByTimeAsync(WATCH_COALESCE_MS * 2);
    expect(h.batches).toEqual([]);
    send(socket, message('m1'));
    await vi.advanceTimersByTimeAsync(WATCH_COALESCE_MS);
    expect(h.batches).toEqual([[message('m1')]]);
    h.connection.stop();
  });

  it('opens again after a failed open with a delay doubling up to the longest', async () => {
    const h = await started({ failOpens: 7 });
    expect(h.opens()).toBe(1);
    expect(h.states).toEqual(['connecting', 'offline']);
    const delays = [WATCH_RETRY_MS, 4000, 8000, 16_000, WATCH_RETRY_MAX_MS, WATCH_RETRY_MAX_MS];
    for (const [i, delay] of delays.entries()) {
      await vi.advanceTimersByTimeAsync(delay - 1);
      expect(h.opens(), `before retry ${i + 1}`).toBe(i + 1);
      await vi.advanceTimersByTimeAsync(1);
      expect(h.opens(), `at retry ${i + 1}`).toBe(i + 2);
    }
    // The 7th open fails too; the 8th, another 30 s later, comes up.
    await vi.advanceTimersByTimeAsync(WATCH_RETRY_MAX_MS);
    expect(h.opens()).toBe(8);
    expect(h.sockets).toHaveLength(1);
    h.connection.stop();
  });

  it('starts the delay over once a socket is live, and opens again after a close', async () => {
    const h = await started({ failOpens: 2 });
    await vi.advanceTimersByTimeAsync(WATCH_RETRY_MS + 4000);
    expect(h.opens()).toBe(3);
    send(h.last(), { type: 'ready', cursor: null });
    h.last().on.close(1006);
    expect(h.states.at(-1)).toBe('offline');
    await vi.advanceTimersByTimeAsync(WATCH_RETRY_MS - 1);
    expect(h.opens()).toBe(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.opens()).toBe(4);
    expect(h.sockets).toHaveLength(2);
    h.connection.stop();
  });

  it('a socket closed without ever being ready keeps doubling the delay', async () => {
    const h = await started();
    h.last().on.close(1006);
    await vi.advanceTimersByTimeAsync(WATCH_RETRY_MS);
    expect(h.opens()).toBe(2);
    h.last().on.close(1006);
    await vi.advanceTimersByTimeAsync(WATCH_RETRY_MS);
    expect(h.opens()).toBe(2);
    await vi.advanceTimersByTimeAsync(WATCH_RETRY_MS);
    expect(h.opens()).toBe(3);
    h.connection.stop();
  });

  it('stops for good on the key-revoked close', async () => {
    const h = await started();
    send(h.last(), { type: 'ready', cursor: null });
    h.last().on.close(KEY_REVOKED_CLOSE.code);
    expect(h.revoked()).toBe(1);
    expect(h.states).toEqual(['connecting', 'live', 'offline']);
    await vi.advanceTimersByTimeAsync(10 * WATCH_RETRY_MAX_MS);
    expect(h.opens()).toBe(1);
  });

  it('stop closes the socket, drops the frames not handed over yet and opens nothing more', async () => {
    const h = await started();
    const socket = h.last();
    send(socket, message('m1'));
    h.connection.stop();
    expect(socket.closed).toBe(true);
    socket.on.close(1000);
    send(socket, message('m2'));
    await vi.advanceTimersByTimeAsync(10 * WATCH_RETRY_MAX_MS);
    expect(h.batches).toEqual([]);
    expect(h.states).toEqual(['connecting']);
    expect(h.opens()).toBe(1);
  });

  it('stop during an open closes the socket it brings, and during a retry delay cancels the retry', async () => {
    const opening = harness();
    opening.connection.start();
    opening.connection.stop();
    await vi.advanceTimersByTimeAsync(0);
    expect(opening.last().closed).toBe(true);

    const waiting = await started({ failOpens: 1 });
    waiting.connection.stop();
    await vi.advanceTimersByTimeAsync(10 * WATCH_RETRY_MAX_MS);
    expect(waiting.opens()).toBe(1);
    expect(waiting.states).toEqual(['connecting', 'offline']);
  });

  it("hands over the frame types it was given (the portal's) and no others", async () => {
    const batches: unknown[][] = [];
    const sockets: WatchSocketEvents[] = [];
    const connection = new WatchConnection<{ type: string }>({
      open: async (on) => {
        sockets.push(on);
        return { close: () => undefined };
      },
      onFrames: (frames) => batches.push(frames),
      types: PORTAL_WATCH.types,
      onState: () => undefined,
      onRevoked: () => undefined,
    });
    connection.start();
    await vi.advanceTimersByTimeAsync(0);
    const on = sockets[0]!;
    for (const frame of [{ type: 'ready' }, { type: 'endpoint', endpoint: { id: 'ep' } }, { type: 'rejection' }, { type: 'attempt', attempt: { id: 'a' } }, null, { type: 'message', message: { message_id: 'm' } }]) {
      on.message(JSON.stringify(frame));
    }
    await vi.advanceTimersByTimeAsync(WATCH_COALESCE_MS);
    expect(batches).toEqual([[{ type: 'endpoint', endpoint: { id: 'ep' } }, { type: 'attempt', attempt: { id: 'a' } }, { type: 'message', message: { message_id: 'm' } }]]);
    connection.stop();
  });
});
