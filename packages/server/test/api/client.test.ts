import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookrelayApiError, HookrelayClient, HookrelayNetworkError } from '@hookrelay/shared';
import { buildApp } from '../../src/app.js';
import { parseConfig } from '../../src/config.js';
import { AppError } from '../../src/errors.js';
import { SecretBox } from '../../src/security/crypto.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import type { FastifyInstance } from 'fastify';

/** The typed client of @hookrelay/shared against the real app listening on loopback. */
let t: TestApp;
let baseUrl: string;
let client: HookrelayClient;

beforeAll(async () => {
  t = await createTestApp();
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  client = new HookrelayClient({ apiUrl: baseUrl, apiKey: t.main.apiKey });
});
afterAll(async () => {
  await client?.close();
  await t?.close();
});

describe('HookrelayClient', () => {
  it('lists an inbound endpoint’s messages with filters and pages', async () => {
    const endpoint = await client.inboundEndpoints.create({ name: 'client messages', mode: 'cli' });
    const token = endpoint.data.secret_token;
    for (const event of ['push', 'ping', 'push']) {
      const res = await fetch(`${baseUrl}/in/${token}`, { method: 'POST', body: '{}', headers: { 'x-github-event': event } });
      expect(res.status).toBe(200);
    }
    const first = await client.inboundEndpoints.messages(endpoint.data.id, { event_type: 'push', limit: 1 });
    expect(first.data.map((m) => m.event_type)).toEqual(['push']);
    expect(first.meta.has_more).toBe(true);
    const second = await client.inboundEndpoints.messages(endpoint.data.id, { event_type: 'push', limit: 1, cursor: first.meta.next_cursor! });
    expect(second.data).toHaveLength(1);
    expect(second.data[0]!.id < first.data[0]!.id).toBe(true);
    expect(second.meta).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('returns data and meta of a success', async () => {
    const created = await client.endpoints.create({ url: 'https://example.com/client-test', description: 'from the client' });
    expect(created.status).toBe(201);
    expect(created.data.id).toMatch(/^ep_[a-f0-9]{32}$/);
    expect(created.meta.request_id).toBe(created.headers['x-request-id']);
    const fetched = await client.endpoints.get(created.data.id);
    expect(fetched.data.description).toBe('from the client');
  });

  it('manages the event-type catalogue, a name with a slash included', async () => {
    const schema = { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] };
    const created = await client.eventTypes.create({ name: 'orders/create', schema, example: { sku: 'A-1' } });
    expect(created.status).toBe(201);
    expect(created.data).toMatchObject({ name: 'orders/create', schema, example: { sku: 'A-1' }, archived: false });
    expect((await client.eventTypes.get('orders/create')).data).toEqual(created.data);
    const updated = await client.eventTypes.update('orders/create', { archived: true, description: 'old' });
    expect(updated.data).toMatchObject({ archived: true, description: 'old', schema });
    const archived = await client.eventTypes.list({ archived: true, limit: 10 });
    expect(archived.data.map((type) => type.name)).toEqual(['orders/create']);
    expect(archived.meta.next_cursor).toBeNull();
    const first = await client.eventTypes.list({ limit: 1 });
    expect(first.data).toHaveLength(1);
    const rest = await client.eventTypes.list({ cursor: first.meta.next_cursor! });
    expect([...first.data, ...rest.data].map((type) => type.name)).toContain('hookrelay.message.failed');
    const duplicate = await client.eventTypes.create({ name: 'orders/create' }).catch((e: unknown) => e);
    expect(duplicate).toBeInstanceOf(HookrelayApiError);
    expect((duplicate as HookrelayApiError).code).toBe('DUPLICATE_NAME');
    expect((duplicate as HookrelayApiError).status).toBe(409);
    expect((await client.eventTypes.delete('orders/create')).data).toEqual({ name: 'orders/create', deleted: true });
  });

  it('raises a typed error carrying code, message, status and request id', async () => {
    const error = await client.endpoints.get(`ep_${'0'.repeat(32)}`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HookrelayApiError);
    const apiError = error as HookrelayApiError;
    expect(apiError.code).toBe('ENDPOINT_NOT_FOUND');
    expect(apiError.status).toBe(404);
    expect(apiError.message).toContain('not found');
    expect(apiError.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('raises UNAUTHORIZED for a bad key', async () => {
    const bad = new HookrelayClient({ apiUrl: baseUrl, apiKey: `hr_${'0'.repeat(40)}` });
    try {
      const error = await bad.whoami().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    } finally {
      await bad.close();
    }
  });

  it('raises a network error when nothing listens', async () => {
    const closedPort = new HookrelayClient({ apiUrl: 'http://127.0.0.1:1', timeoutMs: 2000 });
    try {
      await expect(closedPort.whoami()).rejects.toBeInstanceOf(HookrelayNetworkError);
    } finally {
      await closedPort.close();
    }
  });
});

describe('an error that carries data beside error (delete-all reports what it committed before failing)', () => {
  let app: FastifyInstance;
  let url: string;
  beforeAll(async () => {
    const config = parseConfig({ HOOKRELAY_LOG_LEVEL: 'silent', HOOKRELAY_DATA_DIR: `/tmp/hookrelay-unused-${randomBytes(4).toString('hex')}` });
    app = await buildApp(config, { db: t.db, secretBox: new SecretBox(randomBytes(32)) }, { logger: false });
    app.get('/partial-failure', async () => {
      throw new AppError('PARTIAL_DELETE_FAILURE', 'some chunks were deleted before an error', {
        data: { deleted: 2, deleted_event_ids: ['a', 'b'] },
      });
    });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('is answered 500 with data, error and meta, and the client keeps the data', async () => {
    const raw = await fetch(`${url}/partial-failure`);
    expect(raw.status).toBe(500);
    const body = (await raw.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      data: { deleted: 2, deleted_event_ids: ['a', 'b'] },
      error: { code: 'PARTIAL_DELETE_FAILURE', message: 'some chunks were deleted before an error' },
      meta: { request_id: expect.any(String) },
    });
    const c = new HookrelayClient({ apiUrl: url });
    try {
      const error = (await c.request('GET', '/partial-failure').catch((e: unknown) => e)) as HookrelayApiError;
      expect(error).toBeInstanceOf(HookrelayApiError);
      expect(error.code).toBe('PARTIAL_DELETE_FAILURE');
      expect(error.data).toEqual({ deleted: 2, deleted_event_ids: ['a', 'b'] });
    } finally {
      await c.close();
    }
  });
});
