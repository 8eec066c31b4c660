import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';

/** GET /v1/inbound-messages/{id}/body: the stored bytes as a download, whole or one range. */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function stored(body: Buffer, contentType: string): Promise<string> {
  const created = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'bodies', mode: 'cli' } });
  const res = await t.app.inject({ method: 'POST', url: `/in/${created.body.data.secret_token}`, headers: { 'content-type': contentType }, payload: body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.message_id as string;
}

function getBody(id: string, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'GET', url: `/v1/inbound-messages/${id}/body`, headers: { authorization: `Bearer ${t.main.apiKey}`, ...headers } });
}

describe('GET /v1/inbound-messages/{id}/body', () => {
  it('answers the exact bytes as an attachment with the stored content type, never rendered', async () => {
    const body = Buffer.from('<html><script>alert(1)</script></html>\u0000\u00ff', 'latin1');
    const id = await stored(body, 'text/html');
    const res = await getBody(id);
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(body)).toBe(true);
    expect(res.headers['content-type']).toBe('text/html');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="${id}.txt"`);
    expect(res.headers['content-security-policy']).toBe("default-src 'none'; sandbox");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-payload-sha256']).toBe(sha256(body));
  });

  it('serves one byte range as 206 with its Content-Range, and ignores a range it cannot serve', async () => {
    const body = Buffer.from(Array.from({ length: 1000 }, (_, i) => i & 0xff));
    const id = await stored(body, 'application/octet-stream');
    const start = await getBody(id, { range: 'bytes=0-99' });
    expect(start.statusCode).toBe(206);
    expect(start.headers['content-range']).toBe('bytes 0-99/1000');
    expect(start.rawPayload.equals(body.subarray(0, 100))).toBe(true);
    const tail = await getBody(id, { range: 'bytes=900-' });
    expect(tail.statusCode).toBe(206);
    expect(tail.rawPayload.equals(body.subarray(900))).toBe(true);
    const past = await getBody(id, { range: 'bytes=5000-6000' });
    expect(past.statusCode).toBe(200);
    expect(past.rawPayload.equals(body)).toBe(true);
    expect((await getBody(id, { range: 'bytes=0-1,5-9' })).statusCode).toBe(200);
  });

  it("is 404 for a deleted message, an unknown one and another project's", async () => {
    const id = await stored(Buffer.from('{}'), 'application/json');
    const other = await t.createProject();
    const foreign = await t.app.inject({ method: 'GET', url: `/v1/inbound-messages/${id}/body`, headers: { authorization: `Bearer ${other.apiKey}` } });
    expect(foreign.statusCode).toBe(404);
    expect((await t.request('DELETE', `/v1/inbound-messages/${id}`)).status).toBe(200);
    expectError(await t.request('GET', `/v1/inbound-messages/${id}/body`), 404, 'NOT_FOUND', 'deleted');
    expectError(await t.request('GET', '/v1/inbound-messages/01a21f8a-b904-794c-8102-247061534435/body'), 404, 'NOT_FOUND');
  });

  it('GET /v1/inbound-messages/{id} leaves out a body over body_max_bytes', async () => {
    const id = await stored(Buffer.alloc(2000, 0x61), 'text/plain');
    const without = await t.request('GET', `/v1/inbound-messages/${id}?body_encoding=base64&body_max_bytes=1999`);
    expect(without.status, without.raw).toBe(200);
    expect(without.body.data.body).toBeUndefined();
    expect(without.body.data.size_bytes).toBe(2000);
    const withBody = await t.request('GET', `/v1/inbound-messages/${id}?body_encoding=base64&body_max_bytes=2000`);
    expect(Buffer.from(withBody.body.data.body, 'base64').length).toBe(2000);
  });
});
