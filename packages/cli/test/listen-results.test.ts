import { HookrelayApiError, HookrelayNetworkError, type StreamResultFrame } from '@hookrelay/shared';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PendingResultFrame, StreamConnection, StreamEnd } from '../src/listen/ports.js';
import { resultFrame, ResultLedger, type ResultLedgerOptions } from '../src/listen/results.js';
import { sleep } from '../src/listen/sleep.js';

/**
 * The result ledger on its own: where each result goes (the ready stream, or a POST), when it is
 * sent again, what a save of the cursor file is handed, and what a stop leaves. Timings run on fake
 * timers.
 */

const TIMING = { reportFlushMs: 1_000, reportGraceMs: 300, resultAckTimeoutMs: 5_000, journalEmptyDelayMs: 1_000 };

let counter = 0;
function result(messageId = `m${++counter}`): PendingResultFrame {
  return { type: 'result', message_id: messageId, status: 200, latency_ms: 3, error: null, result_id: `r-${messageId}` };
}

class FakeStream implements StreamConnection {
  readonly ended = new Promise<StreamEnd>(() => {});
  open = true;
  sent: StreamResultFrame[] = [];
  sendResult(frame: StreamResultFrame): boolean {
    if (!this.open) return false;
    this.sent.push(frame);
    return true;
  }
  close(): void {
    this.open = false;
  }
}

function setup(overrides: Partial<ResultLedgerOptions> = {}) {
  const posted: StreamResultFrame[] = [];
  const attempts: StreamResultFrame[] = [];
  const warnings: string[] = [];
  const api = {
    /** Answers still to fail, in order: an error to throw each. */
    failures: [] as unknown[],
    async postResult(frame: StreamResultFrame): Promise<void> {
      attempts.push(frame);
      const failure = api.failures.shift();
      if (failure !== undefined) throw failure;
      posted.push(frame);
    },
  };
  let stale = 0;
  const halt = new AbortController();
  const ledger = new ResultLedger({
    api,
    events: { warning: (text) => warnings.push(text) },
    timing: TIMING,
    halt: halt.signal,
    journalStale: () => (stale += 1),
    sleep,
    now: () => Date.now(),
    ...overrides,
  });
  return { ledger, api, posted, attempts, warnings, halt, stale: () => stale };
}

const messageIds = (frames: readonly StreamResultFrame[]): string[] => frames.map((f) => f.message_id);

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('resultFrame', () => {
  it("is the app's answer under a new result id, with the listener's name and the captured answer", () => {
    const frame = resultFrame(
      'm1',
      { status: 201, latencyMs: 12, error: null, attempt: 1, target: 'http://localhost:3000', response: { headers: [['x-a', '1']], body: Buffer.from('ok'), truncated: true } },
      'second',
    );
    expect(frame).toEqual({
      type: 'result',
      message_id: 'm1',
      status: 201,
      latency_ms: 12,
      error: null,
      result_id: expect.stringMatching(/^[0-9a-f-]{36}$/u),
      listener: 'second',
      response_headers: [['x-a', '1']],
      response_body: Buffer.from('ok').toString('base64'),
      response_body_truncated: true,
    });
    const bare = resultFrame('m2', { status: null, latencyMs: 0, error: 'ECONNREFUSED', attempt: 1, target: 'http://localhost:3000' }, undefined);
    expect(bare).toEqual({ type: 'result', message_id: 'm2', status: null, latency_ms: 0, error: 'ECONNREFUSED', result_id: bare.result_id });
    expect(bare.result_id).not.toBe(frame.result_id);
    expect(resultFrame('m3', { status: 200, latencyMs: 1, error: null, attempt: 1, target: 'http://localhost:3000' }, undefined, true).resigned).toBe(true);
  });
});

describe('ResultLedger: on the stream', () => {
  it('sends what waits, in order, once a stream is attached; an acknowledged result is forgotten', () => {
    const { ledger, posted } = setup();
    const [a, b] = [result(), result()];
    ledger.add(a);
    ledger.add(b);
    ledger.send();
    const stream = new FakeStream();
    ledger.attach(stream, { acks: true });
    expect(stream.sent).toEqual([a, b]);
    expect(ledger.size).toBe(2);
    ledger.acknowledge(a.result_id, 'recorded', undefined);
    ledger.acknowledge(b.result_id, 'duplicate', undefined);
    expect(ledger.size).toBe(0);
    vi.advanceTimersByTime(60_000);
    expect(stream.sent).toHaveLength(2);
    expect(posted).toEqual([]);
  });

  it('a stream whose server does not acknowledge results: a result is done once sent', () => {
    const { ledger } = setup();
    const stream = new FakeStream();
    ledger.attach(stream, { acks: false });
    ledger.add(result());
    ledger.send();
    expect(stream.sent).toHaveLength(1);
    expect(ledger.size).toBe(0);
  });

  it('after detach, what the stream took without acknowledging goes again on the next one, under the same id', () => {
    const { ledger } = setup();
    const first = new FakeStream();
    ledger.attach(first, { acks: true });
    const a = result();
    ledger.add(a);
    ledger.send();
    first.open = false;
    ledger.detach();
    const second = new FakeStream();
    ledger.attach(second, { acks: true });
    expect(second.sent).toEqual([a]);
    ledger.acknowledge(a.result_id, 'recorded', undefined);
    ledger.detach();
    const third = new FakeStream();
    ledger.attach(third, { acks: true });
    expect(third.sent).toEqual([]);
  });

  it('a result whose acknowledgement is overdue goes again on the same stream', () => {
    const { ledger } = setup();
    const stream = new FakeStream();
    ledger.attach(stream, { acks: true });
    const a = result();
    ledger.add(a);
    ledger.send();
    vi.advanceTimersByTime(TIMING.resultAckTimeoutMs - 1);
    expect(stream.sent).toEqual([a]);
    vi.advanceTimersByTime(1);
    expect(stream.sent).toEqual([a, a]);
    ledger.acknowledge(a.result_id, 'recorded', undefined);
    vi.advanceTimersByTime(TIMING.resultAckTimeoutMs * 3);
    expect(stream.sent).toEqual([a, a]);
  });

  it('a refused result is forgotten with a warning; an unknown id changes nothing', () => {
    const { ledger, warnings } = setup();
    ledger.attach(new FakeStream(), { acks: true });
    const a = result('m-refused');
    ledger.add(a);
    ledger.send();
    ledger.acknowledge('someone-else', 'recorded', undefined);
    expect(ledger.size).toBe(1);
    ledger.acknowledge(a.result_id, 'refused', 'status must be an HTTP status');
    expect(ledger.size).toBe(0);
    expect(warnings).toEqual(['the server refused the result of message m-refused: status must be an HTTP status']);
  });
});

describe('ResultLedger: by POST', () => {
  it('without a stream, results wait reportGraceMs for one, then are POSTed in order', async () => {
    const { ledger, posted } = setup();
    const [a, b] = [result(), result()];
    ledger.add(a);
    ledger.add(b);
    ledger.send();
    await vi.advanceTimersByTimeAsync(TIMING.reportGraceMs - 1);
    expect(posted).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(posted).toEqual([a, b]);
    expect(ledger.size).toBe(0);
  });

  it('a stream attached within the grace takes them instead', async () => {
    const { ledger, posted } = setup();
    ledger.add(result());
    ledger.send();
    await vi.advanceTimersByTimeAsync(TIMING.reportGraceMs / 2);
    const stream = new FakeStream();
    ledger.attach(stream, { acks: true });
    await vi.advanceTimersByTimeAsync(TIMING.reportGraceMs * 2);
    expect(stream.sent).toHaveLength(1);
    expect(posted).toEqual([]);
  });

  it('while polling, results go by POST at once: those kept from before as soon as polling starts', async () => {
    const kept = result('m-kept');
    const { ledger, posted } = setup({ pending: [kept] });
    expect(ledger.size).toBe(1);
    ledger.setPolling(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(posted).toEqual([kept]);
    const next = result();
    ledger.add(next);
    ledger.send();
    await vi.advanceTimersByTimeAsync(0);
    expect(posted).toEqual([kept, next]);
    ledger.setPolling(false);
    ledger.add(result());
    ledger.send();
    await vi.advanceTimersByTimeAsync(0);
    expect(posted).toHaveLength(2);
  });

  it('a POST that fails (server unreachable, 5xx, 429) is retried under the same id with a growing delay; a 4xx is given up', async () => {
    const { ledger, api, attempts, posted } = setup();
    api.failures.push(
      new HookrelayNetworkError('could not reach http://fake', 'http://fake'),
      new HookrelayApiError('SERVICE_UNAVAILABLE', 'database unavailable', 503, 'r1'),
      new HookrelayApiError('RATE_LIMITED', 'slow down', 429, 'r2'),
    );
    const a = result();
    ledger.add(a);
    ledger.setPolling(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(attempts).toEqual([a]);
    await vi.advanceTimersByTimeAsync(500); // 250 × 2
    expect(attempts).toEqual([a, a]);
    await vi.advanceTimersByTimeAsync(999);
    expect(attempts).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1); // 250 × 4
    expect(attempts).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(2000); // 250 × 8
    expect(posted).toEqual([a]);
    expect(new Set(attempts.map((f) => f.result_id))).toEqual(new Set([a.result_id]));

    api.failures.push(new HookrelayApiError('MESSAGE_NOT_FOUND', 'gone', 404, 'r3'));
    const b = result();
    ledger.add(b);
    ledger.send();
    await vi.advanceTimersByTimeAsync(0);
    expect(messageIds(attempts)).toEqual([...messageIds([a, a, a, a]), b.message_id]);
    expect(ledger.size).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(attempts).toHaveLength(5);
  });
});

describe('ResultLedger: the journal', () => {
  it('a save is handed what was added since the last one, how many wait and all of them; a failed save hands its additions to the next', () => {
    const { ledger } = setup();
    const [a, b, c] = [result(), result(), result()];
    ledger.add(a);
    ledger.add(b);
    const first = ledger.journal();
    expect(first.added).toEqual([a, b]);
    expect(first.count).toBe(2);
    expect(first.all()).toEqual([a, b]);
    expect(ledger.journaled).toBe(true);
    ledger.saveFailed(first);
    ledger.add(c);
    const second = ledger.journal();
    expect(second.added).toEqual([a, b, c]);
    expect(ledger.journal().added).toEqual([]);
  });

  it('once every result the last save listed has been settled for journalEmptyDelayMs, the journal is to be emptied, once', async () => {
    const { ledger, stale } = setup();
    ledger.attach(new FakeStream(), { acks: true });
    const [a, b] = [result(), result()];
    ledger.add(a);
    ledger.add(b);
    ledger.send();
    ledger.journal();
    ledger.acknowledge(a.result_id, 'recorded', undefined);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(stale()).toBe(0);
    ledger.acknowledge(b.result_id, 'recorded', undefined);
    await vi.advanceTimersByTimeAsync(999);
    expect(stale()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(stale()).toBe(1);

    // A result pending again when the moment comes: the journal waits for the next run of acknowledgements.
    const [c, d] = [result(), result()];
    ledger.add(c);
    ledger.send();
    ledger.journal();
    ledger.acknowledge(c.result_id, 'recorded', undefined);
    await vi.advanceTimersByTimeAsync(500);
    ledger.add(d);
    ledger.send();
    ledger.journal();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(stale()).toBe(1);
    ledger.acknowledge(d.result_id, 'recorded', undefined);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(stale()).toBe(2);

    // Nothing journaled: nothing to rewrite.
    const e = result();
    ledger.journal();
    ledger.add(e);
    ledger.send();
    ledger.acknowledge(e.result_id, 'recorded', undefined);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(stale()).toBe(2);
  });

  it('leaves the journal to the stop once it has begun', async () => {
    const { ledger, stale } = setup();
    ledger.attach(new FakeStream(), { acks: true });
    const a = result();
    ledger.add(a);
    ledger.send();
    ledger.journal();
    await ledger.flush();
    ledger.acknowledge(a.result_id, 'recorded', undefined);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(stale()).toBe(0);
  });

  it('keeps at most maxResults (and maxBytes): the oldest go first, with one warning until none waits', () => {
    const { ledger, warnings } = setup({ maxResults: 2 });
    const [a, b, c, d] = [result('m-a'), result('m-b'), result('m-c'), result('m-d')];
    for (const frame of [a, b, c, d]) ledger.add(frame);
    expect(ledger.size).toBe(2);
    expect(ledger.journal().all()).toEqual([c, d]);
    expect(warnings).toEqual([
      "more results wait for the server's acknowledgement than are kept (2, 4096 KiB): the oldest are dropped, beginning with the result of message m-a, whose status on the server stays as it is",
    ]);

    const bytes = setup({ maxBytes: 1000 });
    const big = { ...result('m-big'), response_body: 'x'.repeat(700) };
    bytes.ledger.add(big);
    expect(bytes.ledger.size).toBe(1);
    bytes.ledger.add(result('m-small'));
    expect(bytes.ledger.size).toBe(1);
    expect(bytes.ledger.journal().all().map((f) => f.message_id)).toEqual(['m-small']);
    expect(bytes.warnings).toHaveLength(1);
  });
});

describe('ResultLedger: the stop', () => {
  it('acknowledged() waits for the acknowledgements of the stream, at most reportFlushMs', async () => {
    const { ledger } = setup();
    const stream = new FakeStream();
    ledger.attach(stream, { acks: true });
    const [a, b] = [result(), result()];
    ledger.add(a);
    ledger.add(b);
    ledger.send();
    let done = false;
    void ledger.acknowledged(stream).then(() => (done = true));
    ledger.acknowledge(a.result_id, 'recorded', undefined);
    await vi.advanceTimersByTimeAsync(10);
    expect(done).toBe(false);
    ledger.acknowledge(b.result_id, 'recorded', undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);

    ledger.add(result());
    ledger.send();
    done = false;
    void ledger.acknowledged(stream).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(TIMING.reportFlushMs - 20);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(20);
    expect(done).toBe(true);
    // The stop's time is spent: another wait ends at once.
    done = false;
    void ledger.acknowledged(stream).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
  });

  it('at the halt, what no stream takes is POSTed at once; flush gives the POSTs reportFlushMs, then keeps the rest', async () => {
    const { ledger, api, attempts, halt } = setup();
    for (let i = 0; i < 20; i++) api.failures.push(new HookrelayNetworkError('could not reach http://fake', 'http://fake'));
    const a = result();
    ledger.add(a);
    halt.abort();
    ledger.send();
    await vi.advanceTimersByTimeAsync(0);
    expect(attempts).toEqual([a]);
    let flushed = false;
    void ledger.flush().then(() => (flushed = true));
    await vi.advanceTimersByTimeAsync(TIMING.reportFlushMs - 1);
    expect(flushed).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(flushed).toBe(true);
    expect(ledger.size).toBe(1);
    const tried = attempts.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(attempts).toHaveLength(tried);
    expect(ledger.journal().all()).toEqual([a]);
  });

  it('flush with everything acknowledged returns at once', async () => {
    const { ledger, halt } = setup();
    halt.abort();
    let flushed = false;
    void ledger.flush().then(() => (flushed = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(flushed).toBe(true);
  });
});
