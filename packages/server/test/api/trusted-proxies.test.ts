import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

/**
 * An inbound endpoint's IP allowlist behind a reverse proxy: the forwarded client address counts
 * only when the peer is a trusted proxy (HOOKRELAY_TRUSTED_PROXIES).
 */
let behindProxy: TestApp;
let direct: TestApp;
let baseUrl: string;

beforeAll(async () => {
  behindProxy = await createTestApp({ env: { HOOKRELAY_TRUSTED_PROXIES: '127.0.0.1/32,::1,10.0.0.0/8' } });
  direct = await createTestApp();
  baseUrl = await behindProxy.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await behindProxy?.close();
  await direct?.close();
});

async function allowlisted(t: TestApp): Promise<string> {
  const res = await t.request('POST', '/v1/inbound-endpoints', {
    body: { name: 'allowlisted', mode: 'cli', verify_ip_allowlist: true, allowed_cidrs: ['203.0.113.0/24'] },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.secret_token as string;
}

async function post(t: TestApp, token: string, remoteAddress: string, headers: Record<string, string>): Promise<number> {
  const res = await t.app.inject({ method: 'POST', url: `/in/${token}`, remoteAddress, headers: { 'content-type': 'application/json', ...headers }, payload: '{}' });
  return res.statusCode;
}

describe('an IP allowlist behind a trusted proxy', () => {
  it('admits the forwarded address from a trusted proxy, over a real connection', async () => {
    const token = await allowlisted(behindProxy);
    const admitted = await fetch(`${baseUrl}/in/${token}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.9' }, body: '{}' });
    expect(admitted.status, await admitted.text()).toBe(200);
    const outside = await fetch(`${baseUrl}/in/${token}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.9' }, body: '{}' });
    expect(outside.status).toBe(401);
    // The proxy's own address is not in the allowlist.
    const bare = await fetch(`${baseUrl}/in/${token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(bare.status).toBe(401);
  });

  it('records the forwarded address as the source address of a refused request', async () => {
    const created = await behindProxy.request('POST', '/v1/inbound-endpoints', {
      body: { name: 'allowlisted', mode: 'cli', verify_ip_allowlist: true, allowed_cidrs: ['203.0.113.0/24'] },
    });
    expect(await post(behindProxy, created.body.data.secret_token, '10.0.0.1', { 'x-forwarded-for': '198.51.100.9' })).toBe(401);
    const deadline = Date.now() + 5_000;
    let listed = await behindProxy.request('GET', `/v1/inbound-endpoints/${created.body.data.id}/rejections`);
    while (listed.body.data?.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      listed = await behindProxy.request('GET', `/v1/inbound-endpoints/${created.body.data.id}/rejections`);
    }
    expect(listed.status, listed.raw).toBe(200);
    expect(listed.body.data.map((r: { source_address: string }) => r.source_address)).toEqual(['198.51.100.9']);
  });

  it('admits it through a chain of trusted proxies and from Forwarded, never a spoofed entry left of the client', async () => {
    const token = await allowlisted(behindProxy);
    expect(await post(behindProxy, token, '10.0.0.1', { 'x-forwarded-for': '203.0.113.9, 10.2.3.4' })).toBe(200);
    expect(await post(behindProxy, token, '10.0.0.1', { forwarded: 'for="203.0.113.9:4711";proto=https' })).toBe(200);
    // The client wrote 203.0.113.9 itself; the proxy appended the address it saw.
    expect(await post(behindProxy, token, '10.0.0.1', { 'x-forwarded-for': '203.0.113.9, 198.51.100.9' })).toBe(401);
  });

  it('refuses the forwarded address from a peer that is not a trusted proxy', async () => {
    const token = await allowlisted(behindProxy);
    expect(await post(behindProxy, token, '198.51.100.2', { 'x-forwarded-for': '203.0.113.9' })).toBe(401);
    expect(await post(behindProxy, token, '198.51.100.2', { forwarded: 'for=203.0.113.9' })).toBe(401);
  });

  it('believes no proxy without HOOKRELAY_TRUSTED_PROXIES', async () => {
    const token = await allowlisted(direct);
    expect(await post(direct, token, '127.0.0.1', { 'x-forwarded-for': '203.0.113.9' })).toBe(401);
    expect(await post(direct, token, '203.0.113.9', {})).toBe(200);
  });
});
