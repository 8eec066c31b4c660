import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookrelayApiError, HookrelayClient } from '@hookrelay/shared';
import type { Database } from '../../src/db/database.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/database.js';
import { failingDatabase, seedEvents } from '../helpers/pull.js';

/** The typed client's pull methods against the real app on loopback, delete-all failures included. */

let db: Database;
let t: TestApp;
let baseUrl: string;
let client: HookrelayClient;
let failDeletes = false;
let deleteChunks = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  t = await createTestApp({
    db: failingDatabase(db, (text) => {
      if (!failDeletes || !text.includes('UPDATE pull_events e SET deleted_at')) return false;
      deleteChunks++;
      return deleteChunks === 2;
    }),
  });
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  client = new HookrelayClient({ apiUrl: baseUrl, apiKey: t.main.apiKey });
});
afterAll(async () => {
  await client?.close();
  await t?.close();
  await db?.close();
});

describe('HookrelayClient pull methods', () => {
  it('create, list, get, update, pause, resume and delete endpoints', async () => {
    const created = await client.pullEndpoints.create({ name: 'client', event_type_source: 'header', event_type_path: 'X-Type' });
    expect(created.status).toBe(201);
    expect(created.data.full_ingest_url).toBe(`${created.data.ingest_url}/${created.data.secret_token}`);
    expect(created.data.ingest_url).toBe(`${baseUrl.replace('127.0.0.1', 'localhost')}/pull/${created.data.id}`);
    const id = created.data.id;
    expect((await client.pullEndpoints.list({ limit: 10 })).data.map((e) => e.id)).toContain(id);
    expect((await client.pullEndpoints.get(id)).data.event_counts).toEqual({ stored: 0, fetched: 0, delivered: 0, deleted: 0 });
    expect((await client.pullEndpoints.update(id, { retention_days: 30, event_type_source: '' })).data).toMatchObject({
      retention_days: 30,
      event_type_source: null,
    });
    expect((await client.pullEndpoints.pause(id)).data).toEqual({ id, paused: true });
    expect((await client.pullEndpoints.resume(id)).data).toEqual({ id, paused: false });
    expect((await client.pullEndpoints.delete(id)).data).toEqual({ id, deleted: true });
    await expect(client.pullEndpoints.get(id)).rejects.toMatchObject({ code: 'ENDPOINT_NOT_FOUND', status: 404 });
  });

  it('ingest through full_ingest_url, then list, get, ack and delete events', async () => {
    const { data: ep } = await client.pullEndpoints.create({ name: 'flow', event_type_source: 'body', event_type_path: 'type' });
    const sent = await fetch(ep.full_ingest_url.replace('localhost', '127.0.0.1'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'order.created', n: 1 }),
    });
    expect(sent.status).toBe(200);
    const { event_id } = ((await sent.json()) as { data: { event_id: string } }).data;
    const page = await client.pullEvents.list(ep.id, { status: ['stored'], event_type: 'order.created' });
    expect(page.data.map((e) => e.id)).toEqual([event_id]);
    expect(page.meta).toMatchObject({ has_more: false, next_cursor: '' });
    const event = await client.pullEvents.get(ep.id, event_id);
    expect(event.data).toMatchObject({ status: 'fetched', body: { type: 'order.created', n: 1 }, event_type: 'order.created' });
    const raw = await client.pullEvents.get(ep.id, event_id, { bodyEncoding: 'base64' });
    expect(raw.data.body_encoding).toBe('base64');
    expect((await client.pullEvents.ack(ep.id, event_id)).data).toMatchObject({ event_id, status: 'delivered', already_delivered: false });
    expect((await client.pullEvents.ackBatch(ep.id, [event_id])).data.already_delivered_count).toBe(1);
    expect((await client.pullEvents.delete(ep.id, event_id)).data).toMatchObject({ event_id, already_deleted: false });
    expect((await client.pullEvents.deleteBatch(ep.id, [event_id])).data.already_deleted_count).toBe(1);
  });

  it('deleteAll answers the ids; a partial failure carries them in the error’s data', async () => {
    const { data: ep } = await client.pullEndpoints.create({ name: 'delete-all' });
    const seeded = (await seedEvents(db, ep, t.main.projectId, { times: Array.from({ length: 150 }, (_, i) => Date.now() - 10_000 + i) })).sort();
    expect((await client.pullEvents.deleteAll(ep.id, { limit: 10, status: 'stored' })).data).toEqual({ deleted: 10, deleted_event_ids: seeded.slice(0, 10) });
    failDeletes = true;
    deleteChunks = 0;
    try {
      const error = await client.pullEvents.deleteAll(ep.id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(HookrelayApiError);
      expect(error).toMatchObject({ code: 'PARTIAL_DELETE_FAILURE', status: 500 });
      expect((error as HookrelayApiError).data).toEqual({ deleted: 100, deleted_event_ids: seeded.slice(10, 110) });
    } finally {
      failDeletes = false;
    }
    expect((await client.pullEvents.deleteAll(ep.id)).data.deleted_event_ids).toEqual(seeded.slice(110));
  });
});
