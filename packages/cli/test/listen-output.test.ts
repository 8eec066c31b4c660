import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { plainStyle } from '../src/format/style.js';
import { ListenOutput, SPINNER_DELAY_MS, type ListenOutputOptions } from '../src/listen/output.js';

/** A stand-in for ora: records what it was asked to show. */
function fakeOra() {
  const calls: string[] = [];
  const spinner = {
    isSpinning: false,
    text: '',
    start(text: string) {
      calls.push(`start ${text}`);
      this.isSpinning = true;
      this.text = text;
      return this;
    },
    stop() {
      calls.push(`stop ${this.text}`);
      this.isSpinning = false;
      return this;
    },
  };
  const load = vi.fn(async () => () => spinner);
  return { calls, spinner, load };
}

function output(load?: () => Promise<unknown>, extra: Partial<ListenOutputOptions> = {}) {
  // The fake stands in for ora's factory: only start, stop, text and isSpinning are used.
  const loadSpinner = load as ListenOutputOptions['loadSpinner'];
  const stderr = new PassThrough();
  let text = '';
  stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const out = new ListenOutput({
    json: false,
    style: plainStyle,
    loadSpinner,
    stdout: new PassThrough(),
    stderr,
    apiUrl: 'http://127.0.0.1:8787',
    target: 'http://localhost:3000',
    now: () => new Date('2026-11-25T10:00:00Z'),
    ...extra,
  });
  return { out, stderr: () => text };
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('listen output: the spinner on a terminal', () => {
  it('a connection made within the delay shows no spinner and does not load ora', async () => {
    const ora = fakeOra();
    const { out, stderr } = output(ora.load);
    out.connecting({ transport: 'websocket' });
    await vi.advanceTimersByTimeAsync(SPINNER_DELAY_MS - 50);
    out.connected({ transport: 'websocket' });
    await vi.advanceTimersByTimeAsync(SPINNER_DELAY_MS * 4);
    expect(ora.load).not.toHaveBeenCalled();
    expect(ora.calls).toEqual([]);
    expect(stderr()).toContain('connected (websocket), forwarding to http://localhost:3000');
    expect(stderr()).not.toContain('connecting to');
  });

  it('a longer wait loads ora and spins with the latest state until connected', async () => {
    const ora = fakeOra();
    const { out, stderr } = output(ora.load);
    out.connecting({ transport: 'websocket' });
    out.reconnecting({ delayMs: 1000, reason: 'could not reach http://127.0.0.1:8787' });
    await vi.advanceTimersByTimeAsync(SPINNER_DELAY_MS);
    expect(ora.load).toHaveBeenCalledTimes(1);
    expect(ora.calls).toEqual(['start reconnecting in 1s (could not reach http://127.0.0.1:8787)…']);
    out.reconnecting({ delayMs: 2000, reason: 'could not reach http://127.0.0.1:8787' });
    expect(ora.spinner.text).toBe('reconnecting in 2s (could not reach http://127.0.0.1:8787)…');
    out.connected({ transport: 'websocket' });
    expect(ora.calls.at(-1)).toBe('stop reconnecting in 2s (could not reach http://127.0.0.1:8787)…');
    expect(stderr()).toContain('connected (websocket)');
  });

  it('connected while ora loads: the spinner never starts', async () => {
    const ora = fakeOra();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const load = vi.fn(async () => {
      await gate;
      return ora.load();
    });
    const { out } = output(load);
    out.connecting({ transport: 'websocket' });
    await vi.advanceTimersByTimeAsync(SPINNER_DELAY_MS);
    expect(load).toHaveBeenCalledTimes(1);
    out.connected({ transport: 'websocket' });
    release();
    await vi.advanceTimersByTimeAsync(10);
    expect(ora.calls).toEqual([]);
  });

  it('without a terminal: a line for each state, no spinner', async () => {
    const { out, stderr } = output(undefined);
    out.connecting({ transport: 'websocket' });
    out.connected({ transport: 'websocket' });
    expect(stderr()).toContain('connecting to http://127.0.0.1:8787 (websocket)…');
    expect(stderr()).toContain('connected (websocket)');
  });
});

describe('listen output: a held message', () => {
  it('names the app when it is the app that does not answer, and the server when a body cannot be downloaded', () => {
    const { out, stderr } = output();
    const base = { attempt: 1, heldMs: 0, nextRetryMs: 250, target: 'http://localhost:3000' };
    out.holding({ ...base, messageId: 'm1', error: 'connect ECONNREFUSED 127.0.0.1:3000', cause: 'app' });
    out.holding({ ...base, messageId: 'm2', error: 'payload_sha256 mismatch (expected a, got b): not forwarded', cause: 'body' });
    out.holding({ ...base, messageId: 'm2', error: 'the same', cause: 'body', attempt: 9, heldMs: 31_000 });
    const lines = stderr().trim().split('\n');
    expect(lines[0]).toContain('the local app at http://localhost:3000 is not answering (connect ECONNREFUSED 127.0.0.1:3000): holding m1 and retrying, in order');
    expect(lines[1]).toContain('cannot get the body of m2 from the server (payload_sha256 mismatch (expected a, got b): not forwarded): holding it and retrying, in order');
    expect(lines[2]).toContain('still holding m2: its body has not come from the server for 31s (9 attempts)');
  });
});

describe('listen output: a delivery', () => {
  const delivery = {
    message_id: '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    cursor: null,
    method: 'POST',
    path: '/',
    query: '',
    status: 400,
    latency_ms: 3,
    attempt: 1,
    error: null,
    replay: false,
    target: 'http://localhost:3000',
    provider: 'stripe',
    event_type: 'invoice.paid',
    resigned: false,
    signed_at: '2026-11-25T09:48:00.000Z',
    resign_skipped: 'no_secret',
    response: { headers: [] as [string, string][], body: Buffer.from('No signatures found matching the expected signature'), truncated: false },
  };

  it("puts the app's refusal and the late signature's warning under its line, naming the endpoint", () => {
    const { out, stderr } = output(undefined, { endpointId: 'EP' });
    out.delivery(delivery);
    expect(stderr().split('\n')).toEqual([
      '10:00:00  POST /  stripe invoice.paid  400  3 ms  0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 (12 min late, not re-signed)',
      '    ↳ No signatures found matching the expected signature',
      "    signed 12 min before this delivery: the app's stripe signature check will likely refuse it; to have hookrelay re-sign late deliveries, give the endpoint the sender's signing secret: hookrelay inbound update EP --hmac-scheme stripe --hmac-secret …",
      '',
    ]);
  });

  it('with --verbose, the whole answer instead of its first bytes', () => {
    const { out, stderr } = output(undefined, { verbose: true });
    out.delivery({ ...delivery, resign_skipped: undefined, signed_at: undefined });
    expect(stderr().split('\n')).toEqual(['10:00:00  POST /  stripe invoice.paid  400  3 ms  0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70', '    No signatures found matching the expected signature', '']);
  });
});

describe('listen output: one of several endpoints', () => {
  it('names its endpoint in front of state lines and warnings, not the line that stops them all', () => {
    const { out, stderr } = output(undefined, { label: 'stripe' });
    out.connected({ transport: 'websocket' });
    out.warn('disconnected (websocket): gone');
    out.stopping();
    expect(stderr()).toBe(
      [
        '10:00:00  stripe: connected (websocket), forwarding to http://localhost:3000',
        '10:00:00  stripe: warning: disconnected (websocket): gone',
        '10:00:00  stopping after the delivery in flight… (press Ctrl-C again to quit at once)',
        '',
      ].join('\n'),
    );
    const json = new PassThrough();
    let text = '';
    json.on('data', (chunk: Buffer) => (text += chunk.toString()));
    new ListenOutput({ json: true, style: plainStyle, stdout: new PassThrough(), stderr: json, apiUrl: 'http://x', target: 't', label: 'github' }).warn('a problem');
    expect(text).toBe('warning: github: a problem\n');
  });
});

describe('listen output: the gap of a lost connection', () => {
  it('a reconnection prints no connected line; the gap prints one line, or one NDJSON object under --json', () => {
    const { out, stderr } = output();
    out.connected({ transport: 'websocket' });
    out.connected({ transport: 'websocket', reconnect: true });
    out.reconnected({ downMs: 92_000, arrived: 41 });
    expect(stderr().split('\n').filter((line) => line !== '')).toEqual([
      '10:00:00  connected (websocket), forwarding to http://localhost:3000',
      '10:00:00  reconnected after 1m32s; 41 webhooks arrived meanwhile',
    ]);

    const stdout = new PassThrough();
    let json = '';
    stdout.on('data', (chunk: Buffer) => (json += chunk.toString()));
    const scripted = output(undefined, { json: true, stdout });
    scripted.out.connected({ transport: 'websocket', reconnect: true });
    scripted.out.reconnected({ downMs: 21_000, arrived: 0 });
    expect(json).toBe('{"type":"reconnected","down_ms":21000,"arrived":0}\n');
    expect(scripted.stderr()).toBe('');
  });
});
