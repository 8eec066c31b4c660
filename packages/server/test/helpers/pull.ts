import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { compile, type Database } from '../../src/db/database.js';
import { insertPayloads } from '../../src/db/payloads.js';
import { insertPullEvents } from '../../src/db/pull-events.js';
import { pullPayloadKey } from '../../src/ingest/pull-batcher.js';
import type { TestApp } from './app.js';
import { interceptSql } from './database.js';

export interface TestPullEndpoint {
  id: string;
  token: string;
  ingestUrl: string;
  fullIngestUrl: string;
  /** The ingestion path, `/pull/{id}/{token}`. */
  path: string;
}

export async function createPull(t: TestApp, body: Record<string, unknown> = {}, apiKey?: string): Promise<TestPullEndpoint> {
  const res = await t.request('POST', '/v1/pull-endpoints', { body: { name: 'pull test', ...body }, ...(apiKey ? { apiKey } : {}) });
  expect(res.status, res.raw).toBe(201);
  const d = res.body.data;
  return { id: d.id, token: d.secret_token, ingestUrl: d.ingest_url, fullIngestUrl: d.full_ingest_url, path: `/pull/${d.id}/${d.secret_token}` };
}

export interface IngestOptions {
  method?: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  query?: string;
}

/** A webhook to the endpoint's ingestion URL, as a provider would send it. */
export function ingestPull(t: TestApp, endpoint: { path: string }, options: IngestOptions = {}) {
  return t.app.inject({
    method: (options.method ?? 'POST') as 'POST',
    url: `${endpoint.path}${options.query ? `?${options.query}` : ''}`,
    headers: options.headers ?? { 'content-type': 'application/json' },
    ...(options.body !== undefined ? { payload: options.body } : options.method === undefined || options.method === 'POST' ? { payload: '{}' } : {}),
  });
}

/** Ingests and returns the new event id (expects 200). */
export async function ingestEvent(t: TestApp, endpoint: { path: string }, options: IngestOptions = {}): Promise<string> {
  const res = await ingestPull(t, endpoint, options);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.event_id as string;
}

/** A UUIDv7 of the given millisecond with random bits, as the server makes them. */
export function uuidv7At(ms: number): string {
  const h = ms.toString(16).padStart(12, '0');
  const r = randomBytes(10).toString('hex');
  const variant = '89ab'[randomBytes(1)[0]! & 3];
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${r.slice(0, 3)}-${variant}${r.slice(3, 6)}-${r.slice(6, 18)}`;
}

export interface SeedOptions {
  /** received_at of each event (ms); the id is made of the same millisecond. */
  times: number[];
  eventType?: string | null | ((i: number) => string | null);
  body?: string;
}

/**
 * Stores events straight into the database (many at once, at chosen times), respecting what
 * ingestion guarantees: the id carries the received_at millisecond and a payload is stored.
 */
export async function seedEvents(db: Database, endpoint: { id: string }, projectId: string, options: SeedOptions): Promise<string[]> {
  const ids: string[] = [];
  const body = Buffer.from(options.body ?? '{"seeded":true}');
  for (let start = 0; start < options.times.length; start += 500) {
    const events = options.times.slice(start, start + 500).map((ms, j) => {
      const i = start + j;
      const id = uuidv7At(ms);
      ids.push(id);
      const eventType = typeof options.eventType === 'function' ? options.eventType(i) : (options.eventType ?? null);
      return {
        id,
        projectId,
        endpointId: endpoint.id,
        eventType,
        method: 'POST',
        query: '',
        contentType: 'application/json',
        sizeBytes: body.length,
        payloadSha256: 'f'.repeat(64),
        rawHeaders: [['content-type', 'application/json']] as [string, string][],
        payloadKey: pullPayloadKey(id),
        ingestProcessingMs: 1,
        receivedAt: new Date(ms),
      };
    });
    await db.sql.begin(async (tx) => {
      await insertPayloads(tx, events.map((e) => ({ key: e.payloadKey, data: body })));
      await insertPullEvents(tx, events);
    });
  }
  return ids;
}

/** Every event id of a list, following next_cursor to the end. */
export async function listAll(t: TestApp, endpointId: string, query: string, apiKey?: string): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor = '';
  let pages = 0;
  for (;;) {
    const res = await t.request('GET', `/v1/pull-endpoints/${endpointId}/events?${query}${cursor ? `&cursor=${cursor}` : ''}`, apiKey ? { apiKey } : {});
    expect(res.status, res.raw).toBe(200);
    pages++;
    ids.push(...res.body.data.map((e: { id: string }) => e.id));
    expect(res.body.meta.has_more).toBe(res.body.meta.next_cursor !== '');
    if (!res.body.meta.has_more) return { ids, pages };
    cursor = res.body.meta.next_cursor;
  }
}

/**
 * The real database with a switch: queries whose text `shouldFail` picks are refused with an error,
 * everything else runs as usual (no mock: the wrapper calls the real Sql).
 */
export function failingDatabase(db: Database, shouldFail: (text: string) => boolean): Database {
  return {
    ...db,
    sql: interceptSql(db.sql, (strings, values, run) =>
      shouldFail(compile(strings, values).text) ? Promise.reject(new Error('injected failure')) : run(),
    ),
  };
}
