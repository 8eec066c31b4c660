import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { request } from 'undici';
import {
  BlockedAddressError,
  checkDestinationUrl,
  createGuardedAgent,
  createGuardedLookup,
  isBlockedAddress,
  isBlockedAddressError,
  parseHostLiteral,
  type Resolver,
} from '../../src/security/ssrf.js';

/** The connect-time guard as a socket sees it: the exact arguments its lookup calls back with, and the error it gets. */
const fixed =
  (addresses: string[]): Resolver =>
  async () =>
    addresses;

type Lookup = ReturnType<typeof createGuardedLookup>;
interface Answer {
  err: (NodeJS.ErrnoException & { hostname?: string }) | null;
  address: unknown;
  family: number | undefined;
}

/** A lookup that never calls back leaves its socket waiting forever: that fails here, within 2 s. */
function lookup(fn: Lookup, options: Parameters<Lookup>[1], hostname = 'hooks.example.com'): Promise<Answer> {
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error('the lookup never called back')), 2000);
    fn(hostname, options, (err, address, family) => {
      clearTimeout(timer);
      done({ err, address, family });
    });
  });
}

describe('createGuardedLookup', () => {
  const mixed = createGuardedLookup({ resolve: fixed(['2606:4700::1111', '93.184.216.34']) });
  const v4First = createGuardedLookup({ resolve: fixed(['93.184.216.34', '2606:4700::1111']) });

  it('answers the family asked for, by number or by name, from a mixed answer in either order', async () => {
    for (const fn of [mixed, v4First]) {
      expect(await lookup(fn, { family: 4 })).toEqual({ err: null, address: '93.184.216.34', family: 4 });
      expect(await lookup(fn, { family: 'IPv4' as never })).toEqual({ err: null, address: '93.184.216.34', family: 4 });
      expect(await lookup(fn, { family: 6 })).toEqual({ err: null, address: '2606:4700::1111', family: 6 });
      expect(await lookup(fn, { family: 'IPv6' as never })).toEqual({ err: null, address: '2606:4700::1111', family: 6 });
      expect((await lookup(fn, { all: true, family: 4 })).address).toEqual([{ address: '93.184.216.34', family: 4 }]);
      expect((await lookup(fn, { all: true, family: 6 })).address).toEqual([{ address: '2606:4700::1111', family: 6 }]);
    }
    // No family: the resolver's first address.
    expect(await lookup(mixed, {})).toEqual({ err: null, address: '2606:4700::1111', family: 6 });
    expect(await lookup(v4First, {})).toEqual({ err: null, address: '93.184.216.34', family: 4 });
  });

  it("takes dns.lookup's (hostname, callback) form", async () => {
    const twoArguments = mixed as unknown as (hostname: string, callback: Parameters<Lookup>[2]) => void;
    const answer = await lookup((hostname, _options, callback) => twoArguments(hostname, callback), {});
    expect(answer).toEqual({ err: null, address: '2606:4700::1111', family: 6 });
  });

  it('answers ENOTFOUND, naming the host, when the resolver has no address of the family asked for', async () => {
    for (const [fn, options] of [
      [createGuardedLookup({ resolve: fixed([]) }), {}],
      [createGuardedLookup({ resolve: fixed(['2606:4700::1111']) }), { family: 4 }],
    ] as const) {
      const single = await lookup(fn, options);
      expect(single.address).toBe('');
      expect(single.err?.code).toBe('ENOTFOUND');
      expect(single.err?.message).toBe('getaddrinfo ENOTFOUND hooks.example.com');
      expect(single.err?.hostname).toBe('hooks.example.com');
      const all = await lookup(fn, { ...options, all: true });
      expect(all.address).toEqual([]);
      expect(all.err?.code).toBe('ENOTFOUND');
    }
  });

  it('refuses with the blocked address named, and an empty address of the shape asked for', async () => {
    const fn = createGuardedLookup({ resolve: fixed(['93.184.216.34', '10.0.0.1']) });
    const single = await lookup(fn, {});
    expect(single.err).toBeInstanceOf(BlockedAddressError);
    expect(single.err?.code).toBe('ERR_HOOKRELAY_BLOCKED_ADDRESS');
    expect(single.err?.message).toBe('connection to hooks.example.com refused: it resolves to a private or reserved address (10.0.0.1); the server refuses those unless HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true (local development only)');
    expect(single.err).toMatchObject({ name: 'BlockedAddressError', hostname: 'hooks.example.com', address: '10.0.0.1' });
    expect(single.address).toBe('');
    expect((await lookup(fn, { all: true })).address).toEqual([]);
  });

  it('refuses a scoped global IPv6 address and a scoped IPv4-mapped one', async () => {
    for (const address of ['2606:4700::1111%eth0', '::ffff:93.184.216.34%eth0']) {
      expect(isBlockedAddress(address), address).toBe(true);
      expect((await lookup(createGuardedLookup({ resolve: fixed([address]) }), {})).err?.code, address).toBe('ERR_HOOKRELAY_BLOCKED_ADDRESS');
    }
  });

  it('passes a resolver failure through with an empty address; a non-Error becomes ENOTFOUND', async () => {
    const failing = createGuardedLookup({
      resolve: async () => {
        throw Object.assign(new Error('getaddrinfo EAI_AGAIN hooks.example.com'), { code: 'EAI_AGAIN' });
      },
    });
    const single = await lookup(failing, {});
    expect([single.err?.code, single.err?.message, single.address]).toEqual(['EAI_AGAIN', 'getaddrinfo EAI_AGAIN hooks.example.com', '']);
    expect((await lookup(failing, { all: true })).address).toEqual([]);

    const odd = createGuardedLookup({
      resolve: () => {
        throw 'no answer';
      },
    });
    const answer = await lookup(odd, {});
    expect(answer.err).toBeInstanceOf(Error);
    expect([answer.err?.code, answer.err?.message, answer.err?.hostname, answer.address]).toEqual(['ENOTFOUND', 'no answer', 'hooks.example.com', '']);
  });

  it('with allowPrivateNetworks hands back only the addresses that are IPs', async () => {
    const open = createGuardedLookup({ allowPrivateNetworks: true, resolve: fixed(['not-an-address', '127.0.0.1']) });
    expect(await lookup(open, {})).toEqual({ err: null, address: '127.0.0.1', family: 4 });
    expect((await lookup(open, { all: true })).address).toEqual([{ address: '127.0.0.1', family: 4 }]);
  });

  it("uses the system resolver by default: localhost is refused", async () => {
    const answer = await lookup(createGuardedLookup(), {}, 'localhost');
    expect(answer.err?.code).toBe('ERR_HOOKRELAY_BLOCKED_ADDRESS');
    expect(answer.err?.message).toMatch(/^connection to localhost refused: it resolves to a private or reserved address \((127\.0\.0\.1|::1)\); the server refuses those unless HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true \(local development only\)$/u);
  });
});

describe('isBlockedAddressError', () => {
  const blocked = new BlockedAddressError('10.0.0.1', '10.0.0.1');

  it('names the address in the message', () => {
    expect(blocked.message).toBe('connection to 10.0.0.1 refused: private or reserved address; the server refuses those unless HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true (local development only)');
    expect(blocked.name).toBe('BlockedAddressError');
  });

  it('finds a block nested in a cause chain', () => {
    const wrapped = new Error('fetch failed', { cause: new Error('connect failed', { cause: blocked }) });
    expect(isBlockedAddressError(wrapped)).toBe(true);
    expect(isBlockedAddressError({ code: 'ERR_HOOKRELAY_BLOCKED_ADDRESS' })).toBe(true);
  });

  it('is false for everything else, a cause chain that loops or ends in a non-object included', () => {
    const a: { code: string; cause?: unknown } = { code: 'ECONNREFUSED' };
    const b = { code: 'ECONNRESET', cause: a };
    a.cause = b;
    for (const value of [null, undefined, 'ERR_HOOKRELAY_BLOCKED_ADDRESS', 42, {}, { code: 'ENOTFOUND' }, a, new Error('x', { cause: null }), new Error('x', { cause: 'ERR_HOOKRELAY_BLOCKED_ADDRESS' })]) {
      expect(isBlockedAddressError(value)).toBe(false);
    }
  });
});

describe('parseHostLiteral and checkDestinationUrl', () => {
  it('reads a literal only when the whole host text is one', () => {
    expect(parseHostLiteral(' 127.0.0.1 ')).toBe('127.0.0.1');
    expect(parseHostLiteral('０x7f.1')).toBe('127.0.0.1');
    for (const host of ['[::1', '::1]', 'x127.0.0.1]', '[127.0.0.1x', '[]', '%zz', '127.0.0.1/x']) expect(parseHostLiteral(host), host).toBeNull();
  });

  it('says when a URL does not parse', async () => {
    expect(await checkDestinationUrl('not a url', { allowPrivateNetworks: false })).toEqual({ ok: false, reason: 'url is not a valid URL' });
  });

  describe('with fake timers', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('leaves no timer behind once the resolver has answered', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      expect(await checkDestinationUrl('https://hooks.example.com/', { allowPrivateNetworks: false, resolve: fixed(['93.184.216.34']) })).toEqual({ ok: true });
      expect(vi.getTimerCount()).toBe(0);
    });
  });
});

describe('createGuardedAgent', () => {
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

  it('refuses a name in its lookup, naming the name and the address it resolved to', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: false, resolve: fixed(['127.0.0.1']) });
    try {
      const error = await request(`http://receiver.test:${port}/`, { dispatcher: agent }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(BlockedAddressError);
      expect(error).toMatchObject({ hostname: 'receiver.test', address: '127.0.0.1' });
      expect(hits).toBe(0);
    } finally {
      await agent.close();
    }
  });

  it('refuses a literal before dialling, naming it', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: false });
    try {
      const error = await request(`http://[::ffff:127.0.0.1]:${port}/`, { dispatcher: agent }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(BlockedAddressError);
      expect((error as Error).message).toBe('connection to ::ffff:7f00:1 refused: private or reserved address; the server refuses those unless HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true (local development only)');
      expect(hits).toBe(0);
    } finally {
      await agent.close();
    }
  });
});
