import { describe, expect, it } from 'vitest';
import { deliveryJson, formatClock, formatDeliveryLine } from '../src/format/listen.js';
import { plainStyle } from '../src/format/style.js';
import type { DeliveryRecord } from '../src/listen/listener.js';

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
    expect(Object.keys(deliveryJson(record))).toEqual(['message_id', 'cursor', 'method', 'path', 'status', 'latency_ms', 'attempt', 'error']);
  });

  it('formats the clock with two digits', () => {
    expect(formatClock(new Date(2026, 0, 1, 1, 2, 3))).toBe('01:02:03');
  });
});
