import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { TrustedProxies } from '../../src/security/client-address.js';

const proxies = new TrustedProxies(['10.0.0.0/8', '2001:db8:ffff::/48']);
const client = (peer: string, headers: Record<string, string | string[]> = {}) => proxies.clientAddress(peer, headers);

describe('TrustedProxies.clientAddress', () => {
  it('believes no header from a peer outside the list', () => {
    expect(client('198.51.100.2', { 'x-forwarded-for': '203.0.113.9' })).toBe('198.51.100.2');
    expect(client('198.51.100.2', { forwarded: 'for=203.0.113.9' })).toBe('198.51.100.2');
    expect(new TrustedProxies([]).clientAddress('10.0.0.1', { 'x-forwarded-for': '203.0.113.9' })).toBe('10.0.0.1');
  });

  it('takes the rightmost hop that is not a trusted proxy', () => {
    expect(client('10.0.0.1', { 'x-forwarded-for': '203.0.113.9' })).toBe('203.0.113.9');
    // The client wrote the leftmost entries itself; the proxies appended the rest.
    expect(client('10.0.0.1', { 'x-forwarded-for': '1.2.3.4, 203.0.113.9, 10.0.0.7' })).toBe('203.0.113.9');
    expect(client('10.0.0.1', { 'x-forwarded-for': ['1.2.3.4', '203.0.113.9'] })).toBe('203.0.113.9');
    // Every hop trusted: the farthest one.
    expect(client('10.0.0.1', { 'x-forwarded-for': '10.0.0.9, 10.0.0.8' })).toBe('10.0.0.9');
    // No header: the proxy itself.
    expect(client('10.0.0.1')).toBe('10.0.0.1');
  });

  it('matches an IPv4 peer of a dual-stack socket, and IPv6 proxies', () => {
    expect(client('::ffff:10.0.0.1', { 'x-forwarded-for': '203.0.113.9' })).toBe('203.0.113.9');
    expect(client('2001:db8:ffff::5', { 'x-forwarded-for': '2001:db8:1::7' })).toBe('2001:db8:1::7');
    expect(client('2001:db8:fffe::5', { 'x-forwarded-for': '2001:db8:1::7' })).toBe('2001:db8:fffe::5');
  });

  it('reads Forwarded for= when there is no X-Forwarded-For, quoted, bracketed and with ports', () => {
    expect(client('10.0.0.1', { forwarded: 'for=203.0.113.9;proto=https;by=10.0.0.1' })).toBe('203.0.113.9');
    expect(client('10.0.0.1', { forwarded: 'for="[2001:db8:cafe::17]:4711"' })).toBe('2001:db8:cafe::17');
    expect(client('10.0.0.1', { forwarded: 'for=1.2.3.4, For="203.0.113.9:47011", for=10.0.0.3' })).toBe('203.0.113.9');
    expect(client('10.0.0.1', { 'x-forwarded-for': '198.51.100.1', forwarded: 'for=203.0.113.9' })).toBe('198.51.100.1');
  });

  it('stops at a hop that is not an address: the last trusted hop is the client', () => {
    expect(client('10.0.0.1', { forwarded: 'for=unknown' })).toBe('10.0.0.1');
    expect(client('10.0.0.1', { forwarded: 'for=_hidden, for=10.0.0.2' })).toBe('10.0.0.2');
    expect(client('10.0.0.1', { 'x-forwarded-for': '203.0.113.9, not-an-ip' })).toBe('10.0.0.1');
    expect(client('10.0.0.1', { 'x-forwarded-for': '0x0a.0.0.1' })).toBe('10.0.0.1');
    expect(client('10.0.0.1', { 'x-forwarded-for': '' })).toBe('10.0.0.1');
  });
});

describe('HOOKRELAY_TRUSTED_PROXIES', () => {
  it('is empty by default and takes comma-separated blocks and addresses', () => {
    expect(parseConfig({}).trustedProxies).toEqual([]);
    expect(parseConfig({ HOOKRELAY_TRUSTED_PROXIES: ' 10.0.0.0/8, 127.0.0.1 ,::1,' }).trustedProxies).toEqual(['10.0.0.0/8', '127.0.0.1', '::1']);
  });

  it('refuses what is not a CIDR block, naming it', () => {
    expect(() => parseConfig({ HOOKRELAY_TRUSTED_PROXIES: '10.0.0.0/8,proxy.local' })).toThrow(ConfigError);
    expect(() => parseConfig({ HOOKRELAY_TRUSTED_PROXIES: '10.0.0.0/33' })).toThrow(/HOOKRELAY_TRUSTED_PROXIES: "10.0.0.0\/33" is not a CIDR block/);
  });
});
