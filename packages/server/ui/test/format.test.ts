import { describe, expect, it } from 'vitest';
import { formatTime, formatUtc, indentJson, isSuccess, messageTitle, requestLine } from '../src/format.js';

const message = { method: 'POST', path: '/github', query: '', event_type: 'push', provider: 'github', response_status: 200 } as const;

describe('formatTime and formatUtc', () => {
  it('read an instant in the given zone with its name, and in UTC', () => {
    const iso = '2026-12-03T09:16:56.120Z';
    expect(formatTime(iso, 'America/New_York')).toBe('2026-12-03 04:16:56.120 EST');
    expect(formatTime('2026-07-03T09:16:56.120Z', 'America/New_York')).toBe('2026-07-03 05:16:56.120 EDT');
    expect(formatTime(iso, 'Europe/Berlin')).toBe('2026-12-03 10:16:56.120 GMT+1');
    expect(formatTime(iso, 'UTC')).toBe('2026-12-03 09:16:56.120 UTC');
    expect(formatUtc(iso)).toBe('2026-12-03 09:16:56.120 UTC');
  });

  it('write midnight as 00, the day it is in that zone', () => {
    expect(formatTime('2026-12-03T05:00:00.000Z', 'America/New_York')).toBe('2026-12-03 00:00:00.000 EST');
    expect(formatTime('2026-12-03T04:59:59.999Z', 'America/New_York')).toBe('2026-12-02 23:59:59.999 EST');
  });

  it('show a dash for no time, and a text that is no time as it is', () => {
    expect(formatTime(null)).toBe('—');
    expect(formatTime(undefined)).toBe('—');
    expect(formatTime('soon')).toBe('soon');
    expect(formatUtc('soon')).toBe('soon');
  });
});

describe('messageTitle', () => {
  it('is the event type, the provider and the status', () => {
    expect(messageTitle(message)).toBe('push · GitHub · 200');
    expect(messageTitle({ ...message, provider: 'standard_webhooks', event_type: 'user.created', response_status: 422 })).toBe('user.created · Standard Webhooks · 422');
  });

  it('leaves out what is not known; the request line stands for an unknown event type and provider', () => {
    expect(messageTitle({ ...message, response_status: null })).toBe('push · GitHub');
    expect(messageTitle({ ...message, provider: null })).toBe('push · 200');
    expect(messageTitle({ ...message, event_type: null })).toBe('GitHub · 200');
    expect(messageTitle({ ...message, event_type: null, provider: null, path: '/orders', query: 'a=1' })).toBe('POST /orders?a=1 · 200');
    expect(messageTitle({ ...message, event_type: null, provider: null, response_status: null })).toBe('POST /github');
  });

  it('the request line writes an empty sub-path as /', () => {
    expect(requestLine({ method: 'PUT', path: '', query: '' })).toBe('PUT /');
    expect(requestLine({ method: 'POST', path: '/a', query: 'b=c' })).toBe('POST /a?b=c');
  });
});

describe('indentJson', () => {
  it('lays JSON out two spaces a level, empty objects and arrays on one line', () => {
    expect(indentJson('{"error":{"code":"invalid","fields":["a",1,true,null]},"empty":{},"none":[]}')).toBe(
      ['{', '  "error": {', '    "code": "invalid",', '    "fields": [', '      "a",', '      1,', '      true,', '      null', '    ]', '  },', '  "empty": {},', '  "none": []', '}'].join('\n'),
    );
    expect(indentJson(' [ 1 ,\n\t2 ] ')).toBe('[\n  1,\n  2\n]');
    expect(indentJson('42')).toBe('42');
  });

  it('keeps the tokens as sent: long numbers, escapes, structural characters and spaces inside strings, repeated keys', () => {
    expect(indentJson('{"id":12345678901234567890123,"n":1.50e+3}')).toBe('{\n  "id": 12345678901234567890123,\n  "n": 1.50e+3\n}');
    expect(indentJson('{"say":"a \\"quoted\\" {x: [1, 2]}, \\\\"}')).toBe('{\n  "say": "a \\"quoted\\" {x: [1, 2]}, \\\\"\n}');
    expect(indentJson('{"k":1,"k":2}')).toBe('{\n  "k": 1,\n  "k": 2\n}');
  });

  it('is null for text that is not JSON (a body cut short, HTML, nothing)', () => {
    expect(indentJson('{"error":"cut')).toBeNull();
    expect(indentJson('<h1>Bad Request</h1>')).toBeNull();
    expect(indentJson('')).toBeNull();
  });
});

describe('isSuccess', () => {
  it('is true for 2xx only', () => {
    expect([199, 200, 204, 299, 300, 404, 500].map(isSuccess)).toEqual([false, true, true, true, false, false, false]);
    expect(isSuccess(null)).toBe(false);
  });
});
