import { describe, expect, it } from 'vitest';
import { deliveryJson, formatClock, formatDeliveryLine, formatResponseLines } from '../src/format/listen.js';
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

  it('formats the clock with two digits', () => {
    expect(formatClock(new Date(2026, 0, 1, 1, 2, 3))).toBe('01:02:03');
  });
});
