import { createHash, createHmac } from 'node:crypto';
import { existsSync, readdirSync, rmSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { sign as githubSign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileBlobStore, readBlob } from '../../src/storage/blob-store.js';
import { PayloadUnavailableError } from '../../src/storage/payload-store.js';
import { runSweeperOnce } from '../../src/sweepers/runner.js';
import { abandonedUploadsSweeper } from '../../src/sweepers/blob-uploads.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { backend } from '../helpers/database.js';

/**
 * Bodies above 256 KiB stream to the blob store as they arrive (docs/architecture.md, Storage):
 * files in the data dir on PGlite, rows of payload_chunks on PostgreSQL. What the sender is told,
 * what the message row names, and what is left behind by every path that stores nothing.
 */

const KIB = 1024;
const MIB = 1024 * KIB;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const blobDir = () => path.join(t.app.services.config.dataDir, 'payloads');
/** The blob files; none (and no folder) before the first large body. */
const blobFiles = (): string[] => (existsSync(blobDir()) ? readdirSync(blobDir()) : []);

/** A JSON body of about `size` bytes with its `type` after the bulk, as Stripe sends it. */
function largeJson(size: number, type = 'invoice.paid'): string {
  const filler = 'x'.repeat(size);
  return JSON.stringify({ id: 'evt_1', object: 'event', data: { object: { filler } }, type });
}

async function endpoint(settings: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'streamed', mode: 'cli', ...settings } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

function post(token: string, body: string | Buffer, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'POST', url: `/in/${token}`, payload: body, headers: { 'content-type': 'application/json', ...headers } });
}

async function messages(endpointId: string) {
  return t.db.sql<{ id: string; size_bytes: number; payload_sha256: string; payload_key: string; event_type: string | null; verified: string[] }>`
    SELECT id, size_bytes, payload_sha256, payload_key, event_type, verified FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId} ORDER BY id`;
}

/** Every blob the store holds and every upload still pending: both empty once nothing is in flight. */
async function leftovers(): Promise<{ blobs: number; pending: number }> {
  const [pending] = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM payload_uploads`;
  if (backend() === 'pglite') return { blobs: blobFiles().length, pending: pending!.n };
  const [chunks] = await t.db.sql<{ n: number }>`SELECT count(DISTINCT key)::int AS n FROM payload_chunks`;
  return { blobs: chunks!.n, pending: pending!.n };
}

/** Leftovers once the removals that follow an answer are done (they run after it). */
async function leftoversSettled(expected: { blobs: number; pending: number }): Promise<{ blobs: number; pending: number }> {
  let seen = await leftovers();
  for (let i = 0; i < 100 && (seen.blobs !== expected.blobs || seen.pending !== expected.pending); i++) {
    await new Promise((r) => setTimeout(r, 20));
    seen = await leftovers();
  }
  return seen;
}

async function blobKeys(): Promise<string[]> {
  if (backend() === 'pglite') return blobFiles().map((name) => `blob/${name}`);
  return (await t.db.sql<{ key: string }>`SELECT DISTINCT key FROM payload_chunks`).map((r) => r.key);
}

/** Removes every blob, and with it every message's body: each test starts from an empty store. */
async function emptyStore(): Promise<void> {
  await t.db.sql`DELETE FROM payload_uploads`;
  const keys = await blobKeys();
  if (keys.length > 0) await t.app.services.payloadStore.deleteMany(t.db.sql, keys);
}

describe('a body above 256 KiB', () => {
  it('is verified, typed and stored byte for byte without the embedded database, and read back whole or by range', async () => {
    await emptyStore();
    const secret = 'gh-secret';
    const { id, token } = await endpoint({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: secret });
    const body = largeJson(3 * MIB);
    const res = await post(token, body, { 'x-hub-signature-256': await githubSign(secret, body), 'x-github-event': 'push' });
    expect(res.statusCode, res.body).toBe(200);
    const [row] = await messages(id);
    expect(row).toMatchObject({ size_bytes: Buffer.byteLength(body), payload_sha256: sha256(body), event_type: 'push', verified: ['hmac'] });
    expect(row!.payload_key).toMatch(/^blob\/[0-9a-f-]{36}$/);
    expect(await leftovers()).toEqual({ blobs: 1, pending: 0 });
    // Not a byte of it in the database's payload table.
    expect(await t.db.sql`SELECT 1 FROM payloads WHERE key = ${row!.payload_key}`).toHaveLength(0);

    const whole = await t.request('GET', `/v1/inbound-messages/${row!.id}/body`);
    expect(whole.status).toBe(200);
    expect(whole.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(sha256(whole.raw)).toBe(sha256(body));
    const part = await t.request('GET', `/v1/inbound-messages/${row!.id}/body`, { headers: { range: `bytes=${MIB - 10}-${MIB + 9}` } });
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes ${MIB - 10}-${MIB + 9}/${Buffer.byteLength(body)}`);
    expect(part.raw).toBe(body.slice(MIB - 10, MIB + 10));
  });

  it("takes its event type from the body's JSON after the bulk, and a Stripe signature with a timestamp", async () => {
    const secret = 'whsec_stripe_streamed';
    const { id, token } = await endpoint({ verify_hmac: true, hmac_scheme: 'stripe', hmac_secret: secret });
    const body = largeJson(MIB, 'customer.subscription.updated');
    const header = new Stripe('sk_test_unused').webhooks.generateTestHeaderString({ payload: body, secret });
    expect((await post(token, body, { 'stripe-signature': header })).statusCode).toBe(200);
    // One byte changed at the end: the HMAC computed on the way no longer matches.
    expect((await post(token, `${body.slice(0, -1)} `, { 'stripe-signature': header })).statusCode).toBe(401);
    const rows = await messages(id);
    expect(rows.map((r) => r.event_type)).toEqual(['customer.subscription.updated']);
  });

  it('refused by its signature leaves no message, no blob and no pending upload, and is recorded with its whole size and hash', async () => {
    await emptyStore();
    const { id, token } = await endpoint({ verify_hmac: true, hmac_scheme: 'hex', hmac_header_name: 'X-Sig', hmac_secret: 'hex-secret' });
    const body = largeJson(MIB);
    const wrong = createHmac('sha256', 'other').update(body).digest('hex');
    expect((await post(token, body, { 'x-sig': wrong })).statusCode).toBe(401);
    expect(await messages(id)).toHaveLength(0);
    expect(await leftoversSettled({ blobs: 0, pending: 0 })).toEqual({ blobs: 0, pending: 0 });
    let refused: { size_bytes: number; body_sha256: string; body_truncated: boolean } | undefined;
    for (let i = 0; i < 100 && refused === undefined; i++) {
      const list = await t.request('GET', `/v1/inbound-endpoints/${id}/rejections`);
      refused = list.body.data[0];
      if (refused === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    expect(refused).toMatchObject({ size_bytes: Buffer.byteLength(body), body_sha256: sha256(body), body_truncated: true });
  });

  it('sent twice with one idempotency key is stored once; the second blob is removed', async () => {
    await emptyStore();
    const { id, token } = await endpoint({ idempotency_header_names: ['Idempotency-Key'] });
    const body = largeJson(MIB);
    const first = await post(token, body, { 'idempotency-key': 'k1' });
    const second = await post(token, body, { 'idempotency-key': 'k1' });
    expect(first.statusCode).toBe(200);
    expect(second.headers['hookrelay-duplicate']).toBe('true');
    expect(second.json().data.message_id).toBe(first.json().data.message_id);
    expect(await messages(id)).toHaveLength(1);
    expect(await leftoversSettled({ blobs: 1, pending: 0 })).toEqual({ blobs: 1, pending: 0 });
  });

  it('to a paused endpoint is refused 503 and leaves nothing', async () => {
    await emptyStore();
    const { id, token } = await endpoint();
    expect((await t.request('POST', `/v1/inbound-endpoints/${id}/pause`)).status).toBe(200);
    expect((await post(token, largeJson(MIB))).statusCode).toBe(503);
    expect(await leftoversSettled({ blobs: 0, pending: 0 })).toEqual({ blobs: 0, pending: 0 });
  });

  it('whose blob is missing or cut short is answered body_error payload_unavailable in its record and 503 at its body, never a 5xx for the page', async () => {
    await emptyStore();
    const { id, token } = await endpoint();
    const body = largeJson(MIB);
    expect((await post(token, body)).statusCode).toBe(200);
    expect((await post(token, largeJson(MIB, 'second'))).statusCode).toBe(200);
    const [lost, cut] = await messages(id);
    if (backend() === 'pglite') {
      rmSync(path.join(blobDir(), lost!.payload_key.slice('blob/'.length)));
      truncateSync(path.join(blobDir(), cut!.payload_key.slice('blob/'.length)), 1000);
    } else {
      await t.db.sql`DELETE FROM payload_chunks WHERE key = ${lost!.payload_key}`;
      await t.db.sql`DELETE FROM payload_chunks WHERE key = ${cut!.payload_key} AND seq > 0`;
    }
    for (const row of [lost!, cut!]) {
      const record = await t.request('GET', `/v1/inbound-messages/${row.id}`);
      expect(record.status).toBe(200);
      expect(record.body.data.body_error, row.payload_key).toBe('payload_unavailable');
      expect((await t.request('GET', `/v1/inbound-messages/${row.id}/body`)).status).toBe(503);
    }
    if (backend() === 'pglite') {
      // The operator is told which file: an error-level line naming it.
      const lines: string[] = [];
      const store = new FileBlobStore(t.db.sql, blobDir(), (_fields, message) => lines.push(message));
      await expect(readBlob(store, lost!.payload_key, lost!.size_bytes)).rejects.toThrow(PayloadUnavailableError);
      await expect(readBlob(store, cut!.payload_key, cut!.size_bytes)).rejects.toThrow(PayloadUnavailableError);
      const file = (row: { payload_key: string }) => path.join(blobDir(), row.payload_key.slice('blob/'.length));
      expect(lines).toEqual([
        `payload file ${file(lost!)} is missing: its message is answered with body_error payload_unavailable`,
        `payload file ${file(cut!)} holds 1000 bytes, not the ${cut!.size_bytes} its message has: its message is answered with body_error payload_unavailable`,
      ]);
    }
    const page = await t.request('GET', `/v1/inbound-endpoints/${id}/listen`);
    expect(page.status, page.raw).toBe(200);
    expect(page.body.data).toHaveLength(2);
  });

  it('of an upload that never became a message is removed by the abandoned-uploads sweeper, and a committed one is not', async () => {
    await emptyStore();
    const { id, token } = await endpoint();
    expect((await post(token, largeJson(MIB))).statusCode).toBe(200);
    const blobs = t.app.services.payloadStore.blobs!;
    const upload = await blobs.begin();
    await upload.write(Buffer.alloc(2 * MIB, 0x61));
    await upload.finish();
    expect(await leftovers()).toEqual({ blobs: 2, pending: 1 });
    const sweeper = abandonedUploadsSweeper(60);
    const deps = { payloadStore: t.app.services.payloadStore };
    // Not yet: an upload may take the request timeout and its commit a margin more.
    expect(await runSweeperOnce(t.db, sweeper, deps, new Date(Date.now() + 60_000))).toBe(0);
    expect(await runSweeperOnce(t.db, sweeper, deps, new Date(Date.now() + 61_000 + 5 * 60_000))).toBe(1);
    expect(await leftovers()).toEqual({ blobs: 1, pending: 0 });
    const [row] = await messages(id);
    expect((await t.request('GET', `/v1/inbound-messages/${row!.id}/body`)).status).toBe(200);
  });

  it('sent chunked streams from the byte that passes 256 KiB; a smaller chunked one stays in the commit', async () => {
    const { id, token } = await endpoint();
    const big = Buffer.alloc(300 * KIB, 0x62);
    const small = Buffer.alloc(200 * KIB, 0x63);
    for (const body of [big, small]) {
      const res = await t.app.inject({ method: 'POST', url: `/in/${token}`, payload: body, headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' } });
      expect(res.statusCode, res.body).toBe(200);
    }
    const rows = await messages(id);
    expect(rows.map((r) => [r.size_bytes, r.payload_key.startsWith('blob/'), r.payload_sha256])).toEqual([
      [big.length, true, sha256(big)],
      [small.length, false, sha256(small)],
    ]);
  });
});
