import {
  HookrelayApiError,
  HookrelayNetworkError,
  LISTEN_PAGE_MAX_BODY_BYTES,
  uuidv7AtTime,
  type CliMessageOut,
  type RejectionOut,
  type StreamResultFrame,
} from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { CliFailure } from '../src/errors.js';
import { Listener, type ListenerOptions } from '../src/listen/listener.js';
import {
  ZERO_CURSOR,
  type DeliveryRecord,
  type ForwardOutcome,
  type ListenApi,
  type ListenerEvents,
  type ListenerTiming,
  type StreamConnection,
  type StreamEnd,
  type StreamHandlers,
} from '../src/listen/ports.js';

/**
 * The listener's connection logic against a fake server: fallback to polling and back, flapping,
 * reconnection without gap or duplicate, replays, overflow, stop and exit-on-disconnect.
 */

const BASE_TIME = 1_780_000_000_000;
let clock = 0;
function nextId(): string {
  clock += 1;
  return uuidv7AtTime(BASE_TIME + clock);
}

function cliMessage(id: string): CliMessageOut {
  return {
    message_id: id,
    content_type: 'application/json',
    headers: {},
    raw_headers: [],
    size_bytes: 2,
    payload_sha256: '',
    received_at: new Date().toISOString(),
    method: 'POST',
    path: '/',
    query: '',
    event_type: null,
    body: Buffer.from('{}').toString('base64'),
    body_encoding: 'base64',
  };
}

const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(predicate: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await wait(5);
  }
}

type WsBehaviour = 'ok' | 'refuse' | 'unreachable' | 'fatal' | 'limited' | 'drop-after-ready';

class FakeStream implements StreamConnection {
  readonly ended: Promise<StreamEnd>;
  open = false;
  cursor: string | null = null;
  private resolve!: (end: StreamEnd) => void;
  private openedAt = Date.now();
  private done = false;

  constructor(
    private readonly server: FakeServer,
    readonly handlers: StreamHandlers,
  ) {
    this.ended = new Promise((resolve) => (this.resolve = resolve));
  }

  end(end: StreamEnd): void {
    if (this.done) return;
    this.done = true;
    this.open = false;
    this.server.streams = this.server.streams.filter((s) => s !== this);
    this.resolve(end);
  }

  start(after: string | null): void {
    this.open = true;
    this.openedAt = Date.now();
    this.cursor = after ?? this.server.latest();
    this.handlers.ready(after === null ? this.server.latest() : after, this.server.acks !== 'none');
    this.pump();
  }

  pump(): void {
    if (!this.open) return;
    let skipped: string | null = null;
    for (const id of this.server.ids) {
      if (this.cursor === null || id > this.cursor) {
        this.cursor = id;
        // As the server does with a filter: skipped messages are not sent, a cursor frame follows the run.
        if (this.server.skip.has(id)) {
          skipped = id;
          continue;
        }
        skipped = null;
        this.handlers.message(this.server.message(id), false);
        this.server.afterMessage?.();
        if (!this.open) return;
      }
    }
    if (skipped !== null) this.handlers.cursor?.(skipped);
  }

  drop(): void {
    this.end({ kind: 'closed', code: 1006, reason: '', openMs: Date.now() - this.openedAt, cause: 'server' });
  }

  /** The server closes it because its API key was revoked. */
  revoke(): void {
    this.end({ kind: 'revoked', code: 4401, reason: 'api key revoked' });
  }

  sendResult(frame: StreamResultFrame): boolean {
    if (!this.open) return false;
    // As the real stream does: a server that does not acknowledge results never sees their ids.
    const { result_id: resultId, ...withoutId } = frame;
    this.server.streamResults.push(this.server.acks === 'none' ? withoutId : frame);
    if (this.server.acks === 'auto' && resultId !== undefined) {
      setTimeout(() => {
        if (this.open) this.handlers.resultAck?.(resultId, 'recorded', undefined);
      }, 1);
    }
    return true;
  }

  /** Acknowledges `resultId` now (`acks: 'manual'`). */
  ack(resultId: string, outcome: 'recorded' | 'duplicate' | 'not_found' | 'refused' = 'recorded', message?: string): void {
    this.handlers.resultAck?.(resultId, outcome, message);
  }

  close(): void {
    this.end({ kind: 'closed', code: 1000, reason: '', openMs: Date.now() - this.openedAt, cause: 'client' });
  }
}

class FakeServer implements ListenApi {
  ids: string[] = [];
  ws: WsBehaviour = 'ok';
  /** `none`: an older server (no `result_acks`); `auto`: each result acknowledged a moment after it came; `manual`: by `ack`. */
  acks: 'none' | 'auto' | 'manual' = 'none';
  httpUp = true;
  streams: FakeStream[] = [];
  streamOpens: (string | null)[] = [];
  listenCalls: (string | null)[] = [];
  postedResults: StreamResultFrame[] = [];
  streamResults: StreamResultFrame[] = [];
  /** Ids a filter skips. */
  skip = new Set<string>();
  recentRejections?: () => Promise<RejectionOut[]>;
  /** Each message's body, base64 (of `bodySize` bytes); undefined: `{}`. */
  body: { base64: string; size: number } | undefined;
  /** Called after each message frame the stream hands over. */
  afterMessage?: () => void;
  /** Fields every message carries besides the fixture's (headers, the server's re-signing). */
  extra: Partial<CliMessageOut> = {};

  message(id: string): CliMessageOut {
    const message = { ...cliMessage(id), ...this.extra };
    return this.body === undefined ? message : { ...message, body: this.body.base64, size_bytes: this.body.size };
  }

  latest(): string | null {
    return this.ids[this.ids.length - 1] ?? null;
  }

  add(count: number): string[] {
    const added = Array.from({ length: count }, () => nextId());
    this.ids.push(...added);
    for (const stream of [...this.streams]) stream.pump();
    return added;
  }

  private up(): void {
    if (!this.httpUp) throw new HookrelayNetworkError('could not reach http://fake: connect ECONNREFUSED', 'http://fake');
  }

  async latestMessageId(): Promise<string | null> {
    this.up();
    return this.latest();
  }

  async listen(after: string | null): Promise<{ messages: CliMessageOut[]; cursor: string | null; more?: boolean }> {
    this.up();
    this.listenCalls.push(after);
    // A filtered page considers at most 60 messages (the server's scan limit, scaled down).
    const considered = this.ids.filter((id) => after === null || id > after).slice(0, this.skip.size > 0 ? 60 : 50);
    let messages = considered.filter((id) => !this.skip.has(id)).slice(0, 50);
    // As the server does: a page stops before the body that would take it past LISTEN_PAGE_MAX_BODY_BYTES.
    const size = this.body?.size ?? 0;
    const byBytes = size === 0 ? messages.length : Math.max(1, Math.ceil(LISTEN_PAGE_MAX_BODY_BYTES / size));
    if (byBytes < messages.length) {
      messages = messages.slice(0, byBytes);
      return { messages: messages.map((id) => this.message(id)), cursor: messages[messages.length - 1]!, more: true };
    }
    const last = messages.length === 50 ? messages[49]! : considered[considered.length - 1];
    return { messages: messages.map((id) => this.message(id)), cursor: last ?? null };
  }

  /** Every POST of a result, answered or not. */
  postAttempts: StreamResultFrame[] = [];
  /** POSTs still to fail with a 503 (the server answers, but cannot record it now). */
  failPosts = 0;

  async postResult(frame: StreamResultFrame): Promise<void> {
    this.up();
    this.postAttempts.push(frame);
    if (this.failPosts > 0) {
      this.failPosts -= 1;
      throw new HookrelayApiError('SERVICE_UNAVAILABLE', 'database unavailable', 503, 'r2');
    }
    this.postedResults.push(frame);
  }

  openStream(after: string | null, handlers: StreamHandlers): StreamConnection {
    this.streamOpens.push(after);
    const stream = new FakeStream(this, handlers);
    const behaviour = this.ws;
    setTimeout(() => {
      if (behaviour === 'refuse') stream.end({ kind: 'refused', status: 502, message: 'HTTP 502' });
      else if (behaviour === 'unreachable') stream.end({ kind: 'unreachable', message: 'connect ECONNRESET' });
      else if (behaviour === 'fatal') stream.end({ kind: 'fatal', error: new HookrelayApiError('ENDPOINT_NOT_FOUND', 'no such endpoint', 404, 'r1') });
      else if (behaviour === 'limited') {
        const message = 'too many open WebSockets for this API key (limit 100 per server process): close a stream or watch page of the key, or retry in 10 s';
        stream.end({ kind: 'limited', error: new HookrelayApiError('RATE_LIMITED', message, 429, 'r2', undefined, undefined, 10) });
      }
      else {
        this.streams.push(stream);
        stream.start(after);
        if (behaviour === 'drop-after-ready') setTimeout(() => stream.drop(), 2);
      }
    }, 1);
    return stream;
  }
}

class Recorder implements ListenerEvents {
  log: string[] = [];
  rejected?: (rejection: RejectionOut) => void;
  deliveries: DeliveryRecord[] = [];
  caught: number[] = [];
  connecting(info: { transport: string }): void {
    this.log.push(`connecting ${info.transport}`);
  }
  connected(info: { transport: string }): void {
    this.log.push(`connected ${info.transport}`);
  }
  disconnected(info: { transport: string }): void {
    this.log.push(`disconnected ${info.transport}`);
  }
  reconnecting(): void {
    this.log.push('reconnecting');
  }
  fallback(info: { reason: string }): void {
    this.log.push(`fallback: ${info.reason}`);
  }
  heartbeatMissing(): void {
    this.log.push('heartbeat');
  }
  delivery(record: DeliveryRecord): void {
    this.deliveries.push(record);
  }
  caughtUp(info: { count: number }): void {
    this.caught.push(info.count);
  }
  warning(text: string): void {
    this.log.push(`warning: ${text}`);
  }
  get delivered(): string[] {
    return this.deliveries.map((d) => d.message_id);
  }
}

/** Forwards instantly (or holds: `down` makes it wait like an unreachable app until the signal aborts). */
class FakeApp {
  down = false;
  delayMs = 0;
  /** Messages no route takes (the forwarder's outcome for them). */
  unrouted = new Set<string>();
  response: ForwardOutcome['response'];
  /** Ids in the order their deliveries began (before any await). */
  started: string[] = [];
  async deliver(message: CliMessageOut, signal: AbortSignal): Promise<ForwardOutcome | null> {
    this.started.push(message.message_id);
    if (this.delayMs > 0) await wait(this.delayMs);
    while (this.down) {
      if (signal.aborted) return null;
      await wait(5);
    }
    if (this.unrouted.has(message.message_id)) return { status: null, latencyMs: 0, error: 'no route takes this message', attempt: 0, target: null };
    return { status: 200, latencyMs: 1, error: null, attempt: 1, target: 'http://localhost:3000', response: this.response };
  }
}

const FAST: Partial<ListenerTiming> = {
  reconnectInitialMs: 5,
  reconnectMaxMs: 20,
  pollIntervalMs: 5,
  wsRetryInitialMs: 150,
  wsRetryMaxMs: 600,
  flapLifetimeMs: 1000,
  flapWindowMs: 5000,
  flapLimit: 3,
  reportFlushMs: 200,
  reportGraceMs: 100,
};

function setup(overrides: Partial<ListenerOptions> = {}) {
  const server = new FakeServer();
  const events = new Recorder();
  const app = new FakeApp();
  /** The cursors saved, a save that repeats the last one left out (it only updates the pending results). */
  const saved: string[] = [];
  /** The pending results of each save. */
  const savedResults: StreamResultFrame[][] = [];
  /** The results each save handed over as new since the one before. */
  const savedAdded: StreamResultFrame[][] = [];
  const stop = new AbortController();
  const make = (options: Partial<ListenerOptions> = {}) =>
    new Listener({
      mode: 'auto',
      startCursor: null,
      api: server,
      deliverer: app,
      cursors: {
        save: async (cursor, results) => {
          if (saved[saved.length - 1] !== cursor) saved.push(cursor);
          savedResults.push([...results.all()]);
          savedAdded.push([...results.added]);
        },
      },
      events,
      ...overrides,
      ...options,
      timing: { ...FAST, ...overrides.timing, ...options.timing },
    });
  return { server, events, app, saved, savedResults, savedAdded, stop, make };
}

describe('Listener: transports', () => {
  it('auto: a refused upgrade falls back to polling, which delivers everything; later the WebSocket is used again', async () => {
    const { server, events, saved, stop, make } = setup();
    const [start] = server.add(1);
    const backlog = server.add(3);
    server.ws = 'refuse';
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.delivered.length === 3, 'the backlog by polling');
    expect(events.log).toContain('fallback: the WebSocket upgrade was refused (HTTP 502)');
    expect(events.log).toContain('connected polling');
    const polled = server.add(2);
    await until(() => events.delivered.length === 5, 'live messages by polling');
    // The WebSocket works again: the next retry switches over, starting after the last message polled.
    server.ws = 'ok';
    await until(() => events.log.includes('connected websocket'), 'the WebSocket again', 3000);
    expect(server.streamOpens[server.streamOpens.length - 1]).toBe(polled[1]);
    const live = server.add(2);
    await until(() => events.delivered.length === 7, 'live messages on the WebSocket');
    stop.abort();
    await running;
    expect(events.delivered).toEqual([...backlog, ...polled, ...live]);
    expect(saved).toEqual([start, ...backlog, ...polled, ...live]);
    // Reported over HTTP while polling, on the stream once it was back.
    expect(server.postedResults.map((r) => r.message_id)).toEqual([...backlog, ...polled]);
    expect(server.streamResults.map((r) => r.message_id)).toEqual(live);
  });

  it('ws: never polls, retries the WebSocket with backoff', async () => {
    const { server, events, stop, make } = setup({ mode: 'ws' });
    server.ws = 'refuse';
    const running = make().run(stop.signal);
    await until(() => server.streamOpens.length >= 4, 'several attempts');
    stop.abort();
    await running;
    expect(server.listenCalls).toEqual([]);
    expect(events.log.filter((l) => l === 'reconnecting').length).toBeGreaterThanOrEqual(3);
    expect(events.log.some((l) => l.startsWith('fallback'))).toBe(false);
  });

  it('poll: never opens a WebSocket; a first run starts from the endpoint\'s newest message', async () => {
    const { server, events, saved, stop, make } = setup({ mode: 'poll' });
    const old = server.add(2);
    const running = make().run(stop.signal);
    await until(() => server.listenCalls.length >= 2, 'polling');
    expect(server.listenCalls[0]).toBe(old[1]);
    const fresh = server.add(60);
    await until(() => events.delivered.length === 60, 'two pages');
    stop.abort();
    await running;
    expect(server.streamOpens).toEqual([]);
    expect(events.delivered).toEqual(fresh);
    expect(saved[0]).toBe(old[1]);
  });

  it('auto: a WebSocket that cannot connect while HTTP works means polling; when nothing answers it retries the WebSocket', async () => {
    const { server, events, stop, make } = setup();
    server.ws = 'unreachable';
    server.httpUp = false;
    const running = make({ startCursor: ZERO_CURSOR }).run(stop.signal);
    await wait(60);
    // The server is down: no point polling; keep trying the WebSocket.
    expect(events.log.some((l) => l.startsWith('fallback'))).toBe(false);
    server.httpUp = true;
    await until(() => events.log.some((l) => l.startsWith('fallback: the WebSocket could not connect')), 'the fallback');
    const ids = server.add(3);
    await until(() => events.delivered.length === 3, 'polled messages');
    stop.abort();
    await running;
    expect(events.delivered).toEqual(ids);
  });

  it('auto: a WebSocket that keeps dropping means polling', async () => {
    const { server, events, stop, make } = setup();
    server.ws = 'drop-after-ready';
    const running = make({ startCursor: ZERO_CURSOR }).run(stop.signal);
    await until(() => events.log.some((l) => l.startsWith('fallback: the WebSocket dropped 3 times')), 'the fallback');
    server.ws = 'refuse';
    const ids = server.add(2);
    await until(() => events.delivered.length === 2, 'polled messages');
    stop.abort();
    await running;
    expect(events.delivered).toEqual(ids);
    expect(server.listenCalls.length).toBeGreaterThan(0);
  });
});

describe('Listener: never loses, never repeats', () => {
  it('first run: starts from the ready cursor and saves it; a reconnect resumes after the last message received', async () => {
    const { server, events, saved, stop, make } = setup();
    server.add(3); // before the first run: not delivered
    const running = make().run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    expect(server.streamOpens).toEqual([null]);
    const first = server.add(2);
    await until(() => events.delivered.length === 2, 'live messages');
    server.streams[0]!.drop();
    const whileDown = server.add(2);
    await until(() => events.delivered.length === 4, 'messages sent during the drop');
    stop.abort();
    await running;
    expect(server.streamOpens).toEqual([null, first[1]]);
    expect(events.delivered).toEqual([...first, ...whileDown]);
    expect(saved).toEqual([server.ids[2], ...first, ...whileDown]);
    expect(events.log).toContain('disconnected websocket');
  });

  it('an empty endpoint: the first run saves the zero cursor, so a restart gets everything since', async () => {
    const { events, saved, stop, make } = setup();
    const running = make().run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    stop.abort();
    await running;
    expect(saved).toEqual([ZERO_CURSOR]);
  });

  it('forwards replays (ids at or below the stream position) again without moving the cursor', async () => {
    const { server, events, saved, stop, make } = setup();
    const [start] = server.add(1);
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    const [a, b] = server.add(2);
    await until(() => events.delivered.length === 2, 'two messages');
    server.streams[0]!.handlers.message(cliMessage(a!), false);
    await until(() => events.delivered.length === 3, 'the replay');
    stop.abort();
    await running;
    expect(events.deliveries.map((d) => [d.message_id, d.replay, d.cursor])).toEqual([
      [a, false, a],
      [b, false, b],
      [a, true, b],
    ]);
    expect(saved).toEqual([start, a, b]);
  });

  it('a result that cannot be reported (stream gone, server down) is retried until the server is back', async () => {
    const { server, events, app, stop, make } = setup({ mode: 'ws' });
    const [start] = server.add(1);
    app.delayMs = 60;
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    const [id] = server.add(1);
    await wait(20); // in the app now
    server.httpUp = false;
    server.ws = 'unreachable';
    server.streams[0]!.drop();
    await until(() => events.delivered.length === 1, 'the delivery');
    await wait(300);
    expect(server.postedResults).toEqual([]);
    server.httpUp = true;
    server.ws = 'ok';
    const reported = (): StreamResultFrame[] => [...server.postedResults, ...server.streamResults];
    await until(() => reported().length === 1, 'the report', 5000);
    stop.abort();
    await running;
    // A POST carries the result's id (as its Idempotency-Key header), a stream without acknowledgements does not.
    expect(reported().map(({ result_id: _id, ...report }) => report)).toEqual([{ type: 'result', message_id: id, status: 200, latency_ms: 1, error: null }]);
  });

  it('stopping keeps the stream open until the delivery in flight is done, and reports it there', async () => {
    const { server, events, app, saved, stop, make } = setup({ mode: 'ws' });
    const [start] = server.add(1);
    app.delayMs = 150;
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    const [id, next] = server.add(2);
    await wait(40); // the first one is in the app
    stop.abort();
    await running;
    expect(events.delivered).toEqual([id]);
    expect(server.streamResults.map((r) => r.message_id)).toEqual([id]);
    expect(server.postedResults).toEqual([]);
    expect(saved).toEqual([start, id]);
    expect(next).toBeDefined();
  });

  it('a message that finds the listener idle is handed to the app before the stream handler returns; one that comes during a delivery waits for it', async () => {
    const { server, events, app, stop, make } = setup();
    app.delayMs = 30;
    const running = make().run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    const [first] = server.add(1);
    // No await between the frame and this check: the delivery began inside the handler.
    expect(app.started).toEqual([first]);
    const [second] = server.add(1);
    expect(app.started).toEqual([first]);
    await until(() => events.delivered.length === 2, 'both messages');
    expect(app.started).toEqual([first, second]);
    expect(events.delivered).toEqual([first, second]);
    stop.abort();
    await running;
  });

  it('counts what it caught up', async () => {
    const { server, events, stop, make } = setup();
    const [start] = server.add(1);
    server.add(4);
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.caught.length === 1, 'caught up');
    server.add(2);
    await until(() => events.delivered.length === 6, 'live');
    stop.abort();
    await running;
    expect(events.caught).toEqual([4]);
  });

  it('a full queue closes the stream and resumes after the last message queued', async () => {
    const { server, events, app, stop, make } = setup({ timing: { queueHigh: 5, queueLow: 2 } });
    const [start] = server.add(1);
    const ids = server.add(30);
    app.delayMs = 2;
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.delivered.length === 30, 'all of them', 10_000);
    stop.abort();
    await running;
    expect(events.delivered).toEqual(ids);
    expect(server.streamOpens.length).toBeGreaterThan(3);
    expect(events.log.some((l) => l.startsWith('disconnected'))).toBe(false);
  });

  it.each(['ws', 'poll'] as const)('--transport %s: the queue holds at most queueHighBytes of bodies, however many wait for a slow app', async (mode) => {
    const { server, events, app, stop, make } = setup();
    const [start] = server.add(1);
    const MIB = 1024 * 1024;
    server.body = { base64: Buffer.alloc(MIB, 7).toString('base64'), size: MIB };
    const ids = server.add(150);
    app.delayMs = 1;
    const listener = make({ mode, startCursor: start! });
    let most = 0;
    const sample = (): void => {
      most = Math.max(most, listener.queued.bytes);
    };
    server.afterMessage = sample;
    const deliver = app.deliver.bind(app);
    app.deliver = (message, signal) => {
      sample();
      return deliver(message, signal);
    };
    const running = listener.run(stop.signal);
    await until(() => events.delivered.length === 150, 'all of them', 20_000);
    stop.abort();
    await running;
    expect(events.delivered).toEqual(ids);
    expect(most).toBeLessThanOrEqual(64 * MIB);
    // The bound was reached (the stream) or read up to (polling): the app was the slow side.
    expect(most).toBeGreaterThan(mode === 'ws' ? 48 * MIB : 16 * MIB);
  });

  it('takes one body larger than queueHighBytes when no other waits', async () => {
    const { server, events, stop, make } = setup({ timing: { queueHighBytes: 1000, queueLowBytes: 100 } });
    const [start] = server.add(1);
    server.body = { base64: Buffer.alloc(5000, 1).toString('base64'), size: 5000 };
    const ids = server.add(3);
    const running = make({ mode: 'ws', startCursor: start! }).run(stop.signal);
    await until(() => events.delivered.length === 3, 'all three');
    stop.abort();
    await running;
    expect(events.delivered).toEqual(ids);
  });

  it('stopping while the app is down: returns at once, and the held message is not marked processed', async () => {
    const { server, events, app, saved, stop, make } = setup();
    const [start] = server.add(1);
    app.down = true;
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    server.add(2);
    await wait(30);
    stop.abort();
    await running;
    expect(events.delivered).toEqual([]);
    expect(saved).toEqual([start]);
  });
});

describe('Listener: failures', () => {
  it('a fatal answer (unknown endpoint) ends the run with that error', async () => {
    const { server, stop, make } = setup();
    server.ws = 'fatal';
    await expect(make().run(stop.signal)).rejects.toMatchObject({ code: 'ENDPOINT_NOT_FOUND', status: 404 });
  });

  it('a fatal answer to the first request (bad key) ends the run', async () => {
    const { server, stop, make } = setup();
    server.latestMessageId = async () => {
      throw new HookrelayApiError('UNAUTHORIZED', 'API key is invalid or missing', 401, 'r');
    };
    await expect(make().run(stop.signal)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('a stream closed because the API key was revoked ends the run with UNAUTHORIZED at once: no reconnection, no polling', async () => {
    const { server, events, stop, make } = setup();
    const running = make({ startCursor: ZERO_CURSOR }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    const ids = server.add(2);
    await until(() => events.delivered.length === 2, 'two messages');
    server.streams[0]!.revoke();
    const error = await running.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HookrelayApiError);
    expect(error).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    expect((error as Error).message).toBe('the API key was revoked while listening: the server closed the stream (4401 api key revoked)');
    expect(events.delivered).toEqual(ids);
    expect(server.streamOpens).toHaveLength(1);
    expect(server.listenCalls).toEqual([]);
    expect(events.log.filter((l) => l === 'reconnecting' || l.startsWith('fallback'))).toEqual([]);
  });

  it('a stream refused over the socket limits (429) is retried on the WebSocket, not by polling, no sooner than Retry-After; said once', async () => {
    const { server, events, stop, make } = setup();
    const delays: number[] = [];
    // The waits asked for are recorded; each takes 5 ms, so that the test does not wait 10 s each time.
    const sleep = async (ms: number, signal?: AbortSignal): Promise<boolean> => {
      delays.push(ms);
      if (signal?.aborted === true) return false;
      await wait(5);
      return true;
    };
    server.ws = 'limited';
    const running = make({ startCursor: ZERO_CURSOR, sleep }).run(stop.signal);
    await until(() => server.streamOpens.length >= 3, 'three attempts');
    server.ws = 'ok';
    await until(() => events.log.includes('connected websocket'), 'connected once a slot is free');
    const ids = server.add(1);
    await until(() => events.delivered.length === 1, 'a message');
    stop.abort();
    await running;
    expect(events.delivered).toEqual(ids);
    expect(server.listenCalls).toEqual([]);
    expect(events.log.some((l) => l.startsWith('fallback'))).toBe(false);
    const warnings = events.log.filter((l) => l.startsWith('warning:'));
    expect(warnings).toEqual(['warning: the server refused the stream: too many open WebSockets for this API key (limit 100 per server process): close a stream or watch page of the key, or retry in 10 s']);
    expect(delays.length).toBeGreaterThanOrEqual(3);
    for (const delay of delays.slice(0, 3)) expect(delay).toBeGreaterThanOrEqual(10_000);
  });

  it('--exit-on-disconnect: exit 7 once the server has been unreachable that long', async () => {
    const { server, stop, make } = setup({ exitOnDisconnectMs: 150 });
    server.httpUp = false;
    server.ws = 'unreachable';
    const started = Date.now();
    const error = await make().run(stop.signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CliFailure);
    expect(error).toMatchObject({ code: 'NETWORK_ERROR', exitCode: 7 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('--exit-on-disconnect while the server refuses the stream (a socket limit) says so, not that it is unreachable', async () => {
    const { server, stop, make } = setup({ exitOnDisconnectMs: 150 });
    server.ws = 'limited';
    const error = await make({ startCursor: ZERO_CURSOR }).run(stop.signal).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NETWORK_ERROR', exitCode: 7 });
    expect((error as Error).message).toMatch(/^no connection to the server for .+ \(--exit-on-disconnect .+\); last: the server refused the stream: too many open WebSockets for this API key/u);
  });

  it('--exit-on-disconnect counts from when a working connection dropped', async () => {
    const { server, events, stop, make } = setup({ exitOnDisconnectMs: 200 });
    const running = make({ startCursor: ZERO_CURSOR }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    await wait(300);
    server.httpUp = false;
    server.ws = 'unreachable';
    server.streams[0]!.drop();
    await expect(running).rejects.toMatchObject({ exitCode: 7 });
  });
});

describe('Listener: interactive control', () => {
  it('p pauses after the delivery in flight (messages wait, in order) and resumes; r forwards the last one again', async () => {
    const { server, events, saved, stop, make } = setup();
    const [start] = server.add(1);
    const listener = make({ startCursor: start! });
    const running = listener.run(stop.signal);
    const first = server.add(1);
    await until(() => events.delivered.length === 1, 'the first message');
    expect(listener.togglePause()).toBe(true);
    const waiting = server.add(3);
    await wait(100);
    expect(events.delivered).toEqual(first);
    expect(listener.replayLast()).toBe(true);
    await wait(50);
    expect(events.delivered).toEqual(first);
    expect(listener.togglePause()).toBe(false);
    await until(() => events.delivered.length === 5, 'the replay and the waiting messages');
    stop.abort();
    await running;
    // The replay comes first, then the waiting ones in order; a replay never moves the cursor.
    expect(events.delivered).toEqual([...first, ...first, ...waiting]);
    expect(events.deliveries.map((d) => d.replay)).toEqual([false, true, false, false, false]);
    expect(saved).toEqual([start, ...first, ...waiting]);
  });

  it('a message no route takes moves the cursor but is not reported, nor replayed by r', async () => {
    const { server, events, app, saved, stop, make } = setup();
    const [start] = server.add(1);
    const listener = make({ startCursor: start! });
    const running = listener.run(stop.signal);
    expect(listener.replayLast()).toBe(false);
    const [routed, skipped] = server.add(2);
    app.unrouted.add(skipped!);
    await until(() => events.delivered.length === 2, 'both messages');
    listener.replayLast();
    await until(() => events.delivered.length === 3, 'the replay');
    stop.abort();
    await running;
    expect(events.delivered).toEqual([routed, skipped, routed]);
    expect(events.deliveries[1]).toMatchObject({ target: null, status: null });
    expect(saved).toEqual([start, routed, skipped]);
    expect([...server.postedResults, ...server.streamResults].map((r) => r.message_id)).toEqual([routed, routed]);
  });
});

describe('Listener: server-side filters', () => {
  for (const mode of ['ws', 'poll'] as const) {
    it(`${mode}: skipped messages move the cursor; a restart resumes after them and delivers nothing twice`, async () => {
      const { server, events, saved, stop, make } = setup({ mode, filtered: true });
      const [start] = server.add(1);
      const ids = server.add(130);
      const matching = ids.filter((_, index) => index % 13 === 0);
      for (const id of ids) if (!matching.includes(id)) server.skip.add(id);
      const running = make({ startCursor: start! }).run(stop.signal);
      await until(() => saved[saved.length - 1] === ids[ids.length - 1], 'the cursor at the last (skipped) message');
      stop.abort();
      await running;
      expect(events.delivered).toEqual(matching);
      expect(events.caught).toEqual([matching.length]);

      // A restart from the saved cursor: only what came after.
      const again = setup({ mode, filtered: true });
      again.server.ids = [...server.ids];
      again.server.skip = server.skip;
      const later = again.server.add(2);
      const second = again.make({ startCursor: saved[saved.length - 1]! }).run(again.stop.signal);
      await until(() => again.events.delivered.length === 2, 'the new messages');
      again.stop.abort();
      await second;
      expect(again.events.delivered).toEqual(later);
    });
  }

  it("results carry the listener's name and the app's answer", async () => {
    const { server, app, stop, make } = setup({ mode: 'poll' });
    app.response = { headers: [['content-type', 'text/plain']], body: Buffer.from('fine'), truncated: false };
    const [start] = server.add(1);
    const running = make({ startCursor: start!, name: 'ci' }).run(stop.signal);
    server.add(1);
    await until(() => server.postedResults.length === 1, 'the result');
    stop.abort();
    await running;
    expect(server.postedResults[0]).toMatchObject({
      listener: 'ci',
      status: 200,
      response_headers: [['content-type', 'text/plain']],
      response_body: Buffer.from('fine').toString('base64'),
      response_body_truncated: false,
    });
  });
});

describe('Listener: what arrived', () => {
  it('hands the output the provider its headers name, the event type and the server’s re-signing; the result says resigned', async () => {
    const { server, events, stop, make } = setup({ mode: 'poll' });
    const signedAt = new Date(Date.now() - 600_000).toISOString();
    server.extra = { raw_headers: [['Stripe-Signature', 't=1,v1=00']], event_type: 'invoice.paid', signed_at: signedAt, resigned: true };
    const [start] = server.add(1);
    const running = make({ startCursor: start! }).run(stop.signal);
    server.add(1);
    await until(() => server.postedResults.length === 1, 'the result');
    server.extra = { raw_headers: [['X-GitHub-Event', 'push']], event_type: 'push' };
    server.add(1);
    await until(() => server.postedResults.length === 2, 'the second result');
    stop.abort();
    await running;
    expect(events.deliveries.map(({ provider, event_type, resigned, signed_at, resign_skipped }) => ({ provider, event_type, resigned, signed_at, resign_skipped }))).toEqual([
      { provider: 'stripe', event_type: 'invoice.paid', resigned: true, signed_at: signedAt, resign_skipped: undefined },
      { provider: 'github', event_type: 'push', resigned: false, signed_at: undefined, resign_skipped: undefined },
    ]);
    expect(server.postedResults[0]!.resigned).toBe(true);
    // A message the server did not re-sign reports no `resigned`, which a server that does not re-sign would refuse.
    expect(server.postedResults[1]).not.toHaveProperty('resigned');
  });

  it('hands the output an edited copy as edited, signed or not; any other message without either', async () => {
    const { server, events, stop, make } = setup({ mode: 'poll' });
    const [start] = server.add(1);
    server.extra = { replay_of: start!, edited: true, signed: false };
    const running = make({ startCursor: start! }).run(stop.signal);
    server.add(1);
    await until(() => server.postedResults.length === 1, 'the unsigned copy');
    server.extra = { replay_of: start!, edited: true, signed: true };
    server.add(1);
    await until(() => server.postedResults.length === 2, 'the signed copy');
    server.extra = {};
    server.add(1);
    await until(() => server.postedResults.length === 3, 'a message that arrived');
    stop.abort();
    await running;
    expect(events.deliveries.map(({ edited, signed }) => ({ edited, signed }))).toEqual([
      { edited: true, signed: false },
      { edited: true, signed: true },
      { edited: undefined, signed: undefined },
    ]);
  });
});

describe('Listener: results until the server acknowledges them', () => {
  const ids = (frames: readonly StreamResultFrame[]): (string | undefined)[] => frames.map((f) => f.result_id);

  it('a save that fails hands the results it was given to the next save', async () => {
    const { server, events, stop, make } = setup({ mode: 'ws' });
    server.acks = 'manual';
    const handed: (string | undefined)[][] = [];
    let failNext = true;
    const cursors = {
      save: async (_cursor: string, results: { added: readonly StreamResultFrame[] }) => {
        handed.push(ids(results.added));
        if (failNext && results.added.length > 0) {
          failNext = false;
          throw new Error('disk full');
        }
      },
    };
    const [start] = server.add(1);
    const running = make({ startCursor: start!, cursors }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    server.add(1);
    await until(() => server.streamResults.length === 1, 'the first result');
    server.add(1);
    await until(() => server.streamResults.length === 2, 'the second result');
    await until(() => handed.flat().length >= 3, 'the saves');
    stop.abort();
    await running;
    const [first, second] = server.streamResults.map((r) => r.result_id);
    expect(handed.filter((added) => added.length > 0).slice(0, 2)).toEqual([[first], [first, second]]);
    expect(events.log.some((line) => line.startsWith('warning: cannot save the cursor (disk full)'))).toBe(true);
  });

  it('a result the stream took without acknowledging is sent again, under the same id, after a reconnection; once acknowledged, never again', async () => {
    const { server, events, savedResults, savedAdded, stop, make } = setup({ mode: 'ws' });
    server.acks = 'manual';
    const [start] = server.add(1);
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    const [first] = server.add(1);
    await until(() => server.streamResults.length === 1, 'the first result');
    const sent = server.streamResults[0]!;
    expect(sent).toMatchObject({ message_id: first, result_id: expect.stringMatching(/^[0-9a-f-]{36}$/u) });
    // The cursor moved past the message only with its result pending in the same save.
    expect(ids(savedResults[savedResults.length - 1]!)).toEqual([sent.result_id]);

    // The server dies before acknowledging it: the next stream gets it again, the same report.
    server.streams[0]!.drop();
    await until(() => server.streamResults.length === 2, 'the result again');
    expect(server.streamResults[1]).toEqual(sent);
    server.streams[0]!.ack(sent.result_id!, 'duplicate');
    await until(() => savedResults[savedResults.length - 1]!.length === 0, 'the cursor file without it');

    const acknowledging = server.streams[0]!;
    acknowledging.drop();
    await until(() => server.streams.length === 1 && server.streams[0] !== acknowledging, 'a third stream');
    const [second] = server.add(1);
    await until(() => server.streamResults.length === 3, 'the next result');
    expect(server.streamResults.map((r) => r.message_id)).toEqual([first, first, second]);
    // Each result was handed to a save as new once, however many saves it stayed pending for.
    expect(ids(savedAdded.flat())).toEqual([sent.result_id, server.streamResults[2]!.result_id]);
    server.streams[0]!.ack(server.streamResults[2]!.result_id!);
    stop.abort();
    await running;
    expect(server.postAttempts).toEqual([]);
    expect(events.log.filter((l) => l.startsWith('warning'))).toEqual([]);
  });

  it('a result whose acknowledgement is overdue is sent again on the same stream (a server that could not record it for a while)', async () => {
    const { server, events, stop, make } = setup({ mode: 'ws', timing: { resultAckTimeoutMs: 60 } });
    server.acks = 'manual';
    const [start] = server.add(1);
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    server.add(1);
    await until(() => server.streamResults.length === 1, 'the result');
    const stream = server.streams[0]!;
    await until(() => server.streamResults.length === 3, 'the result twice more');
    expect(new Set(server.streamResults.map((r) => r.result_id)).size).toBe(1);
    expect(server.streams[0]).toBe(stream);
    stream.ack(server.streamResults[0]!.result_id!, 'duplicate');
    const sent = server.streamResults.length;
    await wait(200);
    expect(server.streamResults).toHaveLength(sent);
    stop.abort();
    await running;
  });

  it('a stop waits (a while) for the acknowledgements before closing the stream', async () => {
    const { server, events, savedResults, savedAdded, stop, make } = setup({ mode: 'ws' });
    server.acks = 'manual';
    const [start] = server.add(1);
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    server.add(1);
    await until(() => server.streamResults.length === 1, 'the result');
    stop.abort();
    await wait(30);
    const stream = server.streams[0]!;
    expect(stream.open).toBe(true);
    stream.ack(server.streamResults[0]!.result_id!);
    await running;
    expect(stream.open).toBe(false);
    expect(server.postAttempts).toEqual([]);
    expect(savedResults[savedResults.length - 1]).toEqual([]);
    expect(events.log.filter((l) => l.startsWith('warning'))).toEqual([]);
  });

  it('what is not acknowledged at the stop stays in the cursor file, and the next run sends it first, under the same id', async () => {
    const { server, events, saved, savedResults, stop, make } = setup({ mode: 'ws', timing: { reportFlushMs: 50 } });
    server.acks = 'manual';
    const [start] = server.add(1);
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    const [id] = server.add(1);
    await until(() => server.streamResults.length === 1, 'the result');
    // The server is gone for HTTP too: the stop cannot report it by POST either.
    server.httpUp = false;
    stop.abort();
    await running;
    const kept = savedResults[savedResults.length - 1]!;
    expect(kept).toEqual([server.streamResults[0]]);
    expect(saved[saved.length - 1]).toBe(id);
    expect(events.log).toContain('warning: 1 result was not acknowledged by the server: kept in the cursor file, sent again when this listener next starts');

    // The next run, on a server that acknowledges: it goes first, the same report.
    server.httpUp = true;
    server.acks = 'auto';
    const next = setup({ mode: 'ws' });
    next.server.ids = server.ids;
    next.server.acks = 'auto';
    const again = next.make({ startCursor: id!, pendingResults: kept as never }).run(next.stop.signal);
    await until(() => next.server.streamResults.length === 1, 'the kept result');
    expect(next.server.streamResults[0]).toEqual(kept[0]);
    await until(() => next.savedResults.length > 0 && next.savedResults[next.savedResults.length - 1]!.length === 0, 'the file without it');
    next.stop.abort();
    await again;
    expect(next.events.delivered).toEqual([]);
  });

  it('polling: a POST that fails is retried under the same id; its 2xx is the acknowledgement', async () => {
    const { server, events, savedResults, stop, make } = setup({ mode: 'poll' });
    const [start] = server.add(1);
    server.failPosts = 2;
    const running = make({ startCursor: start! }).run(stop.signal);
    const [id] = server.add(1);
    await until(() => server.postedResults.length === 1, 'the result', 10_000);
    expect(server.postAttempts).toHaveLength(3);
    expect(new Set(ids(server.postAttempts)).size).toBe(1);
    expect(server.postAttempts[0]).toMatchObject({ message_id: id, result_id: expect.any(String) });
    await until(() => savedResults[savedResults.length - 1]!.length === 0, 'the cursor file without it');
    stop.abort();
    await running;
    expect(events.log.filter((l) => l.startsWith('warning'))).toEqual([]);
  });

  it('an older server (no acknowledgements): a result is done once sent, never sent again, never kept', async () => {
    const { server, events, savedResults, stop, make } = setup({ mode: 'ws' });
    const [start] = server.add(1);
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    server.add(2);
    await until(() => server.streamResults.length === 2, 'the results');
    server.streams[0]!.drop();
    await until(() => server.streams.length === 1, 'a new stream');
    await wait(30);
    stop.abort();
    await running;
    expect(server.streamResults).toHaveLength(2);
    expect(ids(server.streamResults)).toEqual([undefined, undefined]);
    expect(savedResults[savedResults.length - 1]).toEqual([]);
  });

  it('results the server refuses are forgotten with a warning', async () => {
    const { server, events, savedResults, savedAdded, stop, make } = setup({ mode: 'ws' });
    server.acks = 'manual';
    const [start] = server.add(1);
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    const [id] = server.add(1);
    await until(() => server.streamResults.length === 1, 'the result');
    server.streams[0]!.ack(server.streamResults[0]!.result_id!, 'refused', 'latency_ms: must be at most 2147483647');
    await until(() => savedResults[savedResults.length - 1]!.length === 0, 'the cursor file without it');
    expect(events.log).toContain(`warning: the server refused the result of message ${id}: latency_ms: must be at most 2147483647`);
    stop.abort();
    await running;
  });

  it('keeps at most maxPendingResults: the oldest go first, with one warning', async () => {
    const { server, events, savedResults, stop, make } = setup({ mode: 'ws', maxPendingResults: 3, timing: { reportFlushMs: 20 } });
    server.acks = 'manual';
    const [start] = server.add(1);
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.log.includes('connected websocket'), 'connected');
    const added = server.add(5);
    await until(() => server.streamResults.length === 5, 'the results');
    server.httpUp = false;
    stop.abort();
    await running;
    expect(savedResults[savedResults.length - 1]!.map((r) => r.message_id)).toEqual(added.slice(2));
    const warnings = events.log.filter((l) => l.startsWith('warning: more results wait'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`beginning with the result of message ${added[0]}`);
  });
});

describe('Listener: refused requests', () => {
  const refusal = (id: string): RejectionOut => ({
    id,
    endpoint_kind: 'inbound',
    endpoint_id: '01a21f6b-9dc5-7a4f-a342-8d45339009e5',
    received_at: new Date().toISOString(),
    reason: 'signature_mismatch',
    detail: 'the x-hub-signature-256 header does not match',
    status: 401,
    method: 'POST',
    path: '/',
    query: '',
    raw_headers: [],
    size_bytes: 2,
    body_sha256: null,
    body_truncated: false,
    source_address: '127.0.0.1',
  });

  it('shows the stream\'s refusals at once, then, while polling, each later one once, oldest first; none from before it started; no cursor moves', async () => {
    const { server, events, saved, stop, make } = setup();
    const shown: string[] = [];
    events.rejected = (r: RejectionOut) => void shown.push(r.id);
    const stored: RejectionOut[] = [refusal(nextId())];
    server.recentRejections = async () => [...stored].reverse();
    const [start] = server.add(1);
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => server.streams.some((s) => s.open), 'the stream');
    const live = refusal(nextId());
    stored.push(live);
    server.streams[0]!.handlers.rejection?.(live);
    expect(shown).toEqual([live.id]);
    // The WebSocket goes away: polling shows what the stream did not.
    server.ws = 'refuse';
    server.streams[0]!.end({ kind: 'refused', status: 502, message: 'HTTP 502' });
    await until(() => events.log.includes('connected polling'), 'polling');
    const later = [refusal(nextId()), refusal(nextId())];
    stored.push(...later);
    await until(() => shown.length === 3, 'the polled refusals');
    await wait(50);
    stop.abort();
    await running;
    expect(shown).toEqual([live.id, ...later.map((r) => r.id)]);
    expect(saved).toEqual([start]);
    expect(events.delivered).toEqual([]);
  });

  it('while polling a backlog, reads the refusals once a poll interval, not before every page', async () => {
    const { server, events, stop, make } = setup({ mode: 'poll', timing: { pollIntervalMs: 60_000 } });
    events.rejected = () => {};
    let reads = 0;
    server.recentRejections = async () => {
      reads += 1;
      return [];
    };
    const [start] = server.add(1);
    const backlog = server.add(180);
    const running = make({ startCursor: start! }).run(stop.signal);
    await until(() => events.delivered.length === backlog.length, 'the backlog, several pages');
    stop.abort();
    await running;
    expect(server.listenCalls.length).toBeGreaterThan(2);
    expect(reads).toBe(1);
  });
});
