import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { createPull, ingestPull } from '../helpers/pull.js';

/** The ingest body limits: the server's (25 MiB by default), an endpoint's own, and /v1's apart. */

const MIB = 1024 * 1024;
const INGEST_LIMIT = 25 * MIB;
// PGlite takes seconds to store 25 MiB (more on a busy machine): the tests that do get room for it.
const LARGE_BODY_TEST_MS = 240_000;

let t: TestApp;
let baseUrl: string;
beforeAll(async () => {
  t = await createTestApp();
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
});

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** A body whose every byte differs from its neighbours', so a shifted or truncated copy cannot match. */
function patterned(size: number): Buffer {
  const body = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) body[i] = (i * 31 + (i >> 8)) & 0xff;
  return body;
}

async function createInbound(body: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'body limits', mode: 'cli', ...body } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

function ingest(token: string, body: Buffer) {
  return t.app.inject({ method: 'POST', url: `/in/${token}`, headers: { 'content-type': 'application/octet-stream' }, payload: body });
}

/** The endpoint's messages with the hash of the bytes their payload store holds (a blob for a large body). */
async function stored(endpointId: string) {
  const rows = await t.db.sql<{ size_bytes: number; payload_sha256: string; payload_key: string }>`
    SELECT size_bytes, payload_sha256, payload_key FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId} ORDER BY id`;
  const out = [];
  for (const row of rows) {
    const bytes = await t.app.services.payloadStore.get(t.db.sql, row.payload_key);
    // Bodies above 256 KiB streamed to the blob store as they arrived; smaller ones are in the commit.
    expect(row.payload_key.startsWith('blob/')).toBe(row.size_bytes > 256 * 1024);
    out.push({ size_bytes: row.size_bytes, payload_sha256: row.payload_sha256, stored_sha256: sha256(bytes!) });
  }
  return out;
}

/** A chunked POST (no Content-Length) over a real socket: the answer's status and envelope. */
function postChunked(path: string, chunks: Buffer[]): Promise<{ status: number; body: { error?: { code: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString('utf8')) }));
    });
    // The server may answer and stop reading before every chunk is written.
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe('inbound ingestion takes bodies up to the server ingest limit', () => {
  it('stores a body of exactly 25 MiB byte for byte, and refuses 25 MiB + 1 with 413 naming the limit and the size', async () => {
    const { id, token } = await createInbound();
    const body = patterned(INGEST_LIMIT);
    const accepted = await ingest(token, body);
    expect(accepted.statusCode, accepted.body).toBe(200);
    const over = Buffer.concat([body, Buffer.from([7])]);
    const refused = await ingest(token, over);
    expect(refused.statusCode).toBe(413);
    expect(refused.json().error).toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      message: `request body of ${INGEST_LIMIT + 1} bytes is larger than the limit of ${INGEST_LIMIT} bytes`,
    });
    const rows = await stored(id);
    expect(rows).toEqual([{ size_bytes: INGEST_LIMIT, payload_sha256: sha256(body), stored_sha256: sha256(body) }]);
  }, LARGE_BODY_TEST_MS);

  it('keeps /v1 at its own limit (1 MiB)', async () => {
    const big = { url: 'https://example.com/hooks', description: 'x'.repeat(MIB) };
    const res = await t.request('POST', '/v1/endpoints', { body: big });
    expectError(res, 413, 'PAYLOAD_TOO_LARGE', `larger than the limit of ${MIB} bytes`);
  });
});

describe("an endpoint's max_body_bytes", () => {
  it('is shown, lowers the limit for its endpoint only, and can be cleared', async () => {
    const small = await createInbound({ max_body_bytes: 1000 });
    const other = await createInbound();
    const shown = await t.request('GET', `/v1/inbound-endpoints/${small.id}`);
    expect(shown.body.data.max_body_bytes).toBe(1000);
    expect((await t.request('GET', `/v1/inbound-endpoints/${other.id}`)).body.data.max_body_bytes).toBeNull();

    expect((await ingest(small.token, patterned(1000))).statusCode).toBe(200);
    const refused = await ingest(small.token, patterned(1001));
    expect(refused.statusCode).toBe(413);
    expect(refused.json().error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: 'request body of 1001 bytes is larger than the limit of 1000 bytes' });
    expect((await ingest(other.token, patterned(5000))).statusCode).toBe(200);

    const cleared = await t.request('PATCH', `/v1/inbound-endpoints/${small.id}`, { body: { max_body_bytes: null } });
    expect(cleared.status, cleared.raw).toBe(200);
    expect((await t.request('GET', `/v1/inbound-endpoints/${small.id}`)).body.data.max_body_bytes).toBeNull();
    expect((await ingest(small.token, patterned(5000))).statusCode).toBe(200);
    expect((await stored(small.id)).map((r) => r.size_bytes)).toEqual([1000, 5000]);

    const lowered = await t.request('PATCH', `/v1/inbound-endpoints/${small.id}`, { body: { max_body_bytes: 10 } });
    expect(lowered.status, lowered.raw).toBe(200);
    expect((await ingest(small.token, patterned(11))).statusCode).toBe(413);
  });

  it('refuses a chunked body once it passes the limit, and the connection answers the envelope', async () => {
    const { id, token } = await createInbound({ max_body_bytes: 4096 });
    const refused = await postChunked(`/in/${token}`, [patterned(3000), patterned(3000), patterned(3000)]);
    expect(refused.status).toBe(413);
    expect(refused.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: 'request body is larger than the limit of 4096 bytes' });
    const accepted = await postChunked(`/in/${token}`, [patterned(2000), patterned(2000)]);
    expect(accepted.status).toBe(200);
    expect((await stored(id)).map((r) => r.size_bytes)).toEqual([4000]);
  });

  it('cannot be set above the server ingest limit', async () => {
    const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'too big', mode: 'cli', max_body_bytes: INGEST_LIMIT + 1 } });
    expectError(res, 400, 'INVALID_REQUEST', `must be at most ${INGEST_LIMIT}`);
    expect(res.body.error.details).toEqual([{ path: 'body.max_body_bytes', message: expect.stringContaining(String(INGEST_LIMIT)) }]);
    const { id } = await createInbound();
    expectError(await t.request('PATCH', `/v1/inbound-endpoints/${id}`, { body: { max_body_bytes: INGEST_LIMIT + 1 } }), 400, 'INVALID_REQUEST', 'max_body_bytes');
    expectError(await t.request('PATCH', `/v1/inbound-endpoints/${id}`, { body: { max_body_bytes: 0 } }), 400, 'INVALID_REQUEST', 'max_body_bytes');
  });

  it('refuses a body over an unknown endpoint as 404, without reading it', async () => {
    const res = await ingest('0123456789abcdef0123456789abcdef', patterned(2 * MIB));
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('NOT_FOUND');
  });
});

describe('pull ingestion', () => {
  it('takes 25 MiB, refuses one byte more, and honours the endpoint limit', async () => {
    const ep = await createPull(t);
    const body = patterned(INGEST_LIMIT);
    const headers = { 'content-type': 'application/octet-stream' };
    expect((await ingestPull(t, ep, { body, headers })).statusCode).toBe(200);
    const over = await ingestPull(t, ep, { body: Buffer.concat([body, Buffer.from([1])]), headers });
    expect(over.statusCode).toBe(413);
    expect(over.json().error.message).toBe(`request body of ${INGEST_LIMIT + 1} bytes is larger than the limit of ${INGEST_LIMIT} bytes`);
    const [row] = await t.db.sql<{ size_bytes: number; stored_sha256: string }>`
      SELECT e.size_bytes, encode(sha256(p.data), 'hex') AS stored_sha256
      FROM pull_events e JOIN payloads p ON p.key = e.payload_key WHERE e.endpoint_id = ${ep.id}`;
    expect(row).toEqual({ size_bytes: INGEST_LIMIT, stored_sha256: sha256(body) });

    const small = await createPull(t, { max_body_bytes: 100 });
    expect((await t.request('GET', `/v1/pull-endpoints/${small.id}`)).body.data.max_body_bytes).toBe(100);
    expect((await ingestPull(t, small, { body: patterned(100), headers })).statusCode).toBe(200);
    const refused = await ingestPull(t, small, { body: patterned(101), headers });
    expect(refused.statusCode).toBe(413);
    expect(refused.json().error.message).toBe('request body of 101 bytes is larger than the limit of 100 bytes');
    const raised = await t.request('PATCH', `/v1/pull-endpoints/${small.id}`, { body: { max_body_bytes: null } });
    expect(raised.status, raised.raw).toBe(200);
    expect(raised.body.data.max_body_bytes).toBeNull();
    expect((await ingestPull(t, small, { body: patterned(101), headers })).statusCode).toBe(200);
    expectError(await t.request('POST', '/v1/pull-endpoints', { body: { name: 'big', max_body_bytes: INGEST_LIMIT + 1 } }), 400, 'INVALID_REQUEST', 'max_body_bytes');
  }, LARGE_BODY_TEST_MS);
});
