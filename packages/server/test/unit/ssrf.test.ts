import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import {
  BLOCKED_ADDRESS_ERROR_CODE,
  checkDestinationUrl,
  createGuardedAgent,
  createGuardedLookup,
  isBlockedAddress,
  isBlockedAddressError,
  parseHostLiteral,
  type Resolver,
} from '../../src/security/ssrf.js';

const fixed =
  (addresses: string[]): Resolver =>
  async () =>
    addresses;

describe('isBlockedAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['240.0.0.1', 'reserved'],
    ['::1', 'IPv6 loopback'],
    ['::', 'IPv6 unspecified'],
    ['fe80::1', 'IPv6 link-local'],
    ['fe80::1%eth0', 'scoped link-local'],
    ['fc00::1', 'unique local'],
    ['fd12:3456::1', 'unique local'],
    ['ff02::1', 'IPv6 multicast'],
    ['fec0::1', 'deprecated site-local'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback (dotted)'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback (hex)'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata address'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::7f00:1', 'IPv4-compatible loopback (hex)'],
    ['64:ff9b::a00:1', 'NAT64 of 10.0.0.1'],
    ['64:ff9b::7f00:1', 'NAT64 of 127.0.0.1'],
    ['64:ff9b:1::5db8:d822', 'local-use NAT64 prefix'],
    ['::ffff:0:5db8:d822', 'RFC 6145 translated'],
    ['2002:7f00:1::1', '6to4'],
    ['2001:0:4136:e378::1', 'Teredo'],
    ['2001:db8::1', 'documentation'],
    ['2001:2::1', 'benchmarking'],
    ['2001:20::1', 'ORCHIDv2'],
    ['100::1', 'discard'],
    ['4000::1', 'outside 2000::/3'],
  ])('blocks %s (%s)', (address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1',
    '2a00:1450:4001:81a::200e',
    '::ffff:93.184.216.34',
    '64:ff9b::5db8:d822',
  ])('allows public %s', (address) => {
    expect(isBlockedAddress(address)).toBe(false);
  });

  it.each(['', 'example.com', 'localhost', '010.0.0.1', '127.1', '0x7f.0.0.1', '2130706433', '1.2.3.4.5', '[::1]'])(
    'treats non-canonical or non-IP input %j as blocked (fail closed)',
    (input) => {
      expect(isBlockedAddress(input)).toBe(true);
    },
  );
});

describe('parseHostLiteral', () => {
  it('recognises plain and bracketed literals', () => {
    expect(parseHostLiteral('127.0.0.1')).toBe('127.0.0.1');
    expect(parseHostLiteral('[::1]')).toBe('::1');
    expect(parseHostLiteral('::1')).toBe('::1');
    expect(parseHostLiteral('[::ffff:7f00:1]')).toBe('::ffff:7f00:1');
  });

  it('returns null for names', () => {
    expect(parseHostLiteral('example.com')).toBeNull();
    expect(parseHostLiteral('localhost')).toBeNull();
    expect(parseHostLiteral('1.2.3.4.example.com')).toBeNull();
    expect(parseHostLiteral('')).toBeNull();
    expect(parseHostLiteral('127.0.0.1:80')).toBeNull();
  });

  it('relies on WHATWG URL normalising the odd IPv4 spellings', () => {
    expect(new URL('https://2130706433/').hostname).toBe('127.0.0.1');
    expect(new URL('https://0177.0.0.1/').hostname).toBe('127.0.0.1');
    expect(new URL('https://0x7f.1/').hostname).toBe('127.0.0.1');
    expect(new URL('https://0x7f.0.0.1/').hostname).toBe('127.0.0.1');
    expect(new URL('https://127.1/').hostname).toBe('127.0.0.1');
    expect(new URL('https://[::ffff:127.0.0.1]/').hostname).toBe('[::ffff:7f00:1]');
  });

  it('normalises the odd IPv4 spellings when given raw host text', () => {
    expect(parseHostLiteral('2130706433')).toBe('127.0.0.1');
    expect(parseHostLiteral('0177.0.0.1')).toBe('127.0.0.1');
    expect(parseHostLiteral('0x7f.1')).toBe('127.0.0.1');
    expect(parseHostLiteral('127.0.0.1.')).toBe('127.0.0.1');
    expect(parseHostLiteral('0xa9.0xfe.0xa9.0xfe')).toBe('169.254.169.254');
  });
});

describe('checkDestinationUrl', () => {
  const neverResolve: Resolver = () => {
    throw new Error('resolver must not be called');
  };
  const strict = { allowPrivateNetworks: false, resolve: neverResolve };

  it('refuses non-https URLs, even with private networks allowed', async () => {
    expect(await checkDestinationUrl('http://example.com/hook', strict)).toEqual({
      ok: false,
      reason: 'url must use https://',
    });
    expect(
      await checkDestinationUrl('http://127.0.0.1/hook', { allowPrivateNetworks: true, resolve: neverResolve }),
    ).toMatchObject({ ok: false });
    expect(await checkDestinationUrl('not a url', strict)).toMatchObject({ ok: false });
  });

  it.each([
    ['https://127.0.0.1/hook', '127.0.0.1'],
    ['https://10.1.2.3/', '10.1.2.3'],
    ['https://169.254.169.254/latest/meta-data/', '169.254.169.254'],
    ['https://[::1]/', '::1'],
    ['https://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
    ['https://[fc00::1]:8443/', 'fc00::1'],
    ['https://2130706433/', '127.0.0.1'],
    ['https://0x7f.0.0.1/', '127.0.0.1'],
    ['https://0177.0.0.1/', '127.0.0.1'],
    ['https://0x7f.1/', '127.0.0.1'],
  ])('refuses literal %s', async (url, address) => {
    const result = await checkDestinationUrl(url, strict);
    expect(result).toEqual({ ok: false, reason: `url points to a private or reserved address (${address}); the server refuses those unless HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true (local development only)` });
  });

  it('accepts public literals without resolving', async () => {
    expect(await checkDestinationUrl('https://93.184.216.34/hook', strict)).toEqual({ ok: true });
    expect(await checkDestinationUrl('https://[2606:4700::1]/hook', strict)).toEqual({ ok: true });
  });

  it.each(['https://localhost/', 'https://LOCALHOST./x', 'https://foo.localhost/', 'https://a.b.localhost:8443/'])(
    'refuses %s without resolving',
    async (url) => {
      const result = await checkDestinationUrl(url, strict);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.reason).toMatch(/loopback name/);
    },
  );

  it('accepts a name that resolves only to public addresses', async () => {
    const result = await checkDestinationUrl('https://hooks.example.com/in', {
      allowPrivateNetworks: false,
      resolve: fixed(['93.184.216.34', '2606:4700::1']),
    });
    expect(result).toEqual({ ok: true });
  });

  it('refuses a name when any resolved address is blocked', async () => {
    const seen: string[] = [];
    const result = await checkDestinationUrl('https://hooks.example.com/in', {
      allowPrivateNetworks: false,
      resolve: async (host) => {
        seen.push(host);
        return ['93.184.216.34', '10.0.0.1'];
      },
    });
    expect(seen).toEqual(['hooks.example.com']);
    expect(result).toEqual({ ok: false, reason: 'url resolves to a private or reserved address (10.0.0.1); the server refuses those unless HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true (local development only)' });
  });

  it('refuses a name resolving to an IPv4-mapped loopback', async () => {
    const result = await checkDestinationUrl('https://rebind.example.com/', {
      allowPrivateNetworks: false,
      resolve: fixed(['::ffff:127.0.0.1']),
    });
    expect(result.ok).toBe(false);
  });

  it('accepts when the lookup fails (the connect-time check decides)', async () => {
    const result = await checkDestinationUrl('https://does-not-exist.example.com/', {
      allowPrivateNetworks: false,
      resolve: async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
      },
    });
    expect(result).toEqual({ ok: true });
  });

  it('accepts when the resolver throws synchronously', async () => {
    const result = await checkDestinationUrl('https://sync-throw.example.com/', {
      allowPrivateNetworks: false,
      resolve: () => {
        throw new Error('boom');
      },
    });
    expect(result).toEqual({ ok: true });
  });

  it('accepts after the timeout when the resolver never answers', async () => {
    const started = Date.now();
    const result = await checkDestinationUrl('https://slow.example.com/', {
      allowPrivateNetworks: false,
      resolve: () => new Promise<string[]>(() => {}),
      timeoutMs: 50,
    });
    const elapsed = Date.now() - started;
    expect(result).toEqual({ ok: true });
    expect(elapsed).toBeGreaterThanOrEqual(40);
    expect(elapsed).toBeLessThan(1000);
  });

  it('with allowPrivateNetworks only the https rule applies', async () => {
    const open = { allowPrivateNetworks: true, resolve: neverResolve };
    expect(await checkDestinationUrl('https://127.0.0.1:8443/hook', open)).toEqual({ ok: true });
    expect(await checkDestinationUrl('https://[::1]/', open)).toEqual({ ok: true });
    expect(await checkDestinationUrl('https://localhost/', open)).toEqual({ ok: true });
  });
});

describe('createGuardedLookup', () => {
  type LookupResult = { err: NodeJS.ErrnoException | null; address: unknown; family?: number | undefined };
  const run = (
    lookup: ReturnType<typeof createGuardedLookup>,
    options: Parameters<ReturnType<typeof createGuardedLookup>>[1],
  ) =>
    new Promise<LookupResult>((done, fail) => {
      // A lookup that never calls back leaves its socket waiting forever: that fails here, within 2 s.
      const timer = setTimeout(() => fail(new Error('the lookup never called back')), 2000);
      lookup('hooks.example.com', options, (err, address, family) => {
        clearTimeout(timer);
        done({ err, address, family });
      });
    });

  it('returns the checked address and family', async () => {
    const lookup = createGuardedLookup({ resolve: fixed(['93.184.216.34', '2606:4700::1']) });
    expect(await run(lookup, {})).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect(await run(lookup, { family: 6 })).toEqual({ err: null, address: '2606:4700::1', family: 6 });
    expect((await run(lookup, { all: true })).address).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1', family: 6 },
    ]);
  });

  it('reads its options as own properties: an inherited allowPrivateNetworks does not open the guard', async () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto.allowPrivateNetworks = true;
    proto.family = 6;
    try {
      const lookup = createGuardedLookup({ resolve: fixed(['10.0.0.1']) });
      expect((await run(lookup, {})).err?.code).toBe(BLOCKED_ADDRESS_ERROR_CODE);
      const mixed = createGuardedLookup({ resolve: fixed(['93.184.216.34', '2606:4700::1']) });
      expect(await run(mixed, {})).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    } finally {
      delete proto.allowPrivateNetworks;
      delete proto.family;
    }
  });

  it('errors when any address is blocked, even one of another family', async () => {
    const lookup = createGuardedLookup({ resolve: fixed(['93.184.216.34', 'fd00::1']) });
    const { err } = await run(lookup, { family: 4 });
    expect(err?.code).toBe(BLOCKED_ADDRESS_ERROR_CODE);
    expect(err?.message).toContain('fd00::1');
    expect(isBlockedAddressError(err)).toBe(true);
    expect((await run(lookup, { all: true })).err?.code).toBe(BLOCKED_ADDRESS_ERROR_CODE);
  });

  it('passes resolver failures through', async () => {
    const lookup = createGuardedLookup({
      resolve: async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
      },
    });
    expect((await run(lookup, {})).err?.code).toBe('ENOTFOUND');
  });

  it('does not check with allowPrivateNetworks', async () => {
    const lookup = createGuardedLookup({ allowPrivateNetworks: true, resolve: fixed(['127.0.0.1']) });
    expect(await run(lookup, {})).toEqual({ err: null, address: '127.0.0.1', family: 4 });
  });
});

describe('createGuardedAgent against a local server', () => {
  let server: http.Server;
  let port = 0;
  let hits = 0;

  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      hits++;
      res.end('ok');
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((closed) => server.close(() => closed()));
  });

  const expectBlocked = async (url: string, agent: ReturnType<typeof createGuardedAgent>) => {
    const before = hits;
    try {
      const error = await request(url, { dispatcher: agent }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).not.toBeNull();
      expect(isBlockedAddressError(error)).toBe(true);
      expect(hits).toBe(before);
    } finally {
      await agent.close();
    }
  };

  it('refuses a literal loopback address', async () => {
    await expectBlocked(`http://127.0.0.1:${port}/`, createGuardedAgent({ allowPrivateNetworks: false }));
  });

  it('refuses literal loopback spellings (decimal, IPv4-mapped IPv6)', async () => {
    await expectBlocked(`http://2130706433:${port}/`, createGuardedAgent({ allowPrivateNetworks: false }));
    await expectBlocked(`http://[::ffff:127.0.0.1]:${port}/`, createGuardedAgent({ allowPrivateNetworks: false }));
  });

  it('refuses a name that resolves to loopback (checked in lookup)', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: false, resolve: fixed(['127.0.0.1']) });
    await expectBlocked(`http://receiver.test:${port}/`, agent);
  });

  it('refuses a name whose answer mixes public and private addresses', async () => {
    const agent = createGuardedAgent({
      allowPrivateNetworks: false,
      resolve: fixed(['93.184.216.34', '127.0.0.1']),
    });
    await expectBlocked(`http://receiver.test:${port}/`, agent);
  });

  it('connects to a literal loopback address with allowPrivateNetworks', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: true });
    try {
      const res = await request(`http://127.0.0.1:${port}/`, { dispatcher: agent });
      expect(res.statusCode).toBe(200);
      expect(await res.body.text()).toBe('ok');
    } finally {
      await agent.close();
    }
  });

  it('connects through the lookup with allowPrivateNetworks', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: true, resolve: fixed(['127.0.0.1']) });
    try {
      const res = await request(`http://receiver.test:${port}/`, { dispatcher: agent });
      expect(res.statusCode).toBe(200);
      expect(await res.body.text()).toBe('ok');
    } finally {
      await agent.close();
    }
  });

});

// Self-signed test certificate for 127.0.0.1, ::1 and receiver.test (valid until 2126), generated
// with openssl for these tests only; the key protects nothing.
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBvjCCAWOgAwIBAgIUUzLQAkTdf6UPVvwNZsl9+xl4sJ8wCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOaG9va3JlbGF5LXRlc3QwIBcNMjYxMTIyMTE0MzE0WhgPMjEy
NjEwMjkxMTQzMTRaMBkxFzAVBgNVBAMMDmhvb2tyZWxheS10ZXN0MFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAE/2Fn+EUQtMLibhot8E6MhtNCfWGMyeYaS24QltCR
VHOAn4fZMCmUqfn0GrKHs6E3ccWkl64jC0fAP6NZYydnNKOBhjCBgzAdBgNVHQ4E
FgQUxmkPwsHYVaIkQEy1HfBRe4oJSLwwHwYDVR0jBBgwFoAUxmkPwsHYVaIkQEy1
HfBRe4oJSLwwDwYDVR0TAQH/BAUwAwEB/zAwBgNVHREEKTAnhwR/AAABhxAAAAAA
AAAAAAAAAAAAAAABgg1yZWNlaXZlci50ZXN0MAoGCCqGSM49BAMCA0kAMEYCIQDK
j2wHNp22nvIgu12tc/N3kx5dQBRMgcWl1uimU9zrNgIhAP8NaTdQKuB7Pn+Mz0vD
cjZgcENtcBXrGYTBZYqNhKzC
-----END CERTIFICATE-----
`;
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgS0Cg6hehNeVsFIod
uxuSQSZ8ufkHC8C2IzlFvgjRU0ShRANCAAT/YWf4RRC0wuJuGi3wToyG00J9YYzJ
5hpLbhCW0JFUc4Cfh9kwKZSp+fQasoezoTdxxaSXriMLR8A/o1ljJ2c0
-----END PRIVATE KEY-----
`;

describe('createGuardedAgent with an extra CA', () => {
  let server: https.Server;
  let port = 0;

  beforeAll(async () => {
    server = https.createServer({ cert: TEST_CERT, key: TEST_KEY }, (_req, res) => res.end('tls ok'));
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((closed) => server.close(() => closed()));
  });

  it('trusts the extra CA for a TLS receiver', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: true, ca: TEST_CERT, resolve: fixed(['127.0.0.1']) });
    try {
      const res = await request(`https://receiver.test:${port}/`, { dispatcher: agent });
      expect(await res.body.text()).toBe('tls ok');
    } finally {
      await agent.close();
    }
  });

  it('rejects the self-signed receiver without the extra CA', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: true, resolve: fixed(['127.0.0.1']) });
    try {
      await expect(request(`https://receiver.test:${port}/`, { dispatcher: agent })).rejects.toThrow(/self[- ]signed/i);
    } finally {
      await agent.close();
    }
  });
});
