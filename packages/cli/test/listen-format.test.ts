import { describe, expect, it } from 'vitest';
import {
  ANSWER_PREVIEW_BYTES,
  deliveryJson,
  formatAnswerPreview,
  formatClock,
  formatDeliveryLine,
  formatLateness,
  formatLateSignatureLine,
  formatResponseLines,
} from '../src/format/listen.js';
import { plainStyle } from '../src/format/style.js';
import type { DeliveryRecord } from '../src/listen/ports.js';

const record: DeliveryRecord = {
  message_id: '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
  cursor: '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
  method: 'POST',
  path: '/github/push',
  query: 'x=1',
  status: 200,
  latency_ms: 12,
  attempt: 1,
  error: null,
  replay: false,
  target: 'http://localhost:3000',
  provider: null,
  event_type: null,
  resigned: false,
};

describe('listen output', () => {
  const at = new Date(2026, 4, 1, 9, 5, 7);

  it('one line per delivery: time, method, path and query, status, latency, id', () => {
    expect(formatDeliveryLine(record, plainStyle, at)).toBe('09:05:07  POST /github/push?x=1  200  12 ms  0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70');
  });

  it('notes replays, retries and errors', () => {
    const line = formatDeliveryLine({ ...record, status: null, attempt: 3, replay: true, error: 'connect ECONNREFUSED' }, plainStyle, at);
    expect(line).toBe('09:05:07  POST /github/push?x=1  ERR  12 ms  0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 (replay, attempt 3)  connect ECONNREFUSED');
  });

  it('notes an edited replay’s copy, and whether the server signed it', () => {
    expect(formatDeliveryLine({ ...record, edited: true, signed: false }, plainStyle, at)).toBe('09:05:07  POST /github/push?x=1  200  12 ms  0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 (edited, unsigned)');
    expect(formatDeliveryLine({ ...record, edited: true, signed: true, attempt: 2 }, plainStyle, at)).toBe('09:05:07  POST /github/push?x=1  200  12 ms  0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 (edited, attempt 2)');
  });

  it('--json has edited and signed on an edited copy’s line only', () => {
    expect(deliveryJson({ ...record, edited: true, signed: false })).toMatchObject({ edited: true, signed: false });
    expect(Object.keys(deliveryJson({ ...record, edited: true, signed: true }))).toEqual(expect.arrayContaining(['edited', 'signed']));
  });

  it('--json has exactly the documented fields', () => {
    expect(Object.keys(deliveryJson(record))).toEqual([
      'message_id',
      'cursor',
      'method',
      'path',
      'status',
      'latency_ms',
      'attempt',
      'error',
      'target',
      'provider',
      'event_type',
      'resigned',
      'response_headers',
      'response_body',
      'response_body_truncated',
    ]);
  });

  it("--json carries the app's answer, base64", () => {
    const answered = { ...record, response: { headers: [['content-type', 'text/plain']] as [string, string][], body: Buffer.from('ok\n'), truncated: true } };
    expect(deliveryJson(answered)).toMatchObject({
      response_headers: [['content-type', 'text/plain']],
      response_body: Buffer.from('ok\n').toString('base64'),
      response_body_truncated: true,
    });
    expect(deliveryJson(record)).toMatchObject({ response_headers: [], response_body: null, response_body_truncated: false });
  });

  it('--verbose shows the headers and a text body; a binary body by its size', () => {
    const text = { ...record, response: { headers: [['x-a', '1']] as [string, string][], body: Buffer.from('line 1\nline 2'), truncated: false } };
    expect(formatResponseLines(text, plainStyle)).toEqual(['    x-a: 1', '    line 1', '    line 2']);
    const binary = { ...record, response: { headers: [], body: Buffer.from([0, 1, 0xff]), truncated: true } };
    expect(formatResponseLines(binary, plainStyle)).toEqual([
      '    <3 bytes of binary body>',
      '    … (the app sent more than the 3 bytes kept: --capture-response-bytes)',
    ]);
    expect(formatResponseLines(record, plainStyle)).toEqual([]);
  });

  it('shows the route when there are several', () => {
    expect(formatDeliveryLine(record, plainStyle, at, true)).toContain('→ http://localhost:3000');
    expect(formatDeliveryLine(record, plainStyle, at)).not.toContain('→');
  });

  it('names the provider and the event type after the path, either alone when only it is known', () => {
    expect(formatDeliveryLine({ ...record, provider: 'github', event_type: 'push' }, plainStyle, at)).toBe(
      '09:05:07  POST /github/push?x=1  github push  200  12 ms  0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    );
    expect(formatDeliveryLine({ ...record, event_type: 'order.created' }, plainStyle, at)).toContain('?x=1  order.created  200');
    expect(formatDeliveryLine({ ...record, provider: 'shopify' }, plainStyle, at)).toContain('?x=1  shopify  200');
    // A sender's event type reaches the terminal escaped, like every text of the message.
    expect(formatDeliveryLine({ ...record, event_type: 'push\u001b]0;owned\u0007' }, plainStyle, at)).toContain('push\\x1b]0;owned\\x07');
    expect(deliveryJson({ ...record, provider: 'stripe', event_type: 'invoice.paid', resigned: true })).toMatchObject({ provider: 'stripe', event_type: 'invoice.paid', resigned: true });
  });

  it('says a late message went re-signed, and how late', () => {
    const signedAt = new Date(at.getTime() - 12 * 60_000 - 20_000).toISOString();
    const line = formatDeliveryLine({ ...record, provider: 'stripe', event_type: 'invoice.paid', resigned: true, signed_at: signedAt }, plainStyle, at);
    expect(line).toBe('09:05:07  POST /github/push?x=1  stripe invoice.paid  200  12 ms  0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 (re-signed, 12 min late)');
    expect(formatDeliveryLine({ ...record, resigned: true, signed_at: signedAt, replay: true }, plainStyle, at)).toContain('(replay, re-signed, 12 min late)');
    expect(formatLateSignatureLine({ ...record, resigned: true, signed_at: signedAt }, plainStyle, at, 'EP')).toBeNull();
  });

  it('warns under a late message that went with the sender’s signature, naming the fix for each reason', () => {
    const late = { ...record, provider: 'stripe', signed_at: new Date(at.getTime() - 3 * 3600_000 - 5 * 60_000).toISOString() };
    expect(formatDeliveryLine({ ...late, resign_skipped: 'no_secret' }, plainStyle, at)).toContain('(3 h 5 min late, not re-signed)');
    expect(formatLateSignatureLine({ ...late, resign_skipped: 'no_secret' }, plainStyle, at, 'EP')).toBe(
      "    signed 3 h 5 min before this delivery: the app's stripe signature check will likely refuse it; to have hookrelay re-sign late deliveries, give the endpoint the sender's signing secret: hookrelay inbound update EP --hmac-scheme stripe --hmac-secret …",
    );
    expect(formatLateSignatureLine({ ...late, resign_skipped: 'disabled' }, plainStyle, at, 'EP')).toMatch(/re-signing is off for this endpoint: hookrelay inbound update EP --resign-late$/u);
    expect(formatLateSignatureLine({ ...late, resign_skipped: 'unverified' }, plainStyle, at, 'EP')).toMatch(/HMAC check was off then: hookrelay inbound update EP --verify-hmac$/u);
    // No provider named: no scheme to suggest.
    expect(formatLateSignatureLine({ ...late, provider: null, resign_skipped: 'no_secret' }, plainStyle, at, 'EP')).toMatch(/the app's signature check .* update EP --hmac-secret …$/u);
    // Nothing reached the app (no route took it), or nothing is late: no warning.
    expect(formatLateSignatureLine({ ...late, resign_skipped: 'no_secret', target: null }, plainStyle, at, 'EP')).toBeNull();
    expect(formatLateSignatureLine(record, plainStyle, at, 'EP')).toBeNull();
  });

  it('shows how late in minutes, hours or days', () => {
    expect([formatLateness(45), formatLateness(241), formatLateness(3600), formatLateness(3 * 3600 + 59), formatLateness(3 * 86_400)]).toEqual(['45 s', '4 min', '1 h', '3 h', '3 days']);
  });

  it('shows the first bytes of a non-2xx answer on the next line, escaped, on one line', () => {
    const answer = (status: number, body: Buffer, truncated = false) => ({ ...record, status, response: { headers: [] as [string, string][], body, truncated } });
    expect(formatAnswerPreview(answer(400, Buffer.from('{"error":"No signatures found"}\n')), plainStyle)).toBe('    ↳ {"error":"No signatures found"}\\n');
    expect(formatAnswerPreview(answer(500, Buffer.from('oops \u001b[2J\r\nnext')), plainStyle)).toBe('    ↳ oops \\x1b[2J\\r\\nnext');
    const long = Buffer.from('é'.repeat(150)); // 300 bytes: the cut at 200 falls between two characters, and is marked
    expect(formatAnswerPreview(answer(422, long), plainStyle)).toBe(`    ↳ ${'é'.repeat(ANSWER_PREVIEW_BYTES / 2)}…`);
    const odd = Buffer.concat([Buffer.from('x'), long]); // the cut falls inside a character: it is left out
    expect(formatAnswerPreview(answer(422, odd), plainStyle)).toBe(`    ↳ x${'é'.repeat((ANSWER_PREVIEW_BYTES - 2) / 2)}…`);
    expect(formatAnswerPreview(answer(503, Buffer.from('short'), true), plainStyle)).toBe('    ↳ short…');
    expect(formatAnswerPreview(answer(200, Buffer.from('fine')), plainStyle)).toBeNull();
    expect(formatAnswerPreview(answer(404, Buffer.alloc(0)), plainStyle)).toBeNull();
    expect(formatAnswerPreview({ ...record, status: 500 }, plainStyle)).toBeNull();
  });

  it('formats the clock with two digits', () => {
    expect(formatClock(new Date(2026, 0, 1, 1, 2, 3))).toBe('01:02:03');
  });
});
