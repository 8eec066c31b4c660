import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/logging.js';

const TOKEN = '0123456789abcdef0123456789abcdef';
const KEY = 'hr_00112233445566778899aabbccddeeff00112233';

describe('redactUrl', () => {
  it.each([
    // Routed ingest URLs: the token segment, and the whole query (a static token may travel in it).
    [`/in/${TOKEN}/github/push?token=s3cret&x=1`, '/in/[redacted]/github/push?[redacted]'],
    [`/pull/0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70/${TOKEN}`, '/pull/0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70/[redacted]'],
    [`/in/short-static-token`, '/in/[redacted]'],
    // Near misses that do not route but are logged all the same.
    [`/./in/${TOKEN}`, '/./in/[redacted]'],
    [`/in/../in/${TOKEN}?token=s3cret`, '/in/[redacted]/in/[redacted]?[redacted]'],
    [`/in;x=1/${TOKEN}`, '/in;x=1/[redacted]'],
    [`//IN//${TOKEN}?a=b`, '//IN//[redacted]?[redacted]'],
    [`/in\\${TOKEN}`, '/in\\[redacted]'],
    [`/x/${TOKEN}?token=s3cret`, '/x/[redacted]?[redacted]'],
    [`/x/abc${TOKEN}def`, '/x/[redacted]'],
    [`http://host/in/${TOKEN}?t=1`, 'http://host/in/[redacted]?[redacted]'],
    // Escapes of plain characters are read before matching.
    [`/%69n/${[...TOKEN].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}`, '/in/[redacted]'],
    // API keys anywhere.
    [`/v1/whoami?api_key=${KEY}`, '/v1/whoami?api_key=hr_[redacted]'],
    [`/v1/whoami?x=1&key=${KEY.toUpperCase().replace('HR_', 'hr_')}&y=2`, '/v1/whoami?x=1&key=hr_[redacted]&y=2'],
    [`/v1/endpoints/${KEY}`, '/v1/endpoints/hr_[redacted]'],
    [`/v1/inbound-endpoints/0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70/stream?api_key=%68r_abc`, '/v1/inbound-endpoints/0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70/stream?api_key=hr_[redacted]'],
    // Stream tickets.
    ['/v1/inbound-endpoints/x/watch?ticket=v1.abc.def&a=1', '/v1/inbound-endpoints/x/watch?ticket=[redacted]&a=1'],
  ])('%s → %s', (url, logged) => {
    expect(redactUrl(url)).toBe(logged);
  });

  it.each([
    '/v1/endpoints/ep_0123456789abcdef0123456789abcdef/messages?limit=10',
    '/v1/inbound-endpoints/0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70?include=stats',
    '/v1/inbound-endpoints?limit=5&cursor=abc',
    '/v1/pull-endpoints/0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70/events',
    '/inspector/',
    '/healthz',
  ])('keeps what is no secret: %s', (url) => {
    expect(redactUrl(url)).toBe(url);
  });
});
