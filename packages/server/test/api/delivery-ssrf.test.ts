import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Resolver } from '../../src/security/ssrf.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { Receiver, waitForMessage } from '../helpers/receiver.js';

/**
 * The connect-time SSRF guard on real deliveries (docs/api.md, Outbound endpoints), with private networks NOT
 * allowed: a receiver listens on 127.0.0.1, and no delivery may reach it, whatever the URL's
 * spelling or whatever its name resolves to by the time the worker connects.
 */
let receiver: Receiver;
let t: TestApp;
/** After create-time checks pass, names "rebind" to loopback (DNS rebinding). */
let rebound = false;

const resolver: Resolver = async (hostname) => {
  if (hostname === 'rebind.test') return rebound ? ['127.0.0.1'] : ['93.184.216.34'];
  if (hostname === 'mapped.test') return rebound ? ['::ffff:127.0.0.1'] : ['93.184.216.34'];
  return ['93.184.216.34'];
};

beforeAll(async () => {
  receiver = await Receiver.start();
  t = await createTestApp({
    env: { HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_RETRY_SCHEDULE: '60' },
    resolveHost: resolver,
    worker: { requestTimeoutMs: 2000, pollIntervalMs: 1000 },
  });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

/** An endpoint whose stored URL is `url`, as if it had got past the create-time check. */
async function endpointAt(url: string): Promise<string> {
  const res = await t.request('POST', '/v1/endpoints', { body: { url: 'https://hooks.example.com/ssrf' } });
  expect(res.status, res.raw).toBe(201);
  await t.db.sql`UPDATE endpoints SET url = ${url} WHERE id = ${res.body.data.id}`;
  return res.body.data.id;
}

async function expectBlocked(endpointId: string, path: string): Promise<string> {
  const sent = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: { probe: true } } });
  expect(sent.status).toBe(202);
  const m = await waitForMessage(t, sent.body.data.message_id, (r) => r.attempt_count >= 1);
  expect(m.status).toBe('pending_retry');
  expect(m.response_status).toBeNull();
  expect(m.last_error).toMatch(/^blocked: connection to .* refused/);
  expect(receiver.received(path)).toHaveLength(0);
  return m.last_error;
}

describe('connect-time SSRF guard on deliveries', () => {
  it('refuses the loopback receiver at create time', async () => {
    const route = receiver.route();
    expectError(await t.request('POST', '/v1/endpoints', { body: { url: route.url } }), 400, 'INVALID_REQUEST', 'private or reserved');
  });

  it.each([
    ['literal loopback', (port: number, path: string) => `https://127.0.0.1:${port}${path}`, '127.0.0.1'],
    ['IPv6 loopback', (port: number, path: string) => `https://[::1]:${port}${path}`, '::1'],
    ['IPv4-mapped IPv6', (port: number, path: string) => `https://[::ffff:127.0.0.1]:${port}${path}`, '::ffff:7f00:1'],
    ['decimal IPv4', (port: number, path: string) => `https://2130706433:${port}${path}`, '127.0.0.1'],
    ['octal IPv4', (port: number, path: string) => `https://0177.0.0.1:${port}${path}`, '127.0.0.1'],
    ['hex IPv4', (port: number, path: string) => `https://0x7f.1:${port}${path}`, '127.0.0.1'],
  ])('refuses a %s address, and nothing reaches the receiver', async (_name, url, address) => {
    const route = receiver.route();
    const error = await expectBlocked(await endpointAt(url(receiver.portNumber, route.path)), route.path);
    expect(error).toContain(address);
  });

  it.each([
    ['cloud metadata', 'https://169.254.169.254/latest/meta-data/'],
    ['private', 'https://10.1.2.3/hook'],
    ['CGNAT', 'https://100.64.0.1/hook'],
    ['unique-local IPv6', 'https://[fd00::1]/hook'],
  ])('refuses a %s address before dialling', async (_name, url) => {
    await expectBlocked(await endpointAt(url), '/none');
  });

  it('refuses a name that resolves to loopback when the worker connects (DNS rebinding)', async () => {
    rebound = false;
    const route = receiver.route();
    for (const host of ['rebind.test', 'mapped.test']) {
      const created = await t.request('POST', '/v1/endpoints', { body: { url: `https://${host}:${receiver.portNumber}${route.path}` } });
      expect(created.status, created.raw).toBe(201);
      rebound = true;
      const error = await expectBlocked(created.body.data.id, route.path);
      expect(error).toContain(host);
      rebound = false;
    }
  });
});
