import { describe, expect, it } from 'vitest';
import { decodeAnswer, HookrelayApiError, nextCursor } from '../src/answer.js';

describe('decodeAnswer', () => {
  it('reads the success envelope: data and meta as sent', () => {
    const answer = decodeAnswer<{ id: string }>(200, '{"data":{"id":"a"},"meta":{"request_id":"r1","next_cursor":"c"}}');
    expect(answer).toEqual({ kind: 'data', data: { id: 'a' }, meta: { request_id: 'r1', next_cursor: 'c' } });
  });

  it('gives an empty meta when the envelope has none, and keeps a null data', () => {
    expect(decodeAnswer(201, '{"data":null}')).toEqual({ kind: 'data', data: null, meta: {} });
  });

  it('reads the error envelope into a HookrelayApiError with every field the API sends', () => {
    const text = JSON.stringify({
      error: { code: 'INVALID_REQUEST', message: 'name: required', details: [{ path: 'name', message: 'required' }] },
      data: { deleted: ['x'] },
      meta: { request_id: 'req-7' },
    });
    const answer = decodeAnswer(400, text, 12);
    expect(answer.kind).toBe('error');
    const error = (answer as { error: HookrelayApiError }).error;
    expect(error).toBeInstanceOf(HookrelayApiError);
    expect(error).toBeInstanceOf(Error);
    expect({ ...error, message: error.message }).toEqual({
      name: 'HookrelayApiError',
      code: 'INVALID_REQUEST',
      message: 'name: required',
      status: 400,
      requestId: 'req-7',
      details: [{ path: 'name', message: 'required' }],
      data: { deleted: ['x'] },
      retryAfterSeconds: 12,
    });
    expect(error.isKnownCode).toBe(true);
  });

  it('takes an error member under a success status as an error, and a code it does not know as it is', () => {
    const answer = decodeAnswer(200, '{"error":{"code":"SOMETHING_NEW","message":"m"},"meta":{}}');
    expect(answer.kind).toBe('error');
    const error = (answer as { error: HookrelayApiError }).error;
    expect([error.code, error.status, error.requestId, error.details, error.data, error.retryAfterSeconds]).toEqual(['SOMETHING_NEW', 200, undefined, undefined, undefined, undefined]);
    expect(error.isKnownCode).toBe(false);
  });

  it('falls back to the code when the error has no message', () => {
    const answer = decodeAnswer(404, '{"error":{"code":"NOT_FOUND"}}');
    expect((answer as { error: HookrelayApiError }).error.message).toBe('NOT_FOUND');
  });

  it.each([
    ['a proxy page', 502, '<html>Bad Gateway</html>'],
    ['an empty error answer', 503, ''],
    ['JSON without the error envelope', 404, '{"message":"Not Found","statusCode":404}'],
    ['an error whose code is not a string', 400, '{"error":{"code":400,"message":"bad"}}'],
    ['an error that is not an object', 500, '{"error":"boom"}'],
    ['a null error under a success status', 200, '{"error":null,"data":1}'],
    ['a success without data', 200, '{"ok":true}'],
    ['a success that is not JSON', 200, 'hello'],
    ['a success that is an array', 200, '[{"data":1}]'],
    ['a success that is null', 200, 'null'],
    ['an empty success', 200, ''],
  ])('%s is not the API: foreign', (_, status, text) => {
    expect(decodeAnswer(status, text)).toEqual({ kind: 'foreign' });
  });
});

describe('nextCursor', () => {
  it.each([
    [{ next_cursor: 'abc' }, 'abc'],
    [{ next_cursor: '' }, null],
    [{ next_cursor: null }, null],
    [{ next_cursor: 5 }, null],
    [{}, null],
  ])('%j → %j', (meta, cursor) => {
    expect(nextCursor(meta)).toBe(cursor);
  });
});
