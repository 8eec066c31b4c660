import { describe, expect, it } from 'vitest';
import { forwardPath, joinPath, parseForwardTo } from '../src/listen/target.js';

describe('parseForwardTo', () => {
  it.each([
    ['3000', { origin: 'http://localhost:3000', host: 'localhost:3000', basePath: '/', baseQuery: '', display: 'http://localhost:3000' }],
    ['3000/webhooks', { origin: 'http://localhost:3000', basePath: '/webhooks', display: 'http://localhost:3000/webhooks' }],
    ['localhost:8080/hooks/', { origin: 'http://localhost:8080', basePath: '/hooks/' }],
    ['127.0.0.1:9000', { origin: 'http://127.0.0.1:9000', host: '127.0.0.1:9000', basePath: '/' }],
    ['[::1]:9000/x', { origin: 'http://[::1]:9000', basePath: '/x' }],
    ['http://127.0.0.1:3000/hooks?source=hr', { origin: 'http://127.0.0.1:3000', basePath: '/hooks', baseQuery: 'source=hr' }],
    ['https://app.test/in', { origin: 'https://app.test', host: 'app.test', basePath: '/in' }],
    ['HTTP://Example.test:80/a', { origin: 'http://example.test', host: 'example.test', basePath: '/a' }],
  ])('%s', (value, expected) => {
    expect(parseForwardTo(value)).toMatchObject(expected);
  });

  it.each(['', 'webhooks', 'ftp://x.test', '70000', 'http://user:pw@localhost:3000/', 'http://localhost:3000/#frag', 'localhost'])(
    'refuses %j',
    (value) => {
      expect(() => parseForwardTo(value)).toThrow();
    },
  );
});

describe('joinPath', () => {
  it.each([
    ['/', '/', '/'],
    ['/', '/github/push', '/github/push'],
    ['/webhooks', '/', '/webhooks'],
    ['/webhooks', '/github/push', '/webhooks/github/push'],
    ['/webhooks/', '/github/push', '/webhooks/github/push'],
    ['/webhooks', '/github/push/', '/webhooks/github/push/'],
    ['/webhooks', '', '/webhooks'],
    ['', '/a', '/a'],
    ['/webhooks', 'a', '/webhooks/a'],
    // Percent-encoding is kept exactly as the sender wrote it.
    ['/w', '/a%2Fb/%E2%9C%93', '/w/a%2Fb/%E2%9C%93'],
  ])('%s + %s = %s', (base, sub, expected) => {
    expect(joinPath(base, sub)).toBe(expected);
  });
});

describe('forwardPath', () => {
  it('appends the sub-path and joins the queries, the target first', () => {
    expect(forwardPath({ basePath: '/webhooks', baseQuery: '' }, '/github/push', 'x=1&y=%20')).toBe('/webhooks/github/push?x=1&y=%20');
    expect(forwardPath({ basePath: '/webhooks', baseQuery: 'src=hr' }, '/', 'x=1')).toBe('/webhooks?src=hr&x=1');
    expect(forwardPath({ basePath: '/', baseQuery: 'src=hr' }, '/', '')).toBe('/?src=hr');
    expect(forwardPath({ basePath: '/', baseQuery: '' }, '/', '')).toBe('/');
  });
});
