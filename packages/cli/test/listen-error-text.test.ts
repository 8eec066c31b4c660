import { HookrelayApiError, HookrelayNetworkError } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { errorCode, errorText } from '../src/listen/error-text.js';

describe('errorText', () => {
  it("is the error's message", () => {
    expect(errorText(new Error('connect ECONNREFUSED 127.0.0.1:3000'))).toBe('connect ECONNREFUSED 127.0.0.1:3000');
    expect(errorText(new HookrelayApiError('SERVICE_UNAVAILABLE', 'database unavailable', 503, 'r1'))).toBe('database unavailable');
    expect(errorText(new HookrelayNetworkError('could not reach http://fake: connect ECONNREFUSED', 'http://fake'))).toBe(
      'could not reach http://fake: connect ECONNREFUSED',
    );
  });

  it("of an AggregateError (one error per address tried): each inner error's message, once", () => {
    const refused = (address: string) => Object.assign(new Error(`connect ECONNREFUSED ${address}`), { code: 'ECONNREFUSED' });
    const both = new AggregateError([refused('::1:3000'), refused('127.0.0.1:3000'), refused('127.0.0.1:3000')], '');
    expect(errorText(both)).toBe('connect ECONNREFUSED ::1:3000; connect ECONNREFUSED 127.0.0.1:3000');
  });

  it('without a message: its code, else the value as text', () => {
    expect(errorText(Object.assign(new Error(''), { code: 'ECONNRESET' }))).toBe('ECONNRESET');
    expect(errorText({ cause: { code: 'UND_ERR_SOCKET' } })).toBe('UND_ERR_SOCKET');
    expect(errorText('plain words')).toBe('plain words');
    expect(errorText(null)).toBe('null');
    expect(errorText(undefined)).toBe('undefined');
  });
});

describe('errorCode', () => {
  it('is the code of the error, of the first inner error that has one, or of its cause', () => {
    expect(errorCode(Object.assign(new Error('x'), { code: 'EPIPE' }))).toBe('EPIPE');
    expect(errorCode(new AggregateError([new Error('no code'), Object.assign(new Error('y'), { code: 'EHOSTUNREACH' })]))).toBe('EHOSTUNREACH');
    expect(errorCode(new Error('fetch failed', { cause: Object.assign(new Error('z'), { code: 'ENOTFOUND' }) }))).toBe('ENOTFOUND');
    expect(errorCode(new Error('none'))).toBeUndefined();
    expect(errorCode('text')).toBeUndefined();
    expect(errorCode(null)).toBeUndefined();
  });
});
