import { describe, expect, it } from 'vitest';
import { validateCustomHeaders } from '../../src/security/headers.js';

describe('validateCustomHeaders', () => {
  it('accepts ordinary headers and returns them unchanged, casing kept', () => {
    const headers = { 'X-Api-Key': 'abc123', authorization: 'Bearer t0ken', 'X-Empty': '', 'X-Tab': 'a\tb' };
    const result = validateCustomHeaders(headers);
    expect(result).toEqual({ ok: true, headers });
    if (result.ok) expect(Object.keys(result.headers)).toEqual(Object.keys(headers));
  });

  it('accepts an empty object', () => {
    expect(validateCustomHeaders({})).toEqual({ ok: true, headers: {} });
  });

  it('refuses Host with the documented message', () => {
    expect(validateCustomHeaders({ Host: 'evil.example' })).toEqual({
      ok: false,
      path: 'headers.Host',
      message: 'headers.Host: the Host header cannot be overridden',
    });
  });

  it.each([
    'host',
    'HOST',
    'Content-Length',
    'content-length',
    'Transfer-Encoding',
    'Connection',
    'Keep-Alive',
    'Upgrade',
    'TE',
    'te',
    'Trailer',
    'Expect',
    'Proxy-Authorization',
    'proxy-connection',
    'PROXY-anything',
    'webhook-id',
    'Webhook-Signature',
    'WEBHOOK-TIMESTAMP',
    'webhook-custom',
    'Content-Type',
    'content-type',
    'Hookrelay-Event-Type',
  ])('refuses the forbidden header %s, naming it', (name) => {
    const result = validateCustomHeaders({ 'X-Fine': 'ok', [name]: 'v' });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.path).toBe(`headers.${name}`);
      expect(result.message.startsWith(`headers.${name}: `)).toBe(true);
    }
  });

  it('allows names that merely resemble forbidden ones', () => {
    for (const name of ['X-Host', 'Hostname', 'X-Webhook-Id', 'Proxyish', 'Trailers', 'X-Connection', 'Tenant', 'X-Content-Type', 'Content-Type-Options', 'Hookrelay-Tenant', 'User-Agent']) {
      expect(validateCustomHeaders({ [name]: 'v' }).ok).toBe(true);
    }
  });

  it.each(['', 'X Space', 'X:Colon', 'X-Ünï', 'X(paren)', 'X"quote"', 'X/slash', 'X\r\nInjected', 'X@at'])(
    'refuses the non-token name %j',
    (name) => {
      const result = validateCustomHeaders({ [name]: 'v' });
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.path).toBe(`headers.${name}`);
    },
  );

  it('accepts every RFC 7230 token character in names', () => {
    expect(validateCustomHeaders({ "X-!#$%&'*+-.^_`|~09az": 'v' }).ok).toBe(true);
  });

  it.each([
    ['CR', 'a\rb'],
    ['LF', 'a\nb'],
    ['CRLF injection', 'v\r\nX-Injected: 1'],
    ['NUL', 'a\0b'],
  ])('refuses a value containing %s', (_label, value) => {
    const result = validateCustomHeaders({ 'X-Custom': value });
    expect(result).toEqual({
      ok: false,
      path: 'headers.X-Custom',
      message: 'headers.X-Custom: header values cannot contain CR, LF or NUL characters',
    });
  });

  it('refuses other control characters and characters HTTP cannot carry', () => {
    for (const value of ['a\x01b', 'a\x7fb', 'price €5']) {
      const result = validateCustomHeaders({ 'X-Custom': value });
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.message).toMatch(/^headers\.X-Custom: /);
    }
    expect(validateCustomHeaders({ 'X-Latin1': 'café' }).ok).toBe(true);
  });

  it('limits values to 4096 characters', () => {
    expect(validateCustomHeaders({ 'X-Long': 'a'.repeat(4096) }).ok).toBe(true);
    const result = validateCustomHeaders({ 'X-Long': 'a'.repeat(4097) });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.path).toBe('headers.X-Long');
      expect(result.message).toMatch(/at most 4096 characters/);
    }
  });

  it('allows at most 50 headers', () => {
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`X-H${i}`, 'v']));
    expect(validateCustomHeaders(fifty).ok).toBe(true);
    const result = validateCustomHeaders({ ...fifty, 'X-H50': 'v' });
    expect(result).toEqual({
      ok: false,
      path: 'headers',
      message: 'headers: at most 50 custom headers are allowed (got 51)',
    });
  });

  it('refuses names that differ only in case', () => {
    const result = validateCustomHeaders({ 'X-Token': 'a', 'x-token': 'b' });
    expect(result).toEqual({
      ok: false,
      path: 'headers.x-token',
      message: 'headers.x-token: duplicate header name (also given as X-Token)',
    });
  });

  it('refuses non-string values and non-object input from untyped JSON', () => {
    const numeric = validateCustomHeaders({ 'X-Num': 5 } as unknown as Record<string, string>);
    expect(numeric).toMatchObject({ ok: false, path: 'headers.X-Num' });
    for (const bad of [null, [], 'x']) {
      expect(validateCustomHeaders(bad as unknown as Record<string, string>)).toMatchObject({
        ok: false,
        path: 'headers',
      });
    }
  });
});
