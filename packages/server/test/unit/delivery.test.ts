import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { generateSigningSecret } from '@hookrelay/shared';
import { DEFAULT_RETRY_SCHEDULE_SECONDS, parseConfig } from '../../src/config.js';
import { reserveSlots } from '../../src/delivery/rate-limit.js';
import { buildForwardRequest, buildOutboundRequest, forwardUrl } from '../../src/delivery/request.js';
import { attemptError, outcomeOf, type AttemptResult } from '../../src/delivery/results.js';
import { MAX_RETRY_AFTER_MS, nextRetryDelayMs, parseRetryAfterMs } from '../../src/delivery/schedule.js';
import type { SendResult } from '../../src/delivery/sender.js';
import { ClockOffset } from '../../src/delivery/claim.js';

describe('HOOKRELAY_ENDPOINT_PAUSE_AFTER_SECONDS', () => {
  it('is five days unless set, 0 for never, and refuses what is not a whole number of seconds', () => {
    expect(parseConfig({}).endpointPauseAfterSeconds).toBe(432_000);
    expect(parseConfig({ HOOKRELAY_ENDPOINT_PAUSE_AFTER_SECONDS: '' }).endpointPauseAfterSeconds).toBe(432_000);
    expect(parseConfig({ HOOKRELAY_ENDPOINT_PAUSE_AFTER_SECONDS: '0' }).endpointPauseAfterSeconds).toBe(0);
    expect(parseConfig({ HOOKRELAY_ENDPOINT_PAUSE_AFTER_SECONDS: '60' }).endpointPauseAfterSeconds).toBe(60);
    for (const bad of ['-1', '1.5', 'five days', String(2 ** 31)]) {
      expect(() => parseConfig({ HOOKRELAY_ENDPOINT_PAUSE_AFTER_SECONDS: bad }), bad).toThrow(/HOOKRELAY_ENDPOINT_PAUSE_AFTER_SECONDS/);
    }
  });
});

describe('retry schedule', () => {
  it('the default is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: 8 attempts, then none', () => {
    const expected = [5, 300, 1800, 7200, 18000, 36000, 36000];
    expect([...DEFAULT_RETRY_SCHEDULE_SECONDS]).toEqual(expected);
    expected.forEach((seconds, i) => {
      expect(nextRetryDelayMs(DEFAULT_RETRY_SCHEDULE_SECONDS, i + 1, null, () => 0.5)).toBe(seconds * 1000);
    });
    expect(nextRetryDelayMs(DEFAULT_RETRY_SCHEDULE_SECONDS, 8)).toBeNull();
    expect(nextRetryDelayMs([1, 1, 1], 4)).toBeNull();
    expect(nextRetryDelayMs([], 1)).toBeNull();
  });

  it('jitters by ±20 %', () => {
    expect(nextRetryDelayMs([300], 1, null, () => 0)).toBe(240_000);
    expect(nextRetryDelayMs([300], 1, null, () => 1)).toBe(360_000);
    for (let i = 0; i < 200; i++) {
      const delay = nextRetryDelayMs([5], 1)!;
      expect(delay).toBeGreaterThanOrEqual(4000);
      expect(delay).toBeLessThanOrEqual(6000);
    }
  });

  it('waits at least a Retry-After, capped at 24 h, never less than the schedule', () => {
    expect(nextRetryDelayMs([5], 1, 60_000, () => 0.5)).toBe(60_000);
    expect(nextRetryDelayMs([5], 1, 1000, () => 0.5)).toBe(5000);
    expect(nextRetryDelayMs([5], 1, 10 * MAX_RETRY_AFTER_MS, () => 0.5)).toBe(MAX_RETRY_AFTER_MS);
    expect(nextRetryDelayMs([5], 2, 60_000)).toBeNull();
  });

  it('reads Retry-After as seconds or an HTTP-date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfterMs('120', now)).toBe(120_000);
    expect(parseRetryAfterMs(' 7 ', now)).toBe(7000);
    expect(parseRetryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfterMs('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfterMs(['3', '9'], now)).toBe(3000);
    expect(parseRetryAfterMs('-1', now)).toBeNull();
    expect(parseRetryAfterMs('soon', now)).toBeNull();
    expect(parseRetryAfterMs(undefined, now)).toBeNull();
    expect(parseRetryAfterMs('99999999999', now)).toBe(MAX_RETRY_AFTER_MS);
  });
});

describe('rate-limit slots (GCRA)', () => {
  const now = 1_000_000;

  it('rps 5, burst 1: one at once, then one every 200 ms', () => {
    const r = reserveSlots({ rps: 5, burst: 1, tatMs: null, nowMs: now }, 10, 2000);
    expect(r.offsets).toEqual([0, 200, 400, 600, 800, 1000, 1200, 1400, 1600, 1800]);
    expect(r.tatMs).toBe(now + 2000);
    expect(r.laterOffsets).toEqual([]);
  });

  it('burst 0 means a capacity of rate_limit_rps', () => {
    expect(reserveSlots({ rps: 4, burst: 0, tatMs: null, nowMs: now }, 6, 2000).offsets).toEqual([0, 0, 0, 0, 250, 500]);
  });

  it('continues from the stored TAT; an idle bucket refills', () => {
    const busy = reserveSlots({ rps: 2, burst: 3, tatMs: now + 1500, nowMs: now }, 2, 2000);
    expect(busy.offsets).toEqual([500, 1000]);
    const idle = reserveSlots({ rps: 2, burst: 3, tatMs: now - 60_000, nowMs: now }, 3, 0);
    expect(idle.offsets).toEqual([0, 0, 0]);
  });

  it('keeps the slots within the horizon and gives the rest the times their slots would come', () => {
    const r = reserveSlots({ rps: 1, burst: 1, tatMs: null, nowMs: now }, 5, 1000);
    expect(r.offsets).toEqual([0, 1000]);
    expect(r.laterOffsets).toEqual([2000, 3000, 4000]);
    expect(r.tatMs).toBe(now + 2000);
  });
});

describe('ClockOffset', () => {
  it('takes the smallest local − database difference seen (the others include delays)', () => {
    const clock = new ClockOffset();
    expect(clock.observe(1000, 1105)(2000)).toBe(2105);
    expect(clock.observe(2000, 2003)(3000)).toBe(3003);
    expect(clock.observe(3000, 3090)(4000)).toBe(4003);
  });
});

describe('outbound requests', () => {
  const body = Buffer.from('{"a":1}');

  it('carries the Standard Webhooks headers that verify with standardwebhooks, for every active key', () => {
    const current = generateSigningSecret();
    const previous = generateSigningSecret();
    const timestamp = Math.floor(Date.now() / 1000);
    const request = buildOutboundRequest({
      messageId: '01900000-0000-7000-8000-000000000001',
      url: 'https://example.com/hook',
      contentType: 'application/json',
      eventType: 'a.b',
      customHeaders: { 'X-Tenant': 'acme' },
      secrets: [current, previous],
      body,
      timestamp,
    });
    expect(request.method).toBe('POST');
    expect(request.headers['webhook-id']).toBe('01900000-0000-7000-8000-000000000001');
    expect(request.headers['webhook-timestamp']).toBe(String(timestamp));
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(request.headers['x-tenant']).toBe('acme');
    expect(request.headers['hookrelay-event-type']).toBe('a.b');
    const headers = request.headers as Record<string, string>;
    for (const secret of [current, previous]) expect(new Webhook(secret).verify(body, headers)).toEqual({ a: 1 });
    expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow();
  });

  it('drops forbidden custom headers and never lets one replace the content type or signature', () => {
    const request = buildOutboundRequest({
      messageId: '01900000-0000-7000-8000-000000000001',
      url: 'https://example.com/hook',
      contentType: 'text/plain',
      eventType: null,
      customHeaders: { Host: 'x', 'Content-Length': '1', Connection: 'close', 'Proxy-Authorization': 'x', 'webhook-signature': 'v1,forged', TE: 'x', 'Content-Type': 'application/evil', 'Hookrelay-Event-Type': 'forged', 'User-Agent': 'custom' },
      secrets: [generateSigningSecret()],
      body,
      timestamp: 1,
    });
    const names = Object.keys(request.headers);
    for (const forbidden of ['host', 'content-length', 'connection', 'proxy-authorization', 'te']) expect(names).not.toContain(forbidden);
    expect(request.headers['content-type']).toBe('text/plain');
    expect(request.headers['webhook-signature']).not.toBe('v1,forged');
    expect(request.headers['user-agent']).toBe('custom');
    expect(request.headers['hookrelay-event-type']).toBeUndefined();
  });
});

describe('forward requests', () => {
  it('joins the sub-path and query onto the forwarding URL', () => {
    expect(forwardUrl('https://app.example/hooks', '/', '')).toBe('https://app.example/hooks');
    expect(forwardUrl('https://app.example/hooks/', '/github/push', 'x=1')).toBe('https://app.example/hooks/github/push?x=1');
    expect(forwardUrl('https://app.example/hooks?k=v', '/a', 'x=1')).toBe('https://app.example/hooks/a?k=v&x=1');
    expect(forwardUrl('https://app.example', '/a', '')).toBe('https://app.example/a');
  });

  it('forwards the original method and headers minus hop-by-hop ones and those named in Connection; signing replaces the sender\'s webhook-* headers', async () => {
    const raw: [string, string][] = [
      ['Host', 'relay'], ['Content-Type', 'application/json'], ['Content-Length', '7'], ['Connection', 'keep-alive, X-Hop'],
      ['X-Dup', 'a'], ['X-Dup', 'b'], ['webhook-id', 'theirs'], ['Proxy-Connection', 'x'], ['Transfer-Encoding', 'chunked'],
      ['x-hop', 'named in Connection'], ['Connection', ' x-second-hop '], ['X-Second-Hop', 'also named'],
    ];
    const input = { messageId: '01900000-0000-7000-8000-000000000002', url: 'https://app.example/in', method: 'put', path: '/', query: '', rawHeaders: raw, body: Buffer.from('{"a":1}'), timestamp: 1 };
    const unsigned = await buildForwardRequest({ ...input, secrets: null });
    expect(unsigned.method).toBe('PUT');
    expect(unsigned.headers).toEqual({ 'content-type': 'application/json', 'x-dup': ['a', 'b'], 'webhook-id': 'theirs' });
    const signed = await buildForwardRequest({ ...input, secrets: [generateSigningSecret()] });
    expect(signed.headers['webhook-id']).toBe('01900000-0000-7000-8000-000000000002');
    expect(String(signed.headers['webhook-signature'])).toMatch(/^v1,/);
  });

  it('forwards headers named __proto__ or constructor as ordinary headers, prototypes untouched', async () => {
    const raw: [string, string][] = [['__proto__', 'p'], ['constructor', 'c1'], ['Constructor', 'c2'], ['toString', 't']];
    const input = { messageId: '01900000-0000-7000-8000-000000000003', url: 'https://app.example/in', method: 'post', path: '/', query: '', rawHeaders: raw, body: Buffer.alloc(0), timestamp: 1 };
    const { headers } = await buildForwardRequest({ ...input, secrets: null });
    expect(Object.entries(headers)).toEqual([['__proto__', 'p'], ['constructor', ['c1', 'c2']], ['tostring', 't']]);
    expect(Object.getPrototypeOf(headers)).not.toBe(Array.prototype);
  });
});

describe('attempt outcomes', () => {
  const result = (status: number | null, headers: Record<string, string> = {}, error: string | null = null): SendResult => ({
    status, headers, body: '', latencyMs: 5, error, aborted: false, bodyError: null,
  });
  const attempt = (r: SendResult, attemptInDelivery = 1): AttemptResult => ({
    kind: 'outbound', messageId: 'm', leaseId: 'l', attemptNumber: attemptInDelivery, attemptInDelivery,
    startedAt: new Date(0), finishedAt: new Date(1000), processingMs: 0, result: r,
  });
  const schedule = [1, 1, 1];

  it('any 2xx succeeds; anything else retries until the schedule ends', () => {
    expect(outcomeOf(attempt(result(204)), false, schedule)).toMatchObject({ status: 'succeeded', error: null, nextAttemptAt: null });
    const retry = outcomeOf(attempt(result(500)), false, schedule, () => 0.5);
    expect(retry).toMatchObject({ status: 'pending_retry', error: 'HTTP 500', nextAttemptAt: new Date(2000) });
    expect(outcomeOf(attempt(result(404), 4), false, schedule)).toMatchObject({ status: 'failed_permanent', nextAttemptAt: null });
    expect(outcomeOf(attempt(result(null, {}, 'connection refused (ECONNREFUSED)')), false, schedule).error).toBe('connection refused (ECONNREFUSED)');
  });

  it('honours Retry-After on 429 and 503 only', () => {
    expect(outcomeOf(attempt(result(429, { 'retry-after': '30' })), false, schedule, () => 0.5).nextAttemptAt).toEqual(new Date(31_000));
    expect(outcomeOf(attempt(result(503, { 'retry-after': '30' })), false, schedule, () => 0.5).nextAttemptAt).toEqual(new Date(31_000));
    expect(outcomeOf(attempt(result(500, { 'retry-after': '30' })), false, schedule, () => 0.5).nextAttemptAt).toEqual(new Date(2000));
  });

  it('a 3xx is a failure that names the redirect; a retry asked for in flight queues a new delivery', () => {
    expect(attemptError(result(301, { location: 'https://10.0.0.1/' }))).toBe('HTTP 301: redirects are not followed (Location: https://10.0.0.1/)');
    expect(outcomeOf(attempt(result(500)), true, schedule)).toMatchObject({ status: 'queued', nextAttemptAt: null, error: 'HTTP 500' });
  });
});
