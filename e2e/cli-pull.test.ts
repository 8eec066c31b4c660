import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonOutput, runCli, type CliResult } from './helpers/cli.js';
import { expectJsonFailure, expectSuccess, explain, runCliBytes } from './helpers/expect-cli.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * `pull create|list|get|update|pause|resume|delete` and `pull events list|get|ack|ack-batch|delete|
 * delete-batch|delete-all`, run as the built CLI against the real server; webhooks are posted to
 * the pull ingest URL on 127.0.0.1. delete-all's partial failure, which the real server cannot be
 * made to produce from outside, is answered by a stub API.
 */

interface PullCreated {
  id: string;
  name: string;
  ingest_url: string;
  secret_token: string;
  full_ingest_url: string;
  event_type_source: string | null;
  event_type_path: string | null;
  retention_days: number;
}

interface PullEndpoint {
  id: string;
  name: string;
  description: string;
  retention_days: number;
  event_type_source: string | null;
  event_type_path: string | null;
  paused: boolean;
  event_counts?: { stored: number; fetched: number; delivered: number; deleted: number };
}

interface EventPage {
  data: { id: string; status: string; event_type: string | null; size_bytes: number; content_type: string }[];
  next_cursor: string | null;
}

interface EventDetail {
  id: string;
  status: string;
  method: string;
  query: string;
  headers: Record<string, string>;
  body?: unknown;
  body_encoding?: string;
  deleted_at?: string;
}

const UNKNOWN = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71';
const BAD_KEY = `hr_${'0'.repeat(40)}`;

let server: RunningServer;
let env: Record<string, string>;

async function cli(args: readonly string[], input?: string): Promise<CliResult> {
  return runCli(args, input === undefined ? { env } : { env, input });
}

async function json<T>(args: readonly string[]): Promise<T> {
  const result = await cli([...args, '--json']);
  expectSuccess(result);
  return parseJsonOutput<T>(result);
}

async function createPull(...extra: string[]): Promise<PullCreated> {
  return json<PullCreated>(['pull', 'create', '--name', `e2e-${randomBytes(3).toString('hex')}`, ...extra]);
}

/** The ingest URL on the address the server really listens on (it names itself localhost). */
function ingestUrl(created: PullCreated): string {
  const url = new URL(created.full_ingest_url);
  return `${server.url}${url.pathname}`;
}

async function post(created: PullCreated, body: Buffer | string, headers: Record<string, string>, query = ''): Promise<string> {
  const response = await fetch(`${ingestUrl(created)}${query}`, { method: 'POST', headers, body });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return (JSON.parse(text) as { data: { event_id: string } }).data.event_id;
}

async function listEvents(endpoint: string, ...extra: string[]): Promise<EventPage> {
  return json<EventPage>(['pull', 'events', 'list', endpoint, ...extra]);
}

beforeAll(async () => {
  server = await startServer();
  env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
});

afterAll(async () => {
  await server?.stop();
});

describe('pull endpoints', () => {
  it('create: the API answer with the token and full ingest URL, once', async () => {
    const created = await createPull('--description', 'from e2e', '--retention-days', '3', '--event-type-source', 'body', '--event-type-path', 'data.type');
    expect(created).toMatchObject({ retention_days: 3, event_type_source: 'body', event_type_path: 'data.type' });
    expect(created.secret_token).toMatch(/^[0-9a-f]{32}$/u);
    expect(created.full_ingest_url).toBe(`${created.ingest_url}/${created.secret_token}`);

    const human = await cli(['pull', 'create', '--name', 'shown-once']);
    expectSuccess(human);
    const url = /^\s+(http\S+\/[0-9a-f]{32})$/mu.exec(human.stdout)?.[1];
    expect(url, human.stdout).toBeDefined();
    expect(human.stdout.split(url ?? '').length - 1).toBe(1);
    expect(human.stdout).toMatch(/shown only once/u);
    // The record's ingest_url stops before the token: the output says so, and a webhook sent there is told what is missing.
    const base = url!.slice(0, url!.lastIndexOf('/'));
    expect(human.stdout).toContain(`Without the token (${base}, the ingest_url of the record) it stores nothing`);
    const tokenless = await fetch(`${server.url}${new URL(created.ingest_url).pathname}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(tokenless.status).toBe(404);
    const { error } = (await tokenless.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('NOT_FOUND');
    expect(error.message).toContain("needs the pull endpoint's secret token");
    expect(error.message).toContain('full_ingest_url');
  });

  it('create --ephemeral --ttl: the endpoint expires after the TTL, shown by get and list; --ttl alone is a usage error', async () => {
    const started = Date.now();
    const created = await json<PullCreated & { ephemeral: boolean; expires_at: string | null }>(['pull', 'create', '--name', 'ci-run', '--ephemeral', '--ttl', '5']);
    expect(created.ephemeral).toBe(true);
    expect(Math.abs(Date.parse(created.expires_at!) - started - 5 * 60_000)).toBeLessThan(30_000);
    const plain = await json<PullCreated & { ephemeral: boolean; expires_at: string | null }>(['pull', 'create', '--name', 'kept']);
    expect(plain).toMatchObject({ ephemeral: false, expires_at: null });
    const got = await cli(['pull', 'get', created.id]);
    expectSuccess(got);
    expect(got.stdout).toMatch(/^Ephemeral:\s+yes$/mu);
    expect(got.stdout).toMatch(/^Expires:\s+\S/mu);
    const listed = await cli(['pull', 'list', '--limit', '2']);
    expectSuccess(listed);
    expect(listed.stdout).toMatch(/^ID\s+NAME\s+STATUS\s+RETENTION\s+EVENT TYPE\s+EXPIRES\s+CREATED$/mu);
    expect(listed.stdout).toMatch(new RegExp(`^${created.id}\\s.*\\sin 5m\\s`, 'mu'));
    const defaulted = await json<{ expires_at: string }>(['pull', 'create', '--name', 'ci-default', '--ephemeral']);
    expect(Math.abs(Date.parse(defaulted.expires_at) - Date.now() - 30 * 60_000)).toBeLessThan(30_000);
    expectJsonFailure(await cli(['pull', 'create', '--name', 'x', '--ttl', '5', '--json']), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await cli(['pull', 'create', '--name', 'x', '--ephemeral', '--ttl', '0', '--json']), 2, 'INVALID_REQUEST');
  });

  it('list pages with --limit/--cursor and --all; get adds the event counts', async () => {
    const made = [await createPull(), await createPull(), await createPull()];
    const everything = await json<{ data: { id: string }[]; next_cursor: string | null }>(['pull', 'list', '--all', '--limit', '2']);
    expect(everything.next_cursor).toBeNull();
    const ids = everything.data.map((endpoint) => endpoint.id);
    for (const endpoint of made) expect(ids).toContain(endpoint.id);
    expect(ids.indexOf(made[2]?.id ?? '')).toBeLessThan(ids.indexOf(made[0]?.id ?? ''));

    // Three or four pages, whatever the number of endpoints the file's other tests made.
    const limit = String(Math.ceil(ids.length / 3));
    const paged: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page <= ids.length; page += 1) {
      const body: { data: { id: string }[]; next_cursor: string | null } = await json(['pull', 'list', '--limit', limit, ...(cursor === null ? [] : ['--cursor', cursor])]);
      expect(body.data.length).toBeLessThanOrEqual(Number(limit));
      paged.push(...body.data.map((endpoint) => endpoint.id));
      cursor = body.next_cursor;
      if (cursor === null) break;
    }
    expect(paged).toEqual(ids);

    const human = await cli(['pull', 'list', '--limit', '1']);
    expectSuccess(human);
    expect(human.stdout).toMatch(/^ID\s+NAME\s+STATUS\s+RETENTION\s+EVENT TYPE\s+EXPIRES\s+CREATED$/mu);
    expect(human.stderr).toMatch(/hookrelay pull list --limit 1 --cursor \S+/u);

    const got = await json<PullEndpoint>(['pull', 'get', made[0]?.id ?? '']);
    expect(got.event_counts).toEqual({ stored: 0, fetched: 0, delivered: 0, deleted: 0 });
    expect(JSON.stringify(got)).not.toContain(made[0]?.secret_token ?? 'x');
  });

  it('update changes only what is given and can clear the event type; nothing to update is exit 2', async () => {
    const created = await createPull('--event-type-source', 'header', '--event-type-path', 'X-Event');
    const updated = await json<PullEndpoint>(['pull', 'update', created.id, '--name', 'renamed', '--retention-days', '30']);
    expect(updated).toMatchObject({ name: 'renamed', retention_days: 30, event_type_source: 'header', event_type_path: 'X-Event' });
    const cleared = await json<PullEndpoint>(['pull', 'update', created.id, '--clear-event-type']);
    expect(cleared).toMatchObject({ event_type_source: null, event_type_path: null, name: 'renamed' });

    expectJsonFailure(await cli(['pull', 'update', created.id, '--json']), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await cli(['pull', 'update', created.id, '--retention-days', '91', '--json']), 2, 'INVALID_REQUEST');
    expectJsonFailure(await cli(['pull', 'update', created.id, '--event-type-source', 'query', '--json']), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await cli(['pull', 'update', created.id, '--clear-event-type', '--event-type-path', 'x', '--json']), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await cli(['pull', 'create', '--name', 'x', '--event-type-source', 'body', '--json']), 2, 'INVALID_REQUEST');
    expectJsonFailure(await cli(['pull', 'create', '--json']), 2, 'INVALID_ARGUMENTS');
  });

  it('pause refuses webhooks (503) until resume', async () => {
    const created = await createPull();
    expect(await json(['pull', 'pause', created.id])).toEqual({ id: created.id, paused: true });
    const refused = await fetch(ingestUrl(created), { method: 'POST', body: '{}' });
    expect(refused.status).toBe(503);
    expect((await json<PullEndpoint>(['pull', 'get', created.id])).paused).toBe(true);
    expect(await json(['pull', 'resume', created.id])).toEqual({ id: created.id, paused: false });
    await post(created, '{}', { 'content-type': 'application/json' });
  });

  it('delete asks for --force without a TTY; with it the endpoint and its events are gone', async () => {
    const created = await createPull();
    const refused = await cli(['pull', 'delete', created.id], 'y\n');
    expect(refused.code, explain(refused)).toBe(2);
    expect(refused.stderr).toMatch(/^CONFIRMATION_REQUIRED: .*\n^hint: .*--force/mu);
    expectSuccess(await cli(['pull', 'get', created.id]));

    expect(await json(['pull', 'delete', created.id, '--force'])).toEqual({ id: created.id, deleted: true });
    expectJsonFailure(await cli(['pull', 'get', created.id, '--json']), 4, 'ENDPOINT_NOT_FOUND');
    expectJsonFailure(await cli(['pull', 'events', 'list', created.id, '--json']), 4, 'ENDPOINT_NOT_FOUND');
    expect((await fetch(ingestUrl(created), { method: 'POST', body: '{}' })).status).toBe(410);
  });

  it('unknown ids exit 4, malformed ids 2, a bad key 3', async () => {
    for (const args of [
      ['pull', 'get', UNKNOWN],
      ['pull', 'update', UNKNOWN, '--name', 'x'],
      ['pull', 'pause', UNKNOWN],
      ['pull', 'resume', UNKNOWN],
      ['pull', 'delete', UNKNOWN, '--force'],
      ['pull', 'events', 'list', UNKNOWN],
      ['pull', 'events', 'get', UNKNOWN, UNKNOWN],
      ['pull', 'events', 'ack', UNKNOWN, UNKNOWN],
      ['pull', 'events', 'ack-batch', UNKNOWN, UNKNOWN],
      ['pull', 'events', 'delete', UNKNOWN, UNKNOWN, '--force'],
      ['pull', 'events', 'delete-batch', UNKNOWN, UNKNOWN, '--force'],
      ['pull', 'events', 'delete-all', UNKNOWN, '--force'],
    ]) {
      const result = await cli([...args, '--json']);
      expect(expectJsonFailure(result, 4, 'ENDPOINT_NOT_FOUND').status).toBe(404);
    }
    expectJsonFailure(await cli(['pull', 'get', 'not-a-uuid', '--json']), 2, 'INVALID_REQUEST');
    expectJsonFailure(await cli(['pull', 'events', 'list', 'not-a-uuid', '--json']), 2, 'INVALID_REQUEST');
    expectJsonFailure(await cli(['pull', 'list', '--limit', '201', '--json']), 2, 'INVALID_REQUEST');
    for (const args of [['pull', 'list'], ['pull', 'events', 'list', UNKNOWN], ['pull', 'create', '--name', 'x']]) {
      const result = await runCli([...args, '--json'], { env: { ...env, HOOKRELAY_API_KEY: BAD_KEY } });
      expectJsonFailure(result, 3, 'UNAUTHORIZED');
    }
  });
});

describe('pull events', () => {
  let endpoint: PullCreated;
  const binary = Buffer.concat([Buffer.from([0x00, 0xff, 0xfe, 0x0d, 0x0a, 0x1b]), randomBytes(2048)]);
  let binaryId: string;
  let jsonId: string;

  beforeAll(async () => {
    endpoint = await createPull('--event-type-source', 'header', '--event-type-path', 'X-Event');
    binaryId = await post(endpoint, binary, { 'content-type': 'application/octet-stream', 'x-event': 'bin' });
    jsonId = await post(endpoint, '{"hello":"world"}', { 'content-type': 'application/json', 'x-event': 'greeting' }, '?a=1&b=2');
  });

  it('list: stored events oldest first, with filters; the list does not fetch', async () => {
    const page = await listEvents(endpoint.id);
    expect(page.data.map((event) => event.id)).toEqual([binaryId, jsonId]);
    expect(page.next_cursor).toBeNull();
    expect(page.data[0]).toMatchObject({ status: 'stored', event_type: 'bin', size_bytes: binary.length, content_type: 'application/octet-stream' });
    expect((await listEvents(endpoint.id, '--event-type', 'greeting')).data.map((event) => event.id)).toEqual([jsonId]);
    expect((await listEvents(endpoint.id, '--status', 'delivered')).data).toEqual([]);
    expect((await listEvents(endpoint.id, '--since', '2999-01-01')).data).toEqual([]);
    expect((await listEvents(endpoint.id, '--received-after', '1h', '--until', '2999-01-01T00:00:00Z')).data).toHaveLength(2);

    const first = await listEvents(endpoint.id, '--limit', '1');
    expect(first.data.map((event) => event.id)).toEqual([binaryId]);
    expect(first.next_cursor).not.toBeNull();
    const second = await listEvents(endpoint.id, '--limit', '1', '--cursor', first.next_cursor ?? '');
    expect(second.data.map((event) => event.id)).toEqual([jsonId]);
    expect(second.next_cursor).toBeNull();
    expect((await listEvents(endpoint.id, '--limit', '1', '--all')).data.map((event) => event.id)).toEqual([binaryId, jsonId]);

    const human = await cli(['pull', 'events', 'list', endpoint.id, '--limit', '1']);
    expectSuccess(human);
    expect(human.stdout).toMatch(/^RECEIVED\s+EVENT\s+STATUS\s+TYPE\s+SIZE\s+CONTENT TYPE$/mu);
    expect(human.stderr).toMatch(new RegExp(`hookrelay pull events list ${endpoint.id} --limit 1 --cursor \\S+`, 'u'));

    expectJsonFailure(await cli(['pull', 'events', 'list', endpoint.id, '--status', 'nope', '--json']), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await cli(['pull', 'events', 'list', endpoint.id, '--limit', '1001', '--json']), 2, 'INVALID_REQUEST');
    expectJsonFailure(await cli(['pull', 'events', 'list', endpoint.id, '--until', 'soon', '--json']), 2, 'INVALID_ARGUMENTS');
  });

  it('get --body-only writes exactly the posted bytes and nothing else; the event is then fetched', async () => {
    const result = await runCliBytes(['pull', 'events', 'get', endpoint.id, binaryId, '--body-only'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout.equals(binary)).toBe(true);

    const text = await runCliBytes(['pull', 'events', 'get', endpoint.id, jsonId, '--body-only'], env);
    expect(text.stdout.toString('utf8')).toBe('{"hello":"world"}');

    expect((await listEvents(endpoint.id, '--status', 'fetched')).data.map((event) => event.id)).toEqual([binaryId, jsonId]);
    expect((await listEvents(endpoint.id)).data).toEqual([]);
    expectJsonFailure(await cli(['pull', 'events', 'get', endpoint.id, binaryId, '--body-only', '--json']), 2, 'INVALID_ARGUMENTS');
  });

  it('get: the record with the request; JSON bodies embedded, others (or --base64) as base64', async () => {
    const detail = await json<EventDetail>(['pull', 'events', 'get', endpoint.id, jsonId]);
    expect(detail).toMatchObject({ id: jsonId, status: 'fetched', method: 'POST', query: 'a=1&b=2', body: { hello: 'world' } });
    expect(detail.headers['x-event']).toBe('greeting');
    const forced = await json<EventDetail>(['pull', 'events', 'get', endpoint.id, jsonId, '--base64']);
    expect(forced.body_encoding).toBe('base64');
    expect(Buffer.from(String(forced.body), 'base64').toString('utf8')).toBe('{"hello":"world"}');
    const bin = await json<EventDetail>(['pull', 'events', 'get', endpoint.id, binaryId]);
    expect(bin.body_encoding).toBe('base64');
    expect(Buffer.from(String(bin.body), 'base64').equals(binary)).toBe(true);

    const human = await cli(['pull', 'events', 'get', endpoint.id, jsonId]);
    expectSuccess(human);
    expect(human.stdout).toMatch(/^Status:\s+fetched$/mu);
    expect(human.stdout).toMatch(/^Request:\s+POST \?a=1&b=2$/mu);
    expect(human.stdout).toContain('"hello": "world"');

    expectJsonFailure(await cli(['pull', 'events', 'get', endpoint.id, UNKNOWN, '--json']), 4, 'NOT_FOUND');
    expectJsonFailure(await cli(['pull', 'events', 'get', endpoint.id, 'nope', '--json']), 2, 'INVALID_REQUEST');
  });

  it('ack and ack-batch move events to delivered, once', async () => {
    const ack = await json<{ event_id: string; status: string; already_delivered: boolean; delivered_at: string }>(['pull', 'events', 'ack', endpoint.id, binaryId]);
    expect(ack).toMatchObject({ event_id: binaryId, status: 'delivered', already_delivered: false });
    const again = await json<{ already_delivered: boolean; delivered_at: string }>(['pull', 'events', 'ack', endpoint.id, binaryId]);
    expect(again).toEqual(expect.objectContaining({ already_delivered: true, delivered_at: ack.delivered_at }));

    const batch = await json<{ results: { event_id: string; outcome: string }[]; delivered_count: number; already_delivered_count: number; not_found_count: number }>([
      'pull',
      'events',
      'ack-batch',
      endpoint.id,
      binaryId,
      jsonId,
      UNKNOWN,
    ]);
    expect(batch.results.map((entry) => [entry.event_id, entry.outcome])).toEqual([
      [binaryId, 'already_delivered'],
      [jsonId, 'delivered'],
      [UNKNOWN, 'not_found'],
    ]);
    expect(batch).toMatchObject({ delivered_count: 1, already_delivered_count: 1, not_found_count: 1 });
    expect((await listEvents(endpoint.id, '--status', 'delivered')).data.map((event) => event.id)).toEqual([binaryId, jsonId]);

    const human = await cli(['pull', 'events', 'ack', endpoint.id, jsonId]);
    expect(human.stdout).toMatch(/^Already acknowledged /mu);
    expectJsonFailure(await cli(['pull', 'events', 'ack', endpoint.id, UNKNOWN, '--json']), 4, 'NOT_FOUND');
    expect(expectJsonFailure(await cli(['pull', 'events', 'ack-batch', endpoint.id, 'nope', '--json']), 2, 'INVALID_ARGUMENTS').request_id).toBeNull();
  });

  it('delete and delete-batch: --force needed without a TTY; deleted events lose their body', async () => {
    const target = await createPull();
    const ids = [
      await post(target, 'a', { 'content-type': 'text/plain' }),
      await post(target, 'b', { 'content-type': 'text/plain' }),
      await post(target, 'c', { 'content-type': 'text/plain' }),
    ];
    const [first, second, third] = ids as [string, string, string];

    for (const args of [
      ['pull', 'events', 'delete', target.id, first],
      ['pull', 'events', 'delete-batch', target.id, first, second],
    ]) {
      expectJsonFailure(await cli([...args, '--json'], 'y\n'), 2, 'CONFIRMATION_REQUIRED');
    }
    expect((await listEvents(target.id)).data).toHaveLength(3);

    const deleted = await json<{ event_id: string; already_deleted: boolean }>(['pull', 'events', 'delete', target.id, first, '--force']);
    expect(deleted).toMatchObject({ event_id: first, already_deleted: false });
    const batch = await json<{ results: { event_id: string; outcome: string }[]; deleted_count: number; already_deleted_count: number; not_found_count: number }>([
      'pull',
      'events',
      'delete-batch',
      target.id,
      first,
      second,
      UNKNOWN,
      '--force',
    ]);
    expect(batch.results.map((entry) => [entry.event_id, entry.outcome])).toEqual([
      [first, 'already_deleted'],
      [second, 'deleted'],
      [UNKNOWN, 'not_found'],
    ]);
    expect((await listEvents(target.id)).data.map((event) => event.id)).toEqual([third]);

    const gone = await json<EventDetail>(['pull', 'events', 'get', target.id, first]);
    expect(gone.deleted_at).toEqual(expect.any(String));
    expect(gone.body).toBeUndefined();
    const bodyOnly = await runCliBytes(['pull', 'events', 'get', target.id, first, '--body-only'], env);
    expect(bodyOnly.code).toBe(4);
    expect(bodyOnly.stdout.length).toBe(0);
    expect(bodyOnly.stderr).toMatch(/^PAYLOAD_DELETED: /mu);
  });

  it('delete-all: refused without a TTY; with --force it deletes what matches (all statuses by default)', async () => {
    const target = await createPull('--event-type-source', 'header', '--event-type-path', 'X-Event');
    const pings = [await post(target, '1', { 'x-event': 'ping' }), await post(target, '2', { 'x-event': 'ping' })];
    const push = await post(target, '3', { 'x-event': 'push' });
    const delivered = await post(target, '4', { 'x-event': 'push' });
    expectSuccess(await cli(['pull', 'events', 'ack', target.id, delivered]));

    const refused = await cli(['pull', 'events', 'delete-all', target.id, '--json'], 'y\n');
    expectJsonFailure(refused, 2, 'CONFIRMATION_REQUIRED');
    expect((await json<PullEndpoint>(['pull', 'get', target.id])).event_counts).toMatchObject({ stored: 3, delivered: 1, deleted: 0 });

    const byType = await json<{ deleted: number; deleted_event_ids: string[] }>(['pull', 'events', 'delete-all', target.id, '--event-type', 'ping', '--force']);
    expect(byType).toEqual({ deleted: 2, deleted_event_ids: pings });

    const human = await cli(['pull', 'events', 'delete-all', target.id, '--force']);
    expectSuccess(human);
    expect(human.stdout.trim().split('\n')).toEqual(['deleted 2', push, delivered]);
    expect((await json<PullEndpoint>(['pull', 'get', target.id])).event_counts).toMatchObject({ stored: 0, fetched: 0, delivered: 0, deleted: 4 });

    const nothing = await json<{ deleted: number; deleted_event_ids: string[] }>(['pull', 'events', 'delete-all', target.id, '--status', 'stored', '--force']);
    expect(nothing).toEqual({ deleted: 0, deleted_event_ids: [] });
    expectJsonFailure(await cli(['pull', 'events', 'delete-all', target.id, '--limit', '0', '--force', '--json']), 2, 'INVALID_ARGUMENTS');
  });

  it('delete-all --limit caps how many go, oldest first', async () => {
    const target = await createPull();
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) ids.push(await post(target, String(i), { 'content-type': 'text/plain' }));
    const capped = await json<{ deleted: number; deleted_event_ids: string[] }>(['pull', 'events', 'delete-all', target.id, '--limit', '2', '--force']);
    expect(capped).toEqual({ deleted: 2, deleted_event_ids: ids.slice(0, 2) });
    expect((await listEvents(target.id)).data.map((event) => event.id)).toEqual([ids[2]]);
  });
});

/** A stand-in API whose delete-all fails part-way, as the real one does when a chunk cannot commit. */
async function startFailingApi(answers: { status: number; body: unknown }[]): Promise<{ url: string; calls: unknown[]; close: () => Promise<void> }> {
  const calls: unknown[] = [];
  const stub: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const answer = /\/events\/delete-all$/u.test(req.url ?? '') ? answers.shift() : undefined;
      if (answer !== undefined) calls.push(JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null'));
      const reply = answer ?? { status: 404, body: { error: { code: 'NOT_FOUND', message: 'not here' }, meta: { request_id: 'stub' } } };
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  const { port } = stub.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, calls, close: () => new Promise<void>((resolve) => stub.close(() => resolve())) };
}

describe('pull events delete-all when the server fails part-way', () => {
  const endpointId = '0190b2c4-7d2e-7a51-9c3f-000000000001';
  const id = (n: number): string => `0190b2c4-7d2e-7a51-9c3f-${n.toString(16).padStart(12, '0')}`;

  it('PARTIAL_DELETE_FAILURE: exit 6 and the committed ids from the error data (stderr JSON and human)', async () => {
    const failure = {
      status: 500,
      body: {
        data: { deleted: 2, deleted_event_ids: [id(10), id(11)] },
        error: { code: 'PARTIAL_DELETE_FAILURE', message: 'delete-all failed after deleting 2 events; data lists them' },
        meta: { request_id: 'req-1' },
      },
    };
    const api = await startFailingApi([failure, failure]);
    try {
      const stubEnv = { HOOKRELAY_API_URL: api.url, HOOKRELAY_API_KEY: server.apiKey };
      const result = await runCli(['pull', 'events', 'delete-all', endpointId, '--force', '--json'], { env: stubEnv });
      expect(result.code, explain(result)).toBe(6);
      expect(result.stdout).toBe('');
      const report = JSON.parse(result.stderr) as { error: { code: string; request_id: string }; data: { deleted: number; deleted_event_ids: string[] } };
      expect(report.error).toMatchObject({ code: 'PARTIAL_DELETE_FAILURE', request_id: 'req-1' });
      expect(report.data).toEqual({ deleted: 2, deleted_event_ids: [id(10), id(11)] });

      const human = await runCli(['pull', 'events', 'delete-all', endpointId, '--force'], { env: stubEnv });
      expect(human.code).toBe(6);
      expect(human.stdout).toBe('');
      expect(human.stderr).toContain(`deleted 2 events before the failure:\n${id(10)}\n${id(11)}\n`);
      expect(human.stderr).toMatch(/^PARTIAL_DELETE_FAILURE: /mu);
      expect(api.calls[0]).toEqual({ limit: 1000 });
    } finally {
      await api.close();
    }
  });

  it('DELETE_FAILED after a full first request: the ids of the first request are reported', async () => {
    const firstIds = Array.from({ length: 1000 }, (_, n) => id(n));
    const api = await startFailingApi([
      { status: 200, body: { data: { deleted: 1000, deleted_event_ids: firstIds }, meta: { request_id: 'req-1' } } },
      {
        status: 500,
        body: { data: { deleted: 0, deleted_event_ids: [] }, error: { code: 'DELETE_FAILED', message: 'delete-all failed; no event was deleted' }, meta: { request_id: 'req-2' } },
      },
    ]);
    try {
      const result = await runCli(['pull', 'events', 'delete-all', endpointId, '--status', 'stored', '--force', '--json'], {
        env: { HOOKRELAY_API_URL: api.url, HOOKRELAY_API_KEY: server.apiKey },
      });
      expect(result.code, explain(result)).toBe(6);
      expect(result.stdout).toBe('');
      const report = JSON.parse(result.stderr) as { error: { code: string }; data: { deleted: number; deleted_event_ids: string[] } };
      expect(report.error.code).toBe('DELETE_FAILED');
      expect(report.data.deleted).toBe(1000);
      expect(report.data.deleted_event_ids).toEqual(firstIds);
      expect(api.calls).toEqual([
        { status: ['stored'], limit: 1000 },
        { status: ['stored'], limit: 1000 },
      ]);
    } finally {
      await api.close();
    }
  });
});
