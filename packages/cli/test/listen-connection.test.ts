import { HookrelayApiError, HookrelayNetworkError, uuidv7AtTime, type CliMessageOut, type RejectionOut, type StreamResultFrame } from '@hookrelay/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { CliFailure } from '../src/errors.js';
import { ConnectionSupervisor, type ConnectionSupervisorOptions } from '../src/listen/connection.js';
import { ConnectionGap } from '../src/listen/gap.js';
import { DEFAULT_TIMING, ZERO_CURSOR, type GapReport, type ListenApi, type ListenerEvents, type ListenerTiming, type StreamConnection, type StreamEnd, type StreamHandlers } from '../src/listen/ports.js';
import { WorkQueue, type WorkItem } from '../src/listen/work-queue.js';

/**
 * The connection supervisor on its own, on a virtual clock: which transport it uses and when, what
 * it queues, where each connection starts, the backoff, flap detection, --exit-on-disconnect, what
 * the result ledger is handed, and the stop.
 */

const BASE_TIME = 1_780_000_000_000;
const id = (n: number): string => uuidv7AtTime(BASE_TIME + n);

function message(messageId: string): CliMessageOut {
  return {
    message_id: messageId,
    content_type: 'application/json',
    headers: {},
    raw_headers: [],
    size_bytes: 2,
    payload_sha256: '',
    received_at: new Date(0).toISOString(),
    method: 'POST',
    path: '/',
    query: '',
    event_type: null,
    body: Buffer.from('{}').toString('base64'),
    body_encoding: 'base64',
  };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function until(predicate: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await turn();
  }
}

class ScriptedStream implements StreamConnection {
  readonly ended: Promise<StreamEnd>;
  closed = false;
  private resolve!: (end: StreamEnd) => void;
  constructor(readonly handlers: StreamHandlers) {
    this.ended = new Promise((resolve) => (this.resolve = resolve));
  }
  end(end: StreamEnd): void {
    this.resolve(end);
  }
  drop(openMs = 10): void {
    this.end({ kind: 'closed', code: 1006, reason: '', openMs, cause: 'server' });
  }
  sendResult(_frame: StreamResultFrame): boolean {
    return !this.closed;
  }
  close(): void {
    this.closed = true;
    this.end({ kind: 'closed', code: 1000, reason: '', openMs: 10, cause: 'client' });
  }
}

type Page = { messages: CliMessageOut[]; cursor: string | null; more?: boolean };

class FakeApi implements ListenApi {
  latest: string | null = null;
  httpUp = true;
  /** What each new stream does, a turn after it was opened; the last one repeats. */
  onOpen: ((stream: ScriptedStream, n: number) => void)[] = [(s) => s.end({ kind: 'refused', status: 502, message: 'HTTP 502' })];
  opens: (string | null)[] = [];
  streams: ScriptedStream[] = [];
  pages: Page[] = [];
  listenCalls: (string | null)[] = [];
  rejections: RejectionOut[] = [];
  rejectionReads = 0;

  private up(): void {
    if (!this.httpUp) throw new HookrelayNetworkError('could not reach http://fake: connect ECONNREFUSED', 'http://fake');
  }
  async latestMessageId(): Promise<string | null> {
    this.up();
    return this.latest;
  }
  async listen(after: string | null): Promise<Page> {
    this.up();
    this.listenCalls.push(after);
    return this.pages.shift() ?? { messages: [], cursor: null };
  }
  async postResult(): Promise<void> {}
  openStream(after: string | null, handlers: StreamHandlers): StreamConnection {
    const n = this.opens.push(after) - 1;
    const stream = new ScriptedStream(handlers);
    this.streams.push(stream);
    const step = this.onOpen[Math.min(n, this.onOpen.length - 1)]!;
    setImmediate(() => step(stream, n));
    return stream;
  }
  async recentRejections(): Promise<RejectionOut[]> {
    this.rejectionReads += 1;
    return this.rejections;
  }
}

class Events implements ListenerEvents {
  log: string[] = [];
  delays: number[] = [];
  rejectedIds: string[] = [];
  connecting(info: { transport: string; after: string | null }): void {
    this.log.push(`connecting ${info.transport}`);
  }
  connected(info: { transport: string; reconnect?: boolean }): void {
    this.log.push(`connected ${info.transport}${info.reconnect === true ? ' (reconnect)' : ''}`);
  }
  reconnected = (report: GapReport): number => this.log.push(`reconnected after ${report.downMs}ms: ${report.arrived}`);
  disconnected(info: { transport: string; reason: string }): void {
    this.log.push(`disconnected ${info.transport}: ${info.reason}`);
  }
  reconnecting(info: { delayMs: number }): void {
    this.delays.push(info.delayMs);
  }
  fallback(info: { reason: string; retryWebSocketMs: number }): void {
    this.log.push(`fallback (${info.retryWebSocketMs}ms): ${info.reason}`);
  }
  heartbeatMissing(info: { silentMs: number }): void {
    this.log.push(`silent ${info.silentMs}`);
  }
  delivery(): void {}
  caughtUp(): void {}
  warning(text: string): void {
    this.log.push(`warning: ${text}`);
  }
  rejected(rejection: RejectionOut): void {
    this.rejectedIds.push(rejection.id);
  }
}

const TIMING: ListenerTiming = {
  ...DEFAULT_TIMING,
  reconnectInitialMs: 10,
  reconnectMaxMs: 40,
  pollIntervalMs: 10,
  wsRetryInitialMs: 100,
  wsRetryMaxMs: 400,
  flapLifetimeMs: 1000,
  flapWindowMs: 5000,
  flapLimit: 3,
};

const running: { halt: AbortController; done: Promise<unknown> }[] = [];
afterEach(async () => {
  for (const run of running.splice(0)) {
    run.halt.abort();
    await run.done;
  }
});

function setup(overrides: Partial<ConnectionSupervisorOptions> = {}) {
  const api = new FakeApi();
  const events = new Events();
  const halt = new AbortController();
  const queue = new WorkQueue(halt.signal);
  let clock = 0;
  const saved: string[] = [];
  const backlog: string[] = [];
  /** What the result ledger was handed, in order. */
  const results: string[] = [];
  let acknowledged: Promise<void> = Promise.resolve();
  const gap = new ConnectionGap();
  const supervisor = (options: Partial<ConnectionSupervisorOptions> = {}) =>
    new ConnectionSupervisor({
      mode: 'auto',
      startCursor: null,
      timing: TIMING,
      api,
      events,
      queue,
      halt: halt.signal,
      results: {
        attach: (connection, { acks }) => results.push(`attach stream ${api.streams.indexOf(connection as ScriptedStream)}${acks ? ' (acks)' : ''}`),
        detach: () => results.push('detach'),
        setPolling: (polling) => results.push(`polling ${polling}`),
        acknowledge: (resultId, outcome) => results.push(`ack ${resultId} ${outcome}`),
        acknowledged: () => acknowledged,
      },
      saveStart: async (cursor) => {
        saved.push(cursor);
      },
      backlogEndsAt: (at) => backlog.push(at),
      gap,
      // Virtual time: a wait moves the clock on at once (and gives the other side a turn).
      sleep: async (ms, signal) => {
        const aborted = (): boolean => signal?.aborted === true;
        if (aborted()) return false;
        clock += ms;
        await turn();
        return !aborted();
      },
      now: () => clock,
      ...overrides,
      ...options,
    });
  const start = (options: Partial<ConnectionSupervisorOptions> = {}, processing: Promise<void> = Promise.resolve()) => {
    const done = supervisor(options).run(processing);
    running.push({ halt, done: done.catch(() => {}) });
    return done;
  };
  const queued = (): string[] => {
    const out: string[] = [];
    for (let item: WorkItem | undefined = queue.shift(); item !== undefined; item = queue.shift()) out.push(`${item.kind} ${item.id}`);
    return out;
  };
  return {
    api,
    events,
    gap,
    halt,
    queue,
    saved,
    backlog,
    results,
    start,
    queued,
    clock: () => clock,
    setAcknowledged: (p: Promise<void>) => (acknowledged = p),
  };
}

describe('ConnectionSupervisor: the stream', () => {
  it("a first run starts where the stream's ready says and saves that; messages are queued in order, skipped runs as cursor moves, older ids as replays", async () => {
    const { api, events, saved, results, start, queued, halt } = setup({ mode: 'ws' });
    api.onOpen = [
      (s) => {
        s.handlers.ready(id(0), true);
        s.handlers.message(message(id(1)), false);
        s.handlers.message(message(id(2).toUpperCase()), false);
        s.handlers.cursor?.(id(5));
        s.handlers.cursor?.(id(4));
        s.handlers.message(message(id(1)), false);
        s.handlers.message(message(id(9)), true);
        s.handlers.resultAck?.('r1', 'recorded', undefined);
        s.handlers.silent(30_000);
      },
    ];
    const done = start();
    await until(() => saved.length === 1 && results.includes('ack r1 recorded'), 'the stream');
    expect(saved).toEqual([id(0)]);
    expect(api.opens).toEqual([null]);
    expect(queued()).toEqual([`sequence ${id(1)}`, `sequence ${id(2)}`, `cursor ${id(5)}`, `replay ${id(1)}`, `replay ${id(9)}`]);
    expect(results).toEqual(['polling false', 'attach stream 0 (acks)', 'ack r1 recorded']);
    // Once for the first read of the endpoint, once for the WebSocket.
    expect(events.log).toEqual(['connecting websocket', 'connecting websocket', 'connected websocket', 'silent 30000']);
    halt.abort();
    await done;
    expect(api.streams[0]!.closed).toBe(true);
    expect(results.at(-1)).toBe('detach');
  });

  it('a full queue closes the stream; once it has drained, the next one starts after the last message queued', async () => {
    const { api, queue, start, queued } = setup({ mode: 'ws', timing: { ...TIMING, queueHigh: 2, queueLow: 0 } });
    api.onOpen = [
      (s) => {
        s.handlers.ready(id(0), true);
        for (const n of [1, 2, 3, 4]) s.handlers.message(message(id(n)), false);
      },
      (s) => s.handlers.ready(id(2), true),
    ];
    void start({ startCursor: id(0) });
    await until(() => api.streams[0]?.closed === true, 'the overflow');
    expect(queue.length).toBe(2);
    await turn();
    expect(api.opens).toEqual([id(0)]);
    expect(queued()).toEqual([`sequence ${id(1)}`, `sequence ${id(2)}`]);
    await until(() => api.opens.length === 2, 'the next stream');
    expect(api.opens).toEqual([id(0), id(2)]);
  });

  it('ws: a refused upgrade is retried on the WebSocket with a doubling delay up to reconnectMaxMs; never polls', async () => {
    const { api, events, start } = setup({ mode: 'ws' });
    void start({ startCursor: id(0) });
    await until(() => api.opens.length >= 6, 'six attempts');
    expect(events.delays.slice(0, 5)).toEqual([10, 20, 40, 40, 40]);
    expect(api.listenCalls).toEqual([]);
    expect(events.log.some((line) => line.startsWith('fallback'))).toBe(false);
  });

  it('auto: flapLimit connections shorter than flapLifetimeMs mean polling; one that lived longer does not count', async () => {
    const { api, events, start } = setup();
    api.onOpen = [(s) => (s.handlers.ready(id(0), true), s.drop(5_000)), (s) => (s.handlers.ready(id(0), true), s.drop(5))];
    void start({ startCursor: id(0) });
    await until(() => api.listenCalls.length > 0, 'polling');
    // Each ready starts the delay over; the long one and two short ones are retried, the third short one is the fallback.
    expect(events.delays).toEqual([10, 10, 10]);
    expect(events.log.filter((line) => line.startsWith('fallback'))).toEqual(['fallback (100ms): the WebSocket dropped 3 times in 5s']);
    expect(api.opens).toHaveLength(4);
  });

  it('a stream refused over the socket limits is warned about once and retried on the WebSocket, no sooner than Retry-After', async () => {
    const { api, events, start } = setup();
    const limited = new HookrelayApiError('RATE_LIMITED', 'too many open WebSockets', 429, 'r1', undefined, undefined, 3);
    api.onOpen = [(s) => s.end({ kind: 'limited', error: limited })];
    void start({ startCursor: id(0) });
    await until(() => api.opens.length >= 3, 'three attempts');
    expect(events.delays.slice(0, 2)).toEqual([3000, 3000]);
    expect(events.log.filter((line) => line.startsWith('warning'))).toEqual(['warning: the server refused the stream: too many open WebSockets']);
    expect(api.listenCalls).toEqual([]);
  });

  it('a revoked key ends the run with UNAUTHORIZED at once', async () => {
    const { api, start } = setup();
    api.onOpen = [(s) => (s.handlers.ready(id(0), true), s.end({ kind: 'revoked', code: 4401, reason: 'api key revoked' }))];
    const error = await start({ startCursor: id(0) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HookrelayApiError);
    expect((error as HookrelayApiError).status).toBe(401);
    expect((error as Error).message).toBe('the API key was revoked while listening: the server closed the stream (4401 api key revoked)');
    expect(api.opens).toHaveLength(1);
  });

  it('a fatal upgrade answer ends the run with it', async () => {
    const { api, start } = setup();
    const notFound = new HookrelayApiError('ENDPOINT_NOT_FOUND', 'no such endpoint', 404, 'r1');
    api.onOpen = [(s) => s.end({ kind: 'fatal', error: notFound })];
    await expect(start()).rejects.toBe(notFound);
  });

  it('at the halt an open stream stays open until processing has settled and its results are acknowledged', async () => {
    const { api, halt, start, setAcknowledged } = setup({ mode: 'ws' });
    api.onOpen = [(s) => s.handlers.ready(id(0), true)];
    let settle!: () => void;
    const processing = new Promise<void>((resolve) => (settle = resolve));
    let acknowledge!: () => void;
    setAcknowledged(new Promise<void>((resolve) => (acknowledge = resolve)));
    const done = start({ startCursor: id(0) }, processing);
    await until(() => api.streams.length === 1, 'the stream');
    await turn();
    halt.abort();
    await turn();
    expect(api.streams[0]!.closed).toBe(false);
    settle();
    await turn();
    expect(api.streams[0]!.closed).toBe(false);
    acknowledge();
    await done;
    expect(api.streams[0]!.closed).toBe(true);
  });
});

describe('ConnectionSupervisor: the gap of a lost connection', () => {
  it('a stream that stalled, then closed, was lost when the stall began, with what it had queued then; the catch-up ends at the newest message the ready frame names', async () => {
    const { api, events, gap, queue, start, queued } = setup({ mode: 'ws' });
    api.onOpen = [
      (s) => {
        s.handlers.ready(id(0), true);
        s.handlers.message(message(id(1)), false);
        // A stopped process reads what was buffered, the first frame after 20 s of silence...
        s.handlers.stalled?.(20_000);
        s.handlers.message(message(id(2)), false);
        // ... then the server's close.
        s.drop(30_000);
      },
      // The server says where the endpoint stands as the stream starts.
      (s) => (s.handlers.ready(null, true, id(3)), s.handlers.message(message(id(3)), false)),
    ];
    void start({ startCursor: id(0) });
    await until(() => queue.length === 3, "the second stream's message");
    expect(queued()).toEqual([`sequence ${id(1)}`, `sequence ${id(2)}`, `sequence ${id(3)}`]);
    // The first connection is said; the second, ending the outage, leaves it to the gap's line.
    expect(events.log.filter((line) => line.startsWith('connected'))).toEqual(['connected websocket', 'connected websocket (reconnect)']);
    expect(api.opens).toEqual([id(0), id(2)]);
    // Lost 20 s before the stall was seen (clock 0), back after the 10 ms backoff; id(1) was queued before.
    expect(gap.forwarded(id(1))).toBeNull();
    expect(gap.forwarded(id(2))).toBeNull();
    expect(gap.forwarded(id(3))).toEqual({ downMs: 20_010, arrived: 2 });
  });

  it('a heartbeat drop is lost when the server was last heard; nothing new meanwhile is reported at the reconnection', async () => {
    const { api, events, start } = setup({ mode: 'ws' });
    api.onOpen = [
      (s) => {
        s.handlers.ready(id(0), true);
        s.handlers.message(message(id(1)), false);
        s.end({ kind: 'closed', code: 1006, reason: '', openMs: 30_000, cause: 'heartbeat', heardAt: -45_000 });
      },
      (s) => (s.handlers.ready(null, true, id(1)), s.drop(5_000)),
      // A server that does not name its newest message: the gap has no count.
      (s) => s.handlers.ready(null, true),
    ];
    void start({ startCursor: id(0) });
    await until(() => events.log.filter((line) => line.startsWith('reconnected')).length === 2, 'two gap lines');
    expect(events.log.filter((line) => line.startsWith('reconnected'))).toEqual(['reconnected after 45010ms: 0', expect.stringMatching(/^reconnected after \d+ms: null$/u)]);
  });
});

describe('ConnectionSupervisor: polling', () => {
  it('auto: a refused upgrade means polling; pages are queued; the WebSocket is tried again after wsRetryInitialMs, doubling', async () => {
    const { api, events, results, start, queued, clock } = setup();
    api.pages = [
      { messages: [message(id(1)), message(id(2))], cursor: id(2) },
      { messages: [message(id(2)), message(id(3))], cursor: id(6) },
    ];
    void start({ startCursor: id(0) });
    await until(() => api.opens.length >= 3, 'three WebSocket attempts');
    expect(events.log.filter((line) => line.startsWith('fallback'))).toEqual([
      'fallback (100ms): the WebSocket upgrade was refused (HTTP 502)',
      'fallback (200ms): the WebSocket upgrade was refused (HTTP 502)',
    ]);
    expect(api.listenCalls.slice(0, 3)).toEqual([id(0), id(2), id(6)]);
    expect(queued()).toEqual([`sequence ${id(1)}`, `sequence ${id(2)}`, `sequence ${id(3)}`, `cursor ${id(6)}`]);
    expect(api.opens.slice(0, 3)).toEqual([id(0), id(6), id(6)]);
    expect(results.slice(0, 3)).toEqual(['detach', 'polling true', 'detach']);
    expect(clock()).toBeGreaterThanOrEqual(300);
    expect(events.log).toContain('connected polling');
  });

  it("poll: a first run starts from the endpoint's newest message as it was at the start, and saves it", async () => {
    const { api, saved, start, backlog } = setup({ mode: 'poll' });
    api.latest = id(7);
    void start();
    await until(() => api.listenCalls.length > 0, 'a page');
    expect(saved).toEqual([id(7)]);
    expect(api.listenCalls[0]).toBe(id(7));
    expect(api.opens).toEqual([]);
    expect(backlog).toEqual([]);
  });

  it('the backlog ends at the newest message when listening began, when that is past the start', async () => {
    const { api, backlog, start } = setup({ mode: 'poll' });
    api.latest = id(9);
    void start({ startCursor: id(3) });
    await until(() => api.listenCalls.length > 0, 'a page');
    expect(backlog).toEqual([id(9)]);
  });

  it('a page that failed is a disconnection: the ledger is told polling stopped, and polling goes on after the backoff', async () => {
    const { api, events, results, start } = setup({ mode: 'poll' });
    void start({ startCursor: id(0) });
    await until(() => api.listenCalls.length >= 2, 'two pages');
    api.httpUp = false;
    await until(() => events.log.some((line) => line.startsWith('disconnected')), 'the disconnection');
    api.httpUp = true;
    await until(() => events.log.filter((line) => line.startsWith('connected polling')).length === 2, 'polling again');
    expect(results).toEqual(['polling true', 'polling false', 'polling true']);
    // Back: the gap's line, and nothing had arrived.
    expect(events.log.filter((line) => line.startsWith('connected') || line.startsWith('reconnected'))).toEqual([
      'connected polling',
      'connected polling (reconnect)',
      expect.stringMatching(/^reconnected after \d+ms: 0$/u),
    ]);
    expect(events.log).toContain('disconnected polling: could not reach http://fake: connect ECONNREFUSED');
  });

  it('shows the refused requests since listening began, each once, oldest first, at most once a poll interval', async () => {
    const { api, events, start } = setup({ mode: 'poll' });
    const rejection = (n: number): RejectionOut => ({ id: id(n) }) as RejectionOut;
    api.rejections = [rejection(2), rejection(1)];
    api.pages = Array.from({ length: 5 }, () => ({ messages: [], cursor: null, more: true }));
    void start({ startCursor: id(0) });
    await until(() => api.listenCalls.length >= 6, 'the pages');
    // The backlog's pages come at once: one read for them.
    expect(api.rejectionReads).toBe(1);
    api.rejections = [rejection(4), rejection(3), rejection(2)];
    await until(() => events.rejectedIds.length === 2, 'the new refusals');
    await until(() => api.rejectionReads >= 4, 'more reads');
    expect(events.rejectedIds).toEqual([id(3), id(4)]);
  });
});

describe('ConnectionSupervisor: --exit-on-disconnect', () => {
  it('gives up (exit 7) once the server has been unreachable that long, the last wait cut to the limit', async () => {
    const { api, events, start } = setup({ exitOnDisconnectMs: 50 });
    api.httpUp = false;
    const error = await start({ startCursor: id(0) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CliFailure);
    expect((error as CliFailure).exitCode).toBe(7);
    expect((error as Error).message).toBe('no connection to the server for 50ms (--exit-on-disconnect 50ms); last: could not reach http://fake: connect ECONNREFUSED');
    expect(events.delays).toEqual([10, 20, 20]);
  });

  it('counts while the server refuses the stream, and says so', async () => {
    const { api, start } = setup({ mode: 'ws', exitOnDisconnectMs: 25 });
    const error = await start({ startCursor: id(0) }).catch((e: unknown) => e);
    expect((error as Error).message).toBe('no connection to the server for 25ms (--exit-on-disconnect 25ms); last: the WebSocket upgrade was refused (HTTP 502)');
    expect(api.opens.length).toBeGreaterThan(1);
  });
});

it('the zero cursor is the first run of an empty endpoint', async () => {
  const { api, saved, start } = setup({ mode: 'ws' });
  api.onOpen = [(s) => s.handlers.ready(null, false)];
  void start();
  await until(() => saved.length === 1, 'the saved start');
  expect(saved).toEqual([ZERO_CURSOR]);
});
