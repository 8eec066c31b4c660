import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type S3PayloadStoreConfig } from '../../src/config.js';
import { deletedOutboundPayloadsSweeper } from '../../src/delivery/sweepers.js';
import { AppError } from '../../src/errors.js';
import { deletedPullPayloadsSweeper, expiredPullEventsSweeper } from '../../src/sweepers/pull.js';
import { messageRetentionSweeper } from '../../src/sweepers/retention.js';
import { deletedInboundPayloadsSweeper, runSweeperOnce } from '../../src/sweepers/runner.js';
import type { Sweeper } from '../../src/sweepers/sweeper.js';
import { PayloadStoreUnavailableError, PayloadUnavailableError } from '../../src/storage/payload-store.js';
import { S3PayloadStore } from '../../src/storage/s3-payload-store.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { createPull, ingestEvent, ingestPull } from '../helpers/pull.js';
import { closedPort, S3RVER_CREDENTIALS, silentServer, startTestS3, type TestS3 } from '../helpers/s3.js';

/**
 * HOOKRELAY_PAYLOAD_STORE=s3://… against s3rver on loopback: payloads go to the bucket (not the
 * payloads table) and come back byte for byte, sweepers remove the objects, and a store that is down
 * makes reads answer `body_error: payload_unavailable` and writes fail without storing anything.
 */
const PREFIX = 'relay/payloads';
const MIB_300K = 300 * 1024;
let s3: TestS3;
let t: TestApp;

beforeAll(async () => {
  s3 = await startTestS3();
  t = await createTestApp({ env: s3.env(PREFIX) });
});
afterAll(async () => {
  await t?.close();
  await s3?.stop();
});

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

async function payloadRows(key: string): Promise<number> {
  return (await t.db.sql`SELECT 1 FROM payloads WHERE key = ${key}`).length;
}

/** Runs a sweeper until it finds nothing more (bounded). */
async function sweepAll(sweeper: Sweeper, services: { payloadStore: TestApp['app']['services']['payloadStore'] }, now?: Date): Promise<number> {
  let removed = 0;
  for (let run = 0; run < 20; run++) {
    const n = await runSweeperOnce(t.db, sweeper, services, now);
    if (!n) break;
    removed += n;
  }
  return removed;
}

async function createCliInbound(app: TestApp = t): Promise<{ id: string; token: string }> {
  const res = await app.request('POST', '/v1/inbound-endpoints', { body: { name: 's3 inbound', mode: 'cli' } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function ingestInbound(token: string, body: Buffer, app: TestApp = t) {
  return app.app.inject({ method: 'POST', url: `/in/${token}/hook`, payload: body, headers: { 'content-type': 'application/octet-stream' } });
}

let urlCounter = 0;
async function createOutbound(): Promise<string> {
  const res = await t.request('POST', '/v1/endpoints', { body: { url: `https://hooks.example.com/s3/${++urlCounter}` } });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.id;
}

describe('payloads on S3', () => {
  it('the app runs on the S3 store the configuration names', () => {
    expect(t.app.services.payloadStore.kind).toBe('s3');
  });

  it('inbound: ingest stores the exact bytes as an object, and GET and listen return them', async () => {
    const { id: endpointId, token } = await createCliInbound();
    const bytes = Buffer.concat([randomBytes(64 * 1024), Buffer.from([0, 255, 13, 10])]);
    const res = await ingestInbound(token, bytes);
    expect(res.statusCode, res.body).toBe(200);
    const messageId = res.json().data.message_id as string;

    expect(await s3.list(`${PREFIX}/inbound/`)).toContain(`${PREFIX}/inbound/${messageId}`);
    expect(sha256((await s3.read(`${PREFIX}/inbound/${messageId}`))!)).toBe(sha256(bytes));
    expect(await payloadRows(`inbound/${messageId}`)).toBe(0);

    const got = await t.request('GET', `/v1/inbound-messages/${messageId}?body_encoding=base64`);
    expect(got.status, got.raw).toBe(200);
    expect(got.body.data.body_encoding).toBe('base64');
    expect(sha256(Buffer.from(got.body.data.body, 'base64'))).toBe(sha256(bytes));
    expect(got.body.data.payload_sha256).toBe(sha256(bytes));

    const page = await t.request('GET', `/v1/inbound-endpoints/${endpointId}/listen?body_encoding=base64`);
    expect(page.status, page.raw).toBe(200);
    expect(page.body.data).toHaveLength(1);
    expect(sha256(Buffer.from(page.body.data[0].body, 'base64'))).toBe(sha256(bytes));
  });

  it('pull: ingest stores the exact bytes as an object, and the event GET returns them', async () => {
    const ep = await createPull(t);
    const bytes = randomBytes(10_000);
    const eventId = await ingestEvent(t, ep, { body: bytes, headers: { 'content-type': 'application/octet-stream' } });

    expect(await s3.list(`${PREFIX}/pull/`)).toContain(`${PREFIX}/pull/${eventId}`);
    expect(sha256((await s3.read(`${PREFIX}/pull/${eventId}`))!)).toBe(sha256(bytes));
    expect(await payloadRows(`pull/${eventId}`)).toBe(0);

    const got = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${eventId}?body_encoding=base64`);
    expect(got.status, got.raw).toBe(200);
    expect(sha256(Buffer.from(got.body.data.body, 'base64'))).toBe(sha256(bytes));
    expect(got.body.data.status).toBe('fetched');
  });

  it('outbound: POST /v1/messages stores the payload as an object, and GET returns it', async () => {
    const endpointId = await createOutbound();
    const payload = { type: 'invoice.paid', data: { amount: 4200, note: 'é ✓', blob: randomBytes(2000).toString('base64') } };
    const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload } });
    expect(res.status, res.raw).toBe(202);
    const messageId = res.body.data.message_id as string;

    const stored = await s3.read(`${PREFIX}/outbound/${messageId}`);
    expect(stored).toBeDefined();
    expect(sha256(stored!)).toBe(sha256(JSON.stringify(payload)));
    expect(await payloadRows(`outbound/${messageId}`)).toBe(0);

    const got = await t.request('GET', `/v1/messages/${messageId}`);
    expect(got.status, got.raw).toBe(200);
    expect(got.body.data.payload).toEqual(payload);
  });
});

describe('an event on S3', () => {
  it('stores one object for the event, which each of its messages and the event answer; a repeat of its key leaves no object of its own', async () => {
    const { apiKey } = await t.createProject();
    for (let i = 0; i < 2; i++) {
      expect((await t.request('POST', '/v1/endpoints', { apiKey, body: { url: `https://hooks.example.com/s3-event/${i}` } })).status).toBe(201);
    }
    const payload = { event: 'on s3', blob: randomBytes(1000).toString('base64') };
    const send = () => t.request('POST', '/v1/events', { apiKey, body: { event_type: 's3.stored', payload }, headers: { 'idempotency-key': 's3-event' } });
    const res = await send();
    expect(res.status, res.raw).toBe(202);
    const { event_id: eventId, messages } = res.body.data;
    expect(messages).toHaveLength(2);
    expect(sha256((await s3.read(`${PREFIX}/event/${eventId}`))!)).toBe(sha256(JSON.stringify(payload)));
    expect(await payloadRows(`event/${eventId}`)).toBe(0);
    for (const m of messages) expect((await t.request('GET', `/v1/messages/${m.message_id}`, { apiKey })).body.data.payload).toEqual(payload);
    expect((await t.request('GET', `/v1/events/${eventId}`, { apiKey })).body.data.payload).toEqual(payload);

    expect((await send()).body.data.event_id).toBe(eventId);
    // The repeat's object, written before its key was judged, is removed (off the request path).
    const deadline = Date.now() + 5000;
    while ((await s3.list(`${PREFIX}/event/`)).filter((key) => !key.endsWith(eventId)).length > 0) {
      expect(Date.now() < deadline, 'the repeat left its object').toBe(true);
      await new Promise((r) => setTimeout(r, 25));
    }
  });
});

describe('a body above 256 KiB on S3', () => {
  it('streams to the bucket as a multipart object as it arrives, comes back whole and by range, and is swept with its message', async () => {
    const { id, token } = await createCliInbound();
    // Two parts of 8 MiB and a last one, smaller.
    const body = randomBytes(20 * 1024 * 1024 + 123);
    const res = await ingestInbound(token, body);
    expect(res.statusCode, res.body).toBe(200);
    const [row] = await t.db.sql<{ id: string; payload_key: string }>`SELECT id, payload_key FROM inbound_messages WHERE inbound_endpoint_id = ${id}`;
    expect(row!.payload_key).toMatch(/^blob\/[0-9a-f-]{36}$/);
    expect(sha256((await s3.read(`${PREFIX}/${row!.payload_key}`))!)).toBe(sha256(body));
    expect(await payloadRows(row!.payload_key)).toBe(0);
    expect(await t.db.sql`SELECT 1 FROM payload_chunks WHERE key = ${row!.payload_key}`).toHaveLength(0);
    expect(await t.db.sql`SELECT 1 FROM payload_uploads`).toHaveLength(0);
    const whole = await t.app.inject({ method: 'GET', url: `/v1/inbound-messages/${row!.id}/body`, headers: { authorization: `Bearer ${t.main.apiKey}` } });
    expect(whole.statusCode).toBe(200);
    expect(sha256(whole.rawPayload)).toBe(sha256(body));
    const part = await t.app.inject({ method: 'GET', url: `/v1/inbound-messages/${row!.id}/body`, headers: { authorization: `Bearer ${t.main.apiKey}`, range: 'bytes=8388600-8388615' } });
    expect(part.statusCode).toBe(206);
    expect(part.rawPayload.equals(body.subarray(8388600, 8388616))).toBe(true);

    expect((await t.request('DELETE', `/v1/inbound-messages/${row!.id}`)).status).toBe(200);
    await sweepAll(deletedInboundPayloadsSweeper, t.app.services);
    expect(await s3.read(`${PREFIX}/${row!.payload_key}`)).toBeUndefined();
  }, 60_000);

  it('refused by a duplicate key leaves no object behind', async () => {
    const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 's3 dup', mode: 'cli', idempotency_header_names: ['Idempotency-Key'] } });
    const token = res.body.data.secret_token;
    const before = (await s3.list(`${PREFIX}/blob/`)).length;
    const body = randomBytes(MIB_300K);
    for (let i = 0; i < 2; i++) {
      const sent = await t.app.inject({ method: 'POST', url: `/in/${token}`, payload: body, headers: { 'content-type': 'application/octet-stream', 'idempotency-key': 'same' } });
      expect(sent.statusCode).toBe(200);
    }
    let objects = (await s3.list(`${PREFIX}/blob/`)).length;
    for (let i = 0; i < 50 && objects !== before + 1; i++) {
      await new Promise((r) => setTimeout(r, 20));
      objects = (await s3.list(`${PREFIX}/blob/`)).length;
    }
    expect(objects).toBe(before + 1);
  });
});

describe('sweepers on S3', () => {
  it('remove the objects of deleted inbound messages and keep the others', async () => {
    const { token } = await createCliInbound();
    const kept = (await ingestInbound(token, Buffer.from('keep'))).json().data.message_id as string;
    const gone = (await ingestInbound(token, Buffer.from('drop'))).json().data.message_id as string;
    expect((await t.request('DELETE', `/v1/inbound-messages/${gone}`)).status).toBe(200);
    expect(await s3.read(`${PREFIX}/inbound/${gone}`)).toBeDefined();

    expect(await sweepAll(deletedInboundPayloadsSweeper, t.app.services)).toBeGreaterThanOrEqual(1);
    expect(await s3.read(`${PREFIX}/inbound/${gone}`)).toBeUndefined();
    expect(await s3.read(`${PREFIX}/inbound/${kept}`)).toEqual(Buffer.from('keep'));
    const [row] = await t.db.sql<{ payload_key: string | null }>`SELECT payload_key FROM inbound_messages WHERE id = ${gone}::uuid`;
    expect(row!.payload_key).toBeNull();
  });

  it('remove the objects of deleted and of expired pull events', async () => {
    const ep = await createPull(t, { retention_days: 1 });
    const deleted = await ingestEvent(t, ep, { body: 'deleted' });
    const expired = await ingestEvent(t, ep, { body: 'expired' });
    expect((await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${deleted}`)).status).toBe(200);

    expect(await sweepAll(deletedPullPayloadsSweeper, t.app.services)).toBeGreaterThanOrEqual(1);
    expect(await s3.read(`${PREFIX}/pull/${deleted}`)).toBeUndefined();
    expect(await s3.read(`${PREFIX}/pull/${expired}`)).toEqual(Buffer.from('expired'));

    // Two days on, the one-day retention has passed: row and object go together.
    expect(await sweepAll(expiredPullEventsSweeper, t.app.services, new Date(Date.now() + 2 * 24 * 3600_000))).toBeGreaterThanOrEqual(1);
    expect(await s3.read(`${PREFIX}/pull/${expired}`)).toBeUndefined();
    expect(await t.db.sql`SELECT 1 FROM pull_events WHERE id IN (${deleted}::uuid, ${expired}::uuid)`).toHaveLength(0);
  });

  it('remove the objects of deleted outbound messages', async () => {
    const endpointId = await createOutbound();
    const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, body: 'to be removed', content_type: 'text/plain' } });
    expect(res.status, res.raw).toBe(202);
    const messageId = res.body.data.message_id as string;
    expect(await s3.read(`${PREFIX}/outbound/${messageId}`)).toEqual(Buffer.from('to be removed'));
    expect((await t.request('DELETE', `/v1/messages/${messageId}`)).status).toBe(200);

    expect(await sweepAll(deletedOutboundPayloadsSweeper, t.app.services)).toBeGreaterThanOrEqual(1);
    expect(await s3.read(`${PREFIX}/outbound/${messageId}`)).toBeUndefined();
  });
});

/** Message retention as the worker role builds it; its runs are made a month and a day from now. */
const retention = () => messageRetentionSweeper({ defaultDays: 30, batch: 100 });
const monthOn = () => new Date(Date.now() + 31 * 24 * 3600_000);
const listedRemovals = async () => (await t.db.sql<{ key: string }>`SELECT key FROM payload_removals ORDER BY key`).map((r) => r.key);

describe('message retention on S3', () => {
  it('removes the objects of expired inbound and outbound messages once their rows are gone, large ones too', async () => {
    const { token } = await createCliInbound();
    const small = (await ingestInbound(token, Buffer.from('old inbound'))).json().data.message_id as string;
    const large = (await ingestInbound(token, randomBytes(MIB_300K))).json().data.message_id as string;
    const [{ payload_key: largeKey }] = (await t.db.sql<{ payload_key: string }>`SELECT payload_key FROM inbound_messages WHERE id = ${large}::uuid`) as [{ payload_key: string }];
    expect(largeKey).toMatch(/^blob\//);
    const sent = await t.request('POST', '/v1/messages', { body: { endpoint_id: await createOutbound(), body: 'old outbound', content_type: 'text/plain' } });
    const outbound = sent.body.data.message_id as string;
    await t.db.sql`DELETE FROM delivery_jobs WHERE message_id = ${outbound}::uuid`;
    const objects = [`${PREFIX}/inbound/${small}`, `${PREFIX}/${largeKey}`, `${PREFIX}/outbound/${outbound}`];
    for (const key of objects) expect(await s3.read(key), key).toBeDefined();

    // The first run removes the rows and lists the objects; they stay until the removal has committed.
    const sweeper = retention();
    expect(await runSweeperOnce(t.db, sweeper, t.app.services, monthOn())).toBeGreaterThanOrEqual(3);
    expect(await t.db.sql`SELECT 1 FROM inbound_messages WHERE id IN (${small}::uuid, ${large}::uuid)`).toHaveLength(0);
    expect(await t.db.sql`SELECT 1 FROM outbound_messages WHERE id = ${outbound}::uuid`).toHaveLength(0);
    expect(await listedRemovals()).toEqual(expect.arrayContaining([`inbound/${small}`, largeKey, `outbound/${outbound}`]));
    for (const key of objects) expect(await s3.read(key), key).toBeDefined();

    await sweepAll(sweeper, t.app.services, monthOn());
    await runSweeperOnce(t.db, sweeper, t.app.services, monthOn());
    for (const key of objects) expect(await s3.read(key), key).toBeUndefined();
    expect(await listedRemovals()).toEqual([]);
  });
});

describe('when the store is down', () => {
  // A second app on the same database whose store points at a port nobody listens on.
  let down: TestApp;
  beforeAll(async () => {
    down = await createTestApp({ db: t.db, env: { ...s3.env(PREFIX), AWS_ENDPOINT_URL: `http://127.0.0.1:${await closedPort()}` } });
  });
  // The records below belong to the first app's project.
  const downRequest = (method: string, url: string, body?: unknown) => down.request(method, url, { apiKey: t.main.apiKey, ...(body !== undefined ? { body } : {}) });
  afterAll(async () => {
    await down?.close();
  });

  it('reads answer body_error: payload_unavailable (inbound, listen, pull, outbound)', async () => {
    const { id: endpointId, token } = await createCliInbound();
    const inboundId = (await ingestInbound(token, Buffer.from('{"a":1}'))).json().data.message_id as string;
    const ep = await createPull(t);
    const eventId = await ingestEvent(t, ep, { body: '{"b":2}' });
    const outboundRes = await t.request('POST', '/v1/messages', { body: { endpoint_id: await createOutbound(), payload: { c: 3 } } });
    const outboundId = outboundRes.body.data.message_id as string;

    const inbound = await downRequest('GET', `/v1/inbound-messages/${inboundId}`);
    expect(inbound.status, inbound.raw).toBe(200);
    expect(inbound.body.data.body_error).toBe('payload_unavailable');
    expect(inbound.body.data).not.toHaveProperty('body');

    const page = await downRequest('GET', `/v1/inbound-endpoints/${endpointId}/listen`);
    expect(page.status, page.raw).toBe(200);
    expect(page.body.data.map((m: any) => [m.message_id, m.body_error, 'body' in m])).toEqual([[inboundId, 'payload_unavailable', false]]);

    const event = await downRequest('GET', `/v1/pull-endpoints/${ep.id}/events/${eventId}`);
    expect(event.status, event.raw).toBe(200);
    expect(event.body.data.body_error).toBe('payload_unavailable');
    expect(event.body.data).not.toHaveProperty('body');
    // A failed read hands nothing over, so the event is still waiting for its first fetch.
    expect(event.body.data.status).toBe('stored');

    const outbound = await downRequest('GET', `/v1/messages/${outboundId}`);
    expect(outbound.status, outbound.raw).toBe(200);
    expect(outbound.body.data.body_error).toBe('payload_unavailable');
    expect(outbound.body.data).not.toHaveProperty('payload');

    // The same records through the working store still have their bytes.
    const working = await t.request('GET', `/v1/inbound-messages/${inboundId}`);
    expect(Buffer.from(working.body.data.body, 'base64').toString()).toBe('{"a":1}');
  });

  it('inbound ingest answers 503 and stores nothing', async () => {
    const { id: endpointId, token } = await createCliInbound();
    const res = await ingestInbound(token, Buffer.from('lost?'), down);
    expectError({ status: res.statusCode, headers: res.headers, body: res.json(), raw: res.body }, 503, 'SERVICE_UNAVAILABLE');
    expect(res.headers['retry-after']).toBeDefined();
    expect(await t.db.sql`SELECT 1 FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId}::uuid`).toHaveLength(0);
    // And the endpoint still takes webhooks through a working store.
    expect((await ingestInbound(token, Buffer.from('kept'))).statusCode).toBe(200);
  });

  it('pull ingest answers 503 and stores nothing', async () => {
    const ep = await createPull(t);
    const res = await ingestPull(down, ep, { body: 'lost?' });
    expectError({ status: res.statusCode, headers: res.headers, body: res.json(), raw: res.body }, 503, 'SERVICE_UNAVAILABLE');
    expect(await t.db.sql`SELECT 1 FROM pull_events WHERE endpoint_id = ${ep.id}::uuid`).toHaveLength(0);
  });

  it('POST /v1/messages answers 503 and stores nothing, not even a delivery job', async () => {
    const endpointId = await createOutbound();
    const res = await downRequest('POST', '/v1/messages', { endpoint_id: endpointId, payload: { lost: true } });
    expectError(res, 503, 'SERVICE_UNAVAILABLE');
    expect(await t.db.sql`SELECT 1 FROM outbound_messages WHERE endpoint_id = ${endpointId}`).toHaveLength(0);
    expect(await t.db.sql`SELECT 1 FROM delivery_jobs WHERE destination = ${endpointId}`).toHaveLength(0);
  });

  it('a sweeper that cannot delete keeps the payload key, and the next run with the store back removes the object', async () => {
    const { token } = await createCliInbound();
    const id = (await ingestInbound(token, Buffer.from('later'))).json().data.message_id as string;
    await t.request('DELETE', `/v1/inbound-messages/${id}`);
    await expect(runSweeperOnce(t.db, deletedInboundPayloadsSweeper, down.app.services)).rejects.toThrow();
    const [row] = await t.db.sql<{ payload_key: string | null }>`SELECT payload_key FROM inbound_messages WHERE id = ${id}::uuid`;
    expect(row!.payload_key).toBe(`inbound/${id}`);
    expect(await s3.read(`${PREFIX}/inbound/${id}`)).toBeDefined();

    await sweepAll(deletedInboundPayloadsSweeper, t.app.services);
    expect(await s3.read(`${PREFIX}/inbound/${id}`)).toBeUndefined();
  });
});

describe('message retention while the store is down', () => {
  let down: TestApp;
  beforeAll(async () => {
    down = await createTestApp({ db: t.db, env: { ...s3.env(PREFIX), AWS_ENDPOINT_URL: `http://127.0.0.1:${await closedPort()}` } });
  });
  afterAll(async () => {
    await down?.close();
  });

  it('keeps the listed objects listed (and removes no further message) until a run can delete them', async () => {
    const { token } = await createCliInbound();
    const first = (await ingestInbound(token, Buffer.from('first'))).json().data.message_id as string;
    const sweeper = retention();
    await runSweeperOnce(t.db, sweeper, t.app.services, monthOn());
    expect(await listedRemovals()).toContain(`inbound/${first}`);
    const second = (await ingestInbound(token, Buffer.from('second'))).json().data.message_id as string;

    // The store refuses the deletes: the run rolls back whole, the next message included.
    await expect(runSweeperOnce(t.db, sweeper, down.app.services, monthOn())).rejects.toThrow();
    expect(await listedRemovals()).toContain(`inbound/${first}`);
    expect(await s3.read(`${PREFIX}/inbound/${first}`)).toBeDefined();
    expect(await t.db.sql`SELECT 1 FROM inbound_messages WHERE id = ${second}::uuid`).toHaveLength(1);

    await sweepAll(sweeper, t.app.services, monthOn());
    await runSweeperOnce(t.db, sweeper, t.app.services, monthOn());
    expect(await s3.read(`${PREFIX}/inbound/${first}`)).toBeUndefined();
    expect(await s3.read(`${PREFIX}/inbound/${second}`)).toBeUndefined();
    expect(await listedRemovals()).toEqual([]);
  });
});

describe('a store that accepts connections and never answers', () => {
  let hung: Awaited<ReturnType<typeof silentServer>>;
  beforeAll(async () => {
    hung = await silentServer();
  });
  afterAll(async () => {
    await hung?.close();
  });
  const config = (): S3PayloadStoreConfig => ({ kind: 's3', bucket: 'hookrelay-test', prefix: 'p', endpoint: hung.endpoint, region: 'us-east-1', credentials: S3RVER_CREDENTIALS });

  it('fails a read within the operation deadline, retries included', async () => {
    const store = await S3PayloadStore.open(config(), { operationTimeoutMs: 600 });
    const started = Date.now();
    await expect(store.get(t.db.sql, 'inbound/x')).rejects.toBeInstanceOf(PayloadUnavailableError);
    expect(Date.now() - started).toBeLessThan(4_000);
    await store.close();
  });

  it('fails a write within the per-attempt timeout, as SERVICE_UNAVAILABLE', async () => {
    const store = await S3PayloadStore.open(config(), { requestTimeoutMs: 300, maxAttempts: 2, operationTimeoutMs: 60_000 });
    const started = Date.now();
    const error = await store.putMany(t.db.sql, [{ key: 'inbound/y', data: Buffer.from('y') }]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PayloadStoreUnavailableError);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('SERVICE_UNAVAILABLE');
    expect(Date.now() - started).toBeLessThan(5_000);
    await store.close();
  });
});

describe('configuration', () => {
  it('reads the bucket, prefix, endpoint, region and credentials from the injected environment', () => {
    const config = parseConfig({
      HOOKRELAY_PAYLOAD_STORE: 's3://my-bucket/a/b/',
      AWS_ENDPOINT_URL: 'http://ignored.example',
      AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9000',
      AWS_DEFAULT_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'id',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_SESSION_TOKEN: 'token',
    });
    expect(config.payloadStore).toEqual({
      kind: 's3',
      bucket: 'my-bucket',
      prefix: 'a/b',
      endpoint: 'http://127.0.0.1:9000',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret', sessionToken: 'token' },
    });
    expect(parseConfig({ HOOKRELAY_PAYLOAD_STORE: 's3://my-bucket', AWS_REGION: 'us-west-2', AWS_DEFAULT_REGION: 'eu-west-1' }).payloadStore).toEqual({
      kind: 's3',
      bucket: 'my-bucket',
      prefix: '',
      endpoint: undefined,
      region: 'us-west-2',
      credentials: undefined,
    });
  });

  it('defaults to the database, and ignores AWS variables then', () => {
    expect(parseConfig({}).payloadStore).toEqual({ kind: 'database' });
    expect(parseConfig({ HOOKRELAY_PAYLOAD_STORE: 'database', AWS_ENDPOINT_URL: 'not a url', AWS_ACCESS_KEY_ID: 'only-id' }).payloadStore).toEqual({ kind: 'database' });
  });

  it('refuses a bad store URL or incomplete AWS settings with a message naming the variable', () => {
    for (const value of ['s3://', 's3://Bad_Bucket/x', 's3:/bucket/x', 'file:///tmp/x', 'postgres://x', 's3://bucket/a//b', 's3://bucket/../x', 's3://bucket/x?y=1']) {
      expect(() => parseConfig({ HOOKRELAY_PAYLOAD_STORE: value }), value).toThrow(/HOOKRELAY_PAYLOAD_STORE must be "database" or s3:\/\/bucket\/prefix/);
    }
    expect(() => parseConfig({ HOOKRELAY_PAYLOAD_STORE: 's3://bucket/x', AWS_ENDPOINT_URL: 'localhost:9000' })).toThrow(/AWS_ENDPOINT_URL must be an http\(s\) URL/);
    expect(() => parseConfig({ HOOKRELAY_PAYLOAD_STORE: 's3://bucket/x', AWS_ENDPOINT_URL_S3: 'ftp://h' })).toThrow(/AWS_ENDPOINT_URL_S3 must be an http\(s\) URL/);
    expect(() => parseConfig({ HOOKRELAY_PAYLOAD_STORE: 's3://bucket/x', AWS_ACCESS_KEY_ID: 'id' })).toThrow(/AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together/);
    expect(() => parseConfig({ HOOKRELAY_PAYLOAD_STORE: 's3://bucket/x', AWS_SESSION_TOKEN: 't' })).toThrow(/AWS_SESSION_TOKEN needs/);
  });
});
