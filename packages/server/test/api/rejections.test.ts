import { createHash, createHmac } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { createPull, ingestPull } from '../helpers/pull.js';

/** Refused requests at ingest URLs: what is kept, what is shown, and the bounds. */
let t: TestApp;
beforeAll(async () => {
  // A limit above the 64 KiB kept of a body, so that a refused body can be longer than what is kept.
  t = await createTestApp({ env: { HOOKRELAY_MAX_INGEST_BODY_BYTES: String(200 * 1024) } });
});
afterAll(async () => {
  await t?.close();
});

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

async function inbound(settings: Record<string, unknown> = {}, apiKey?: string): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'refusals', mode: 'cli', ...settings }, ...(apiKey ? { apiKey } : {}) });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

function send(url: string, options: { method?: string; body?: string | Buffer; headers?: Record<string, string> } = {}) {
  return t.app.inject({
    method: (options.method ?? 'POST') as 'POST',
    url,
    headers: { 'content-type': 'application/json', ...options.headers },
    ...(options.body !== undefined ? { payload: options.body } : {}),
  });
}

/** The endpoint's refused requests, once the recorder has written what it holds. */
async function rejections(kind: 'inbound' | 'pull', id: string, query = '') {
  await t.app.engines.ingest!.rejections.idle();
  const res = await t.request('GET', `/v1/${kind}-endpoints/${id}/rejections${query}`);
  expect(res.status, res.raw).toBe(200);
  return res.body as { data: any[]; meta: { has_more: boolean; next_cursor: string | null } };
}

async function storedRejections(endpointId: string): Promise<number> {
  const [row] = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM ingest_rejections WHERE endpoint_id = ${endpointId}::uuid`;
  return row!.n;
}

const body = '{"action":"opened","number":7}';

describe('each refusal at an inbound ingest URL is kept with its reason', () => {
  it('signature_missing names the header looked for and the scheme', async () => {
    const { id, token } = await inbound({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'gh-secret-value' });
    expect((await send(`/in/${token}/hooks?x=1`, { body, headers: { 'x-github-event': 'issues' } })).statusCode).toBe(401);
    const { data } = await rejections('inbound', id);
    expect(data).toHaveLength(1);
    const r = data[0];
    expect(r).toMatchObject({
      endpoint_kind: 'inbound',
      endpoint_id: id,
      reason: 'signature_missing',
      status: 401,
      method: 'POST',
      path: '/hooks',
      query: 'x=1',
      size_bytes: Buffer.byteLength(body),
      body_sha256: sha256(body),
      body_truncated: false,
      source_address: '127.0.0.1',
    });
    expect(r.detail).toContain('no x-hub-signature-256 header');
    expect(r.detail).toContain('github');
    expect(r.raw_headers).toContainEqual(['x-github-event', 'issues']);
  });

  it('signature_mismatch says which header and content, never the secret or the expected signature', async () => {
    const secret = 'the-real-secret-1234';
    const { id, token } = await inbound({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: secret });
    const wrong = await githubSign('a-mistyped-secret', body);
    expect((await send(`/in/${token}`, { body, headers: { 'x-hub-signature-256': wrong } })).statusCode).toBe(401);
    const { data } = await rejections('inbound', id);
    expect(data.map((r) => r.reason)).toEqual(['signature_mismatch']);
    expect(data[0].detail).toContain('the x-hub-signature-256 header does not match');
    const detail = await t.request('GET', `/v1/inbound-endpoints/${id}/rejections/${data[0].id}`);
    const everything = detail.raw;
    const expected = await githubSign(secret, body);
    expect(everything).not.toContain(secret);
    expect(everything).not.toContain(expected.slice('sha256='.length));
    // What the sender sent is shown as received.
    expect(detail.body.data.raw_headers).toContainEqual(['x-hub-signature-256', wrong]);
  });

  it('signature_malformed says what form was expected', async () => {
    const { id, token } = await inbound({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'gh-secret-value' });
    await send(`/in/${token}`, { body, headers: { 'x-hub-signature-256': 'sha1=abc' } });
    const { data } = await rejections('inbound', id);
    expect(data[0].reason).toBe('signature_malformed');
    expect(data[0].detail).toContain('sha256= followed by 64 hex digits');
  });

  it('timestamp_out_of_tolerance gives the tolerance and the skew', async () => {
    const secret = 'whsec_test_secret';
    const { id, token } = await inbound({ verify_hmac: true, hmac_scheme: 'stripe', hmac_secret: secret, timestamp_tolerance_seconds: 300 });
    const stripe = new Stripe('sk_test_x');
    const old = Math.floor(Date.now() / 1000) - 3600;
    const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: old });
    expect((await send(`/in/${token}`, { body, headers: { 'stripe-signature': header } })).statusCode).toBe(401);
    const { data } = await rejections('inbound', id);
    expect(data[0].reason).toBe('timestamp_out_of_tolerance');
    expect(data[0].detail).toMatch(/is 36\d\d s away from the server's clock, beyond the endpoint's tolerance of 300 s/);
  });

  it('timestamp_missing names the timestamp header', async () => {
    const secret = 'slack-signing-secret';
    const { id, token } = await inbound({ verify_hmac: true, hmac_scheme: 'slack', hmac_secret: secret });
    const signature = `v0=${createHmac('sha256', secret).update(`v0:1:${body}`).digest('hex')}`;
    await send(`/in/${token}`, { body, headers: { 'x-slack-signature': signature } });
    const { data } = await rejections('inbound', id);
    expect(data[0].reason).toBe('timestamp_missing');
    expect(data[0].detail).toContain('no x-slack-request-timestamp header');
  });

  it('token_missing and token_mismatch; the static token header is redacted, the query parameter too', async () => {
    const { id, token } = await inbound({ verify_static_token: true, static_token_header_name: 'Authorization', static_token_query_param: 'key', static_token: 'Bearer s3cret' });
    await send(`/in/${token}`, { body });
    await send(`/in/${token}?a=1&key=Bearer%20s3cre&b=2`, { body, headers: { authorization: 'Bearer s3cre' } });
    const { data } = await rejections('inbound', id);
    expect(data.map((r) => r.reason)).toEqual(['token_mismatch', 'token_missing']);
    expect(data[1].detail).toBe('no static token: the endpoint expects it in the authorization header or the ?key= query parameter; check the sender\'s configuration');
    expect(data[0].raw_headers).toContainEqual(['authorization', '[redacted]']);
    expect(data[0].query).toBe('a=1&key=[redacted]&b=2');
    const all = JSON.stringify(data);
    expect(all).not.toContain('s3cre');
  });

  it('ip_not_allowed gives the source address and the allowlist', async () => {
    const { id, token } = await inbound({ verify_ip_allowlist: true, allowed_cidrs: ['192.0.2.0/24'] });
    await send(`/in/${token}`, { body });
    const { data } = await rejections('inbound', id);
    expect(data[0].reason).toBe('ip_not_allowed');
    expect(data[0].detail).toContain('the request came from 127.0.0.1, which is not in the endpoint\'s IP allowlist (192.0.2.0/24)');
  });

  it('endpoint_paused: 503, kept with the body', async () => {
    const { id, token } = await inbound();
    expect((await t.request('POST', `/v1/inbound-endpoints/${id}/pause`)).status).toBe(200);
    expect((await send(`/in/${token}`, { body })).statusCode).toBe(503);
    const { data } = await rejections('inbound', id);
    expect(data[0]).toMatchObject({ reason: 'endpoint_paused', status: 503, body_sha256: sha256(body) });
    expect(data[0].detail).toContain('the endpoint is paused');
  });

  it('body_too_large: 413 from the error path, with the announced size and the limit', async () => {
    const { id, token } = await inbound();
    const big = Buffer.alloc(250 * 1024, 0x61);
    expect((await send(`/in/${token}`, { body: big })).statusCode).toBe(413);
    const { data } = await rejections('inbound', id);
    expect(data[0]).toMatchObject({ reason: 'body_too_large', status: 413, size_bytes: big.length, body_sha256: null, body_truncated: true });
    expect(data[0].detail).toContain(`the body is ${big.length} bytes (its Content-Length), over the ingest limit of ${200 * 1024} bytes`);
  });

  it('method_not_allowed: 405 with Allow', async () => {
    const { id, token } = await inbound();
    const res = await send(`/in/${token}/x`, { method: 'TRACE' });
    expect(res.statusCode).toBe(405);
    expect(res.json().error.code).toBe('METHOD_NOT_ALLOWED');
    expect(res.headers.allow).toBe('POST, PUT, PATCH, DELETE, GET, HEAD, OPTIONS');
    const { data } = await rejections('inbound', id);
    expect(data[0]).toMatchObject({ reason: 'method_not_allowed', status: 405, method: 'TRACE', path: '/x' });
  });

  it('keeps the first 64 KiB of a body, its full size and SHA-256; the detail has the prefix in base64', async () => {
    const { id, token } = await inbound({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'gh-secret-value' });
    const large = Buffer.alloc(100 * 1024);
    for (let i = 0; i < large.length; i++) large[i] = i % 251;
    await send(`/in/${token}`, { body: large, headers: { 'content-type': 'application/octet-stream' } });
    const { data } = await rejections('inbound', id);
    expect(data[0]).toMatchObject({ size_bytes: large.length, body_sha256: sha256(large), body_truncated: true });
    const detail = await t.request('GET', `/v1/inbound-endpoints/${id}/rejections/${data[0].id}`);
    expect(detail.body.data.body_encoding).toBe('base64');
    expect(Buffer.from(detail.body.data.body, 'base64').equals(large.subarray(0, 64 * 1024))).toBe(true);
  });

  it('keeps nothing for an accepted request or for a token that matches no endpoint', async () => {
    const { id, token } = await inbound();
    expect((await send(`/in/${token}`, { body })).statusCode).toBe(200);
    const before = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM ingest_rejections`;
    expect((await send(`/in/${'x'.repeat(token.length)}`, { body })).statusCode).toBe(404);
    expect((await send(`/in/${'x'.repeat(token.length)}`, { method: 'TRACE' })).statusCode).toBe(404);
    const after = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM ingest_rejections`;
    expect(after[0]!.n).toBe(before[0]!.n);
    expect((await rejections('inbound', id)).data).toEqual([]);
  });
});

describe('refusals at a pull ingest URL', () => {
  it('keeps paused, too large and method refusals; never the URL token; nothing for a wrong token', async () => {
    const endpoint = await createPull(t);
    expect((await ingestPull(t, endpoint, { method: 'TRACE' })).statusCode).toBe(405);
    expect((await ingestPull(t, endpoint, { body: Buffer.alloc(250 * 1024, 0x62) })).statusCode).toBe(413);
    expect((await t.request('POST', `/v1/pull-endpoints/${endpoint.id}/pause`)).status).toBe(200);
    expect((await ingestPull(t, endpoint, { body, query: 'q=1' })).statusCode).toBe(503);
    expect((await ingestPull(t, { path: `/pull/${endpoint.id}/${'y'.repeat(endpoint.token.length)}` }, { body })).statusCode).toBe(404);
    const { data } = await rejections('pull', endpoint.id);
    expect(data.map((r) => [r.reason, r.status, r.endpoint_kind])).toEqual([
      ['endpoint_paused', 503, 'pull'],
      ['body_too_large', 413, 'pull'],
      ['method_not_allowed', 405, 'pull'],
    ]);
    expect(data[0]).toMatchObject({ path: '/', query: 'q=1' });
    const record = await t.request('GET', `/v1/pull-endpoints/${endpoint.id}`);
    expect(record.body.data.rejections_dropped_count).toBe(0);
    expect(JSON.stringify(data)).not.toContain(endpoint.token);
    // The pull list is not the inbound one.
    expectError(await t.request('GET', `/v1/inbound-endpoints/${endpoint.id}/rejections`), 404, 'ENDPOINT_NOT_FOUND');
  });
});

describe('the list', () => {
  it('is newest first, keyset paged, filtered by reason and time', async () => {
    const { id, token } = await inbound({ verify_static_token: true, static_token_header_name: 'x-token', static_token: 'tok' });
    await send(`/in/${token}`, { body });
    await send(`/in/${token}`, { body, headers: { 'x-token': 'nope' } });
    const middle = new Date().toISOString();
    await send(`/in/${token}`, { body, method: 'TRACE' });
    await send(`/in/${token}`, { body, headers: { 'x-token': 'nope2' } });
    const all = await rejections('inbound', id);
    expect(all.data.map((r) => r.reason)).toEqual(['token_mismatch', 'method_not_allowed', 'token_mismatch', 'token_missing']);
    const first = await rejections('inbound', id, '?limit=3');
    expect(first.data).toHaveLength(3);
    expect(first.meta.has_more).toBe(true);
    const second = await rejections('inbound', id, `?limit=3&cursor=${first.meta.next_cursor}`);
    expect(second.data.map((r) => r.id)).toEqual([all.data[3].id]);
    expect(second.meta).toMatchObject({ has_more: false, next_cursor: null });
    expect((await rejections('inbound', id, '?reason=token_mismatch')).data).toHaveLength(2);
    const before = (await rejections('inbound', id, `?received_before=${encodeURIComponent(middle)}`)).data;
    const after = (await rejections('inbound', id, `?received_after=${encodeURIComponent(middle)}`)).data;
    expect(before.length + after.length).toBe(4);
    expect(after.map((r) => r.reason)).toContain('method_not_allowed');
    expectError(await t.request('GET', `/v1/inbound-endpoints/${id}/rejections?reason=bogus`), 400, 'INVALID_REQUEST', 'query.reason');
    expectError(await t.request('GET', `/v1/inbound-endpoints/${id}/rejections?cursor=abc`), 400, 'INVALID_REQUEST');
  });

  it('is invisible to other projects and goes with the endpoint', async () => {
    const { id, token } = await inbound({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'gh-secret-value' });
    await send(`/in/${token}`, { body });
    const { data } = await rejections('inbound', id);
    const other = await t.createProject();
    expectError(await t.request('GET', `/v1/inbound-endpoints/${id}/rejections`, { apiKey: other.apiKey }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('GET', `/v1/inbound-endpoints/${id}/rejections/${data[0].id}`, { apiKey: other.apiKey }), 404, 'ENDPOINT_NOT_FOUND');
    // Another endpoint of the same project does not reach it either.
    const sibling = await inbound();
    expectError(await t.request('GET', `/v1/inbound-endpoints/${sibling.id}/rejections/${data[0].id}`), 404, 'NOT_FOUND');
    expect((await t.request('DELETE', `/v1/inbound-endpoints/${id}`)).status).toBe(200);
    expect(await storedRejections(id)).toBe(0);
    expectError(await t.request('GET', `/v1/inbound-endpoints/${id}/rejections`), 404, 'ENDPOINT_NOT_FOUND');

    const pull = await createPull(t);
    await ingestPull(t, pull, { method: 'TRACE' });
    await rejections('pull', pull.id);
    expect(await storedRejections(pull.id)).toBe(1);
    expect((await t.request('DELETE', `/v1/pull-endpoints/${pull.id}`)).status).toBe(200);
    expect(await storedRejections(pull.id)).toBe(0);
  });
});

describe('bounds', () => {
  it('records at most the per-endpoint rate and counts the rest, in the endpoint and in /metrics', async () => {
    const { id, token } = await inbound({ verify_static_token: true, static_token_header_name: 'x-token', static_token: 'tok' });
    const started = Date.now();
    const total = 60;
    for (let i = 0; i < total; i++) await send(`/in/${token}`, { body });
    const seconds = (Date.now() - started) / 1000;
    await t.app.engines.ingest!.rejections.idle();
    const stored = await storedRejections(id);
    // A burst of 20, then 10 a second.
    expect(stored).toBeGreaterThanOrEqual(20);
    expect(stored).toBeLessThanOrEqual(20 + Math.ceil(seconds * 10));
    const endpoint = await t.request('GET', `/v1/inbound-endpoints/${id}`);
    expect(endpoint.body.data.rejected_count).toBe(total);
    expect(endpoint.body.data.rejections_dropped_count).toBe(total - stored);
    // A pull endpoint counts its dropped refusals the same way.
    const pull = await createPull(t);
    await t.request('POST', `/v1/pull-endpoints/${pull.id}/pause`);
    for (let i = 0; i < 30; i++) await ingestPull(t, pull, { body });
    await t.app.engines.ingest!.rejections.idle();
    const pullStored = await storedRejections(pull.id);
    expect(pullStored).toBeLessThan(30);
    expect((await t.request('GET', `/v1/pull-endpoints/${pull.id}`)).body.data.rejections_dropped_count).toBe(30 - pullStored);
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    const dropped = /hookrelay_ingest_rejections_total\{outcome="dropped"\} (\d+)/.exec(metrics.body);
    expect(Number(dropped?.[1])).toBeGreaterThanOrEqual(total - stored);
  });

  it('writes the counts of a flood it does not store together, once per interval, and all of them when idle', async () => {
    // Nothing recorded (no tokens), counts written at most once a minute: only idle() writes them.
    const slow = await createTestApp({ db: t.db, rejections: { perSecond: 1e-9, burst: 0, countsEveryMs: 60_000 } });
    try {
      const res = await slow.request('POST', '/v1/inbound-endpoints', {
        body: { name: 'flooded', mode: 'cli', verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'gh-secret-value' },
      });
      const { id, secret_token: token } = res.body.data;
      const counts = async () => (await slow.request('GET', `/v1/inbound-endpoints/${id}`)).body.data as { rejected_count: number; rejections_dropped_count: number };
      for (let i = 0; i < 50; i++) {
        const refused = await slow.app.inject({ method: 'POST', url: `/in/${token}`, payload: body, headers: { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` } });
        expect(refused.statusCode).toBe(401);
      }
      // Refused and counted in memory; nothing written while the interval runs.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await counts()).toMatchObject({ rejected_count: 0, rejections_dropped_count: 0 });
      await slow.app.engines.ingest!.rejections.idle();
      expect(await counts()).toMatchObject({ rejected_count: 50, rejections_dropped_count: 50 });
      expect(await storedRejections(id)).toBe(0);
    } finally {
      await slow.close();
    }
    // With a short interval the counts arrive by themselves.
    const quick = await createTestApp({ db: t.db, rejections: { perSecond: 1e-9, burst: 0, countsEveryMs: 20 } });
    try {
      const res = await quick.request('POST', '/v1/inbound-endpoints', { body: { name: 'flooded', mode: 'cli', verify_static_token: true, static_token_header_name: 'x-token', static_token: 'tok' } });
      const { id, secret_token: token } = res.body.data;
      for (let i = 0; i < 5; i++) expect((await quick.app.inject({ method: 'POST', url: `/in/${token}`, payload: body })).statusCode).toBe(401);
      let counted = 0;
      for (let attempt = 0; attempt < 100 && counted < 5; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        counted = (await quick.request('GET', `/v1/inbound-endpoints/${id}`)).body.data.rejections_dropped_count;
      }
      expect(counted).toBe(5);
    } finally {
      await quick.close();
    }
  });

  it('keeps at most 1,000 per endpoint, the newest', async () => {
    const fast = await createTestApp({ db: t.db, rejections: { perSecond: 1e6, burst: 1e6 } });
    try {
      const res = await fast.request('POST', '/v1/inbound-endpoints', { body: { name: 'capped', mode: 'cli' } });
      const { id, secret_token: token } = res.body.data;
      expect((await fast.request('POST', `/v1/inbound-endpoints/${id}/pause`)).status).toBe(200);
      const total = 1010;
      for (let i = 0; i < total; i++) {
        await fast.app.inject({ method: 'POST', url: `/in/${token}/n${i}`, payload: 'x' });
        // Several commits, so that the cap is applied across batches too.
        if (i % 300 === 0) await fast.app.engines.ingest!.rejections.idle();
      }
      await fast.app.engines.ingest!.rejections.idle();
      expect(await storedRejections(id)).toBe(1000);
      const paths = await fast.db.sql<{ path: string }>`SELECT path FROM ingest_rejections WHERE endpoint_id = ${id}::uuid ORDER BY id LIMIT 1`;
      expect(paths[0]!.path).toBe(`/n${total - 1000}`);
    } finally {
      await fast.close();
    }
  });
});
