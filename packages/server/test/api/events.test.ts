import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookrelayApiError, HookrelayClient } from '@hookrelay/shared';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';

/**
 * Events fanned out to subscribed endpoints, without a worker: every message stays queued. Each
 * test works in a project of its own, so that its endpoints are the only ones an event can find.
 */
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

let urlCounter = 0;

/** A project of its own and helpers bound to its key. */
async function project() {
  const { apiKey, projectId } = await t.createProject();
  const request = (method: string, url: string, body?: unknown, headers?: Record<string, string>) =>
    t.request(method, url, { apiKey, ...(body !== undefined ? { body } : {}), ...(headers ? { headers } : {}) });
  const endpoint = async (fields: Record<string, unknown> = {}): Promise<string> => {
    const res = await request('POST', '/v1/endpoints', { url: `https://hooks.example.com/e/${++urlCounter}`, ...fields });
    expect(res.status, res.raw).toBe(201);
    return res.body.data.id as string;
  };
  const send = async (body: Record<string, unknown>, headers?: Record<string, string>) => {
    const res = await request('POST', '/v1/events', { ...('body' in body ? {} : { payload: { n: 1 } }), ...body }, headers);
    expect(res.status, res.raw).toBe(202);
    return res.body.data as { event_id: string; event_type: string; owner_id: string | null; channels: string[]; messages: { message_id: string; endpoint_id: string }[]; created_at: string };
  };
  /** The endpoints an event reached, sorted. */
  const receivers = async (body: Record<string, unknown>) => (await send(body)).messages.map((m) => m.endpoint_id).sort();
  return { apiKey, projectId, request, endpoint, send, receivers };
}

const sorted = (ids: string[]) => [...ids].sort();

describe('owners and subscriptions on outbound endpoints', () => {
  it('default to null, show on create, GET and PATCH, and are not in the list summary', async () => {
    const p = await project();
    const plain = await p.request('POST', '/v1/endpoints', { url: 'https://hooks.example.com/plain' });
    expect(plain.body.data).toMatchObject({ owner_id: null, event_types: null, channels: null });

    const created = await p.request('POST', '/v1/endpoints', {
      url: 'https://hooks.example.com/subscribed',
      owner_id: 'cus_42',
      event_types: ['invoice.*', 'customer.created', 'invoice.*'],
      channels: ['eu', 'billing'],
    });
    expect(created.status, created.raw).toBe(201);
    // A glob given twice is kept once, in the order first given.
    expect(created.body.data).toMatchObject({ owner_id: 'cus_42', event_types: ['invoice.*', 'customer.created'], channels: ['eu', 'billing'] });
    const id = created.body.data.id;
    expect((await p.request('GET', `/v1/endpoints/${id}`)).body.data).toMatchObject({ owner_id: 'cus_42', event_types: ['invoice.*', 'customer.created'], channels: ['eu', 'billing'] });

    const patched = await p.request('PATCH', `/v1/endpoints/${id}`, { owner_id: null, event_types: ['order.*'] });
    expect(patched.status, patched.raw).toBe(200);
    expect(patched.body.data).toMatchObject({ owner_id: null, event_types: ['order.*'], channels: ['eu', 'billing'] });
    const cleared = await p.request('PATCH', `/v1/endpoints/${id}`, { event_types: null, channels: null });
    expect(cleared.body.data).toMatchObject({ owner_id: null, event_types: null, channels: null });

    const list = await p.request('GET', '/v1/endpoints');
    for (const row of list.body.data) expect(Object.keys(row).sort()).toEqual(['created_at', 'description', 'ephemeral', 'expires_at', 'id', 'paused', 'url']);
  });

  it('refuses a bad owner, too many globs or channels, naming the field', async () => {
    const p = await project();
    const url = 'https://hooks.example.com/bad';
    const refused = async (fields: Record<string, unknown>, field: string, text: string) => {
      const res = await p.request('POST', '/v1/endpoints', { url, ...fields });
      expectError(res, 400, 'INVALID_REQUEST', `${field}: ${text}`);
      expect(res.body.error.details).toContainEqual({ path: field, message: text });
    };
    await refused({ owner_id: '' }, 'body.owner_id', 'must be 1–256 printable characters');
    await refused({ owner_id: 'x'.repeat(257) }, 'body.owner_id', 'must be 1–256 printable characters');
    await refused({ owner_id: 'cus\n42' }, 'body.owner_id', 'must be 1–256 printable characters');
    await refused({ owner_id: 'cus\u202e24' }, 'body.owner_id', 'must be 1–256 printable characters');
    await refused({ owner_id: 42 }, 'body.owner_id', 'must be a string');
    await refused({ event_types: Array.from({ length: 101 }, (_, i) => `type.${i}`) }, 'body.event_types', 'must hold at most 100 globs');
    await refused({ event_types: [''] }, 'body.event_types.0', 'must not be empty');
    await refused({ event_types: ['invoice paid*'] }, 'body.event_types.0', 'must hold only letters, digits, . _ - : / and *');
    await refused({ event_types: 'invoice.*' }, 'body.event_types', 'must be an array of globs');
    await refused({ channels: Array.from({ length: 51 }, (_, i) => `c${i}`) }, 'body.channels', 'must hold at most 50 channel names');
    await refused({ channels: ['x'.repeat(129)] }, 'body.channels.0', 'must be 1–128 printable characters');

    const id = await p.endpoint();
    const res = await p.request('PATCH', `/v1/endpoints/${id}`, { event_types: Array.from({ length: 101 }, (_, i) => `t${i}`) });
    expectError(res, 400, 'INVALID_REQUEST', 'body.event_types: must hold at most 100 globs');
    // 100 globs and 50 channels are the limits, not beyond them.
    const full = await p.request('PATCH', `/v1/endpoints/${id}`, {
      owner_id: `${'é'.repeat(255)}!`,
      event_types: Array.from({ length: 100 }, (_, i) => `t${i}.*`),
      channels: Array.from({ length: 50 }, (_, i) => `c${i}`),
    });
    expect(full.status, full.raw).toBe(200);
    expect(full.body.data.event_types).toHaveLength(100);
  });

  it('lists the endpoints of an owner, and those an event type would reach', async () => {
    const p = await project();
    const mine = await p.endpoint();
    const invoices = await p.endpoint({ owner_id: 'cus_1', event_types: ['invoice.*'] });
    const created = await p.endpoint({ owner_id: 'cus_1', event_types: ['*.created'] });
    const other = await p.endpoint({ owner_id: 'cus_2', event_types: ['invoice.paid'], channels: ['eu'] });
    const ops = await p.endpoint({ event_types: ['hookrelay.*'] });
    const ids = async (query: string) => {
      const res = await p.request('GET', `/v1/endpoints?${query}`);
      expect(res.status, res.raw).toBe(200);
      return sorted(res.body.data.map((e: { id: string }) => e.id));
    };
    expect(await ids('owner_id=cus_1')).toEqual(sorted([invoices, created]));
    expect(await ids('owner_id=cus_3')).toEqual([]);
    // Channels aside and any owner: every endpoint whose event_types take the type.
    expect(await ids('event_type=invoice.paid')).toEqual(sorted([mine, invoices, other]));
    expect(await ids('event_type=invoice.created')).toEqual(sorted([mine, invoices, created]));
    expect(await ids('event_type=invoice.paid&owner_id=cus_1')).toEqual([invoices]);
    // A reserved type reaches only a glob that names it: not `null`, not `*.created`.
    expect(await ids('event_type=hookrelay.endpoint.created')).toEqual([ops]);
    // Keyset pages with a filter: newest first, each endpoint once.
    const first = await p.request('GET', '/v1/endpoints?event_type=invoice.paid&limit=2');
    expect(first.body.data.map((e: { id: string }) => e.id)).toEqual([other, invoices]);
    const second = await p.request('GET', `/v1/endpoints?event_type=invoice.paid&limit=2&cursor=${first.body.meta.next_cursor}`);
    expect(second.body.data.map((e: { id: string }) => e.id)).toEqual([mine]);
    expect(second.body.meta.next_cursor).toBeNull();
    expectError(await p.request('GET', '/v1/endpoints?owner_id='), 400, 'INVALID_REQUEST', 'query.owner_id');
    expectError(await p.request('GET', '/v1/endpoints?channel=eu'), 400, 'INVALID_REQUEST', 'query.channel');
  });
});

describe('POST /v1/events', () => {
  it('answers 202 with one message per endpoint that takes it, matched by owner', async () => {
    const p = await project();
    const mine = await p.endpoint();
    const acme = await p.endpoint({ owner_id: 'acme' });
    const acme2 = await p.endpoint({ owner_id: 'acme', event_types: ['order.*'] });
    await p.endpoint({ owner_id: 'globex' });

    const res = await p.request('POST', '/v1/events', { event_type: 'order.paid', payload: { total: 10 }, owner_id: 'acme' });
    expect(res.status, res.raw).toBe(202);
    expect(res.body.data).toEqual({
      event_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      event_type: 'order.paid',
      owner_id: 'acme',
      channels: [],
      messages: expect.any(Array),
      created_at: expect.any(String),
    });
    expect(sorted(res.body.data.messages.map((m: { endpoint_id: string }) => m.endpoint_id))).toEqual(sorted([acme, acme2]));
    // Absent and null owner alike: the operator's own endpoints.
    expect(await p.receivers({ event_type: 'order.paid' })).toEqual([mine]);
    expect(await p.receivers({ event_type: 'order.paid', owner_id: null })).toEqual([mine]);
    expect(await p.receivers({ event_type: 'order.paid', owner_id: 'ACME' })).toEqual([]);
  });

  it('matches event types by glob, as the listen filters do', async () => {
    const p = await project();
    const all = await p.endpoint({ owner_id: 'o' });
    const star = await p.endpoint({ owner_id: 'o', event_types: ['*'] });
    const invoices = await p.endpoint({ owner_id: 'o', event_types: ['invoice.*', 'customer.created'] });
    const created = await p.endpoint({ owner_id: 'o', event_types: ['*.created'] });
    const middle = await p.endpoint({ owner_id: 'o', event_types: ['a*b*c'] });
    const literal = await p.endpoint({ owner_id: 'o', event_types: ['under_score', 'x_*'] });
    const none = await p.endpoint({ owner_id: 'o', event_types: [] });
    const of = (type: string) => p.receivers({ event_type: type, owner_id: 'o' });
    expect(await of('invoice.paid')).toEqual(sorted([all, star, invoices]));
    expect(await of('invoice.')).toEqual(sorted([all, star, invoices]));
    expect(await of('invoice')).toEqual(sorted([all, star]));
    expect(await of('customer.created')).toEqual(sorted([all, star, invoices, created]));
    expect(await of('Customer.created')).toEqual(sorted([all, star, created]));
    expect(await of('customer.created.v2')).toEqual(sorted([all, star]));
    expect(await of('abc')).toEqual(sorted([all, star, middle]));
    expect(await of('a-b-b-c')).toEqual(sorted([all, star, middle]));
    expect(await of('ab')).toEqual(sorted([all, star]));
    // `_` is itself, not LIKE's wildcard.
    expect(await of('under_score')).toEqual(sorted([all, star, literal]));
    expect(await of('underXscore')).toEqual(sorted([all, star]));
    expect(await of('x_1')).toEqual(sorted([all, star, literal]));
    expect(await of('xy1')).toEqual(sorted([all, star]));
    expect((await p.request('GET', `/v1/endpoints/${none}`)).body.data.event_types).toEqual([]);
  });

  it('admits an event by channel: an endpoint with channels takes only events naming one, one without takes any', async () => {
    const p = await project();
    const any = await p.endpoint();
    const eu = await p.endpoint({ channels: ['eu'] });
    const euUs = await p.endpoint({ channels: ['eu', 'us'] });
    const closed = await p.endpoint({ channels: [] });
    expect(await p.receivers({ event_type: 'x' })).toEqual([any]);
    expect(await p.receivers({ event_type: 'x', channels: ['eu'] })).toEqual(sorted([any, eu, euUs]));
    expect(await p.receivers({ event_type: 'x', channels: ['us', 'apac'] })).toEqual(sorted([any, euUs]));
    expect(await p.receivers({ event_type: 'x', channels: ['EU'] })).toEqual([any]);
    expect(await p.receivers({ event_type: 'x', channels: [] })).toEqual([any]);
    expect((await p.request('GET', `/v1/endpoints/${closed}`)).body.data.channels).toEqual([]);
  });

  it('reaches paused endpoints (which hold the message), but no deleted, expired or other project’s endpoint', async () => {
    const p = await project();
    const live = await p.endpoint();
    const paused = await p.endpoint();
    expect((await p.request('POST', `/v1/endpoints/${paused}/pause`)).status).toBe(200);
    const deleted = await p.endpoint();
    expect((await p.request('DELETE', `/v1/endpoints/${deleted}`)).status).toBe(200);
    const expired = await p.endpoint({ ephemeral: true, ttl_minutes: 5 });
    await t.db.sql`UPDATE endpoints SET expires_at = now() - interval '1 second' WHERE id = ${expired}`;
    await (await project()).endpoint();

    const event = await p.send({ event_type: 'user.created' });
    expect(sorted(event.messages.map((m) => m.endpoint_id))).toEqual(sorted([live, paused]));
    const held = event.messages.find((m) => m.endpoint_id === paused)!;
    expect((await p.request('GET', `/v1/messages/${held.message_id}`)).body.data).toMatchObject({ status: 'queued', event_id: event.event_id });
    const jobs = await t.db.sql<{ destination: string }>`SELECT destination FROM delivery_jobs WHERE message_id = ANY(${event.messages.map((m) => m.message_id)}::uuid[])`;
    expect(sorted(jobs.map((j) => j.destination))).toEqual(sorted([live, paused]));
  });

  it('follows an endpoint’s new owner and event types after a PATCH', async () => {
    const p = await project();
    const id = await p.endpoint({ owner_id: 'before', event_types: ['a.*'] });
    expect(await p.receivers({ event_type: 'a.1', owner_id: 'before' })).toEqual([id]);
    expect((await p.request('PATCH', `/v1/endpoints/${id}`, { owner_id: 'after' })).status).toBe(200);
    expect(await p.receivers({ event_type: 'a.1', owner_id: 'before' })).toEqual([]);
    expect(await p.receivers({ event_type: 'a.1', owner_id: 'after' })).toEqual([id]);
    expect((await p.request('PATCH', `/v1/endpoints/${id}`, { event_types: ['b.*'] })).status).toBe(200);
    expect(await p.receivers({ event_type: 'a.1', owner_id: 'after' })).toEqual([]);
    expect(await p.receivers({ event_type: 'b.1', owner_id: 'after' })).toEqual([id]);
    // A PATCH of other fields leaves the subscriptions alone.
    expect((await p.request('PATCH', `/v1/endpoints/${id}`, { description: 'still b' })).status).toBe(200);
    expect(await p.receivers({ event_type: 'b.1', owner_id: 'after' })).toEqual([id]);
  });

  it('keeps an event that no endpoint takes, with no messages', async () => {
    const p = await project();
    await p.endpoint({ event_types: ['other.*'] });
    const event = await p.send({ event_type: 'lonely.event', body: 'plain', content_type: 'text/plain' });
    expect(event.messages).toEqual([]);
    const got = await p.request('GET', `/v1/events/${event.event_id}`);
    expect(got.status, got.raw).toBe(200);
    expect(got.body.data).toMatchObject({ event_id: event.event_id, event_type: 'lonely.event', message_count: 0, messages: [], body: 'plain', content_type: 'text/plain' });
  });

  it('refuses a reserved type, a missing payload and bad fields, naming the field', async () => {
    const p = await project();
    const refused = async (body: Record<string, unknown>, field: string, text: string) => {
      const res = await p.request('POST', '/v1/events', body);
      expectError(res, 400, 'INVALID_REQUEST', `${field}: ${text}`);
    };
    const reserved = 'must not start with "hookrelay.": that prefix is reserved for hookrelay\'s own event types';
    await refused({ event_type: 'hookrelay.endpoint.disabled', payload: {} }, 'body.event_type', reserved);
    await refused({ event_type: 'HookRelay.endpoint.paused', payload: {} }, 'body.event_type', reserved);
    await refused({ event_type: 'invoice paid', payload: {} }, 'body.event_type', 'must hold only letters, digits and . _ - : /');
    await refused({ event_type: 'x' }, 'body.payload', 'or body is required');
    await refused({ event_type: 'x', payload: 1, body: 'b' }, 'body.body', 'must not be given together with payload');
    await refused({ payload: 1 }, 'body.event_type', 'must be a string');
    await refused({ event_type: '', payload: 1 }, 'body.event_type', 'must not be empty');
    await refused({ event_type: 'x', payload: 1, owner_id: '\u0007' }, 'body.owner_id', 'must be 1–256 printable characters');
    await refused({ event_type: 'x', payload: 1, channels: ['c'.repeat(129)] }, 'body.channels.0', 'must be 1–128 printable characters');
    await refused({ event_type: 'x', payload: 1, endpoint_id: `ep_${'0'.repeat(32)}` }, 'body.endpoint_id', 'unknown field');
    expect(await t.db.sql`SELECT 1 FROM events WHERE project_id = ${p.projectId}`).toHaveLength(0);
  });

  it('makes ordinary messages: signed over the same bytes, in the logs, each with its event_id', async () => {
    const p = await project();
    const a = await p.endpoint();
    const b = await p.endpoint();
    const event = await p.send({ event_type: 'doc.shared', payload: { doc: 7 } });
    const direct = await p.request('POST', '/v1/messages', { endpoint_id: a, payload: { doc: 7 }, event_type: 'doc.shared' });
    for (const m of event.messages) {
      const got = (await p.request('GET', `/v1/messages/${m.message_id}`)).body.data;
      expect(got).toMatchObject({ message_id: m.message_id, endpoint_id: m.endpoint_id, event_id: event.event_id, event_type: 'doc.shared', payload: { doc: 7 }, content_type: 'application/json', idempotency_key: null, status: 'queued' });
    }
    expect((await p.request('GET', `/v1/messages/${direct.body.data.message_id}`)).body.data.event_id).toBeNull();
    const logs = await p.request('GET', `/v1/logs?endpoint_id=${b}`);
    expect(logs.body.data.map((l: { message_id: string }) => l.message_id)).toEqual(event.messages.filter((m) => m.endpoint_id === b).map((m) => m.message_id));
    // One payload for the event, which every message delivers.
    const keys = await t.db.sql<{ payload_key: string }>`SELECT DISTINCT payload_key FROM outbound_messages WHERE event_id = ${event.event_id}`;
    expect(keys).toEqual([{ payload_key: `event/${event.event_id}` }]);
    // The messages' ids follow the event's.
    for (const m of event.messages) expect(m.message_id > event.event_id).toBe(true);
  });

  it('lets a message of an event be retried and deleted on its own; the event keeps its payload', async () => {
    const p = await project();
    await p.endpoint();
    await p.endpoint();
    const event = await p.send({ event_type: 'doc.deleted', payload: { doc: 8 } });
    const [first, second] = event.messages;
    const retried = await p.request('POST', `/v1/messages/${first!.message_id}/retry`);
    expect(retried.body.data).toEqual({ message_id: first!.message_id, status: 'queued' });
    expect((await p.request('DELETE', `/v1/messages/${first!.message_id}`)).status).toBe(200);
    const deleted = (await p.request('GET', `/v1/messages/${first!.message_id}`)).body.data;
    expect(deleted).not.toHaveProperty('payload');
    expect(deleted.deleted_at).toEqual(expect.any(String));
    expect((await p.request('GET', `/v1/messages/${second!.message_id}`)).body.data.payload).toEqual({ doc: 8 });
    // Nothing for the payload sweeper: the bytes are the event's.
    expect(await t.db.sql`SELECT 1 FROM outbound_messages WHERE id = ${first!.message_id} AND payload_key IS NOT NULL`).toHaveLength(0);
    const got = (await p.request('GET', `/v1/events/${event.event_id}`)).body.data;
    expect(got.payload).toEqual({ doc: 8 });
    expect(got.messages.find((m: { message_id: string }) => m.message_id === first!.message_id)).toMatchObject({ status: 'queued', deleted_at: expect.any(String) });
    expect(got.messages.find((m: { message_id: string }) => m.message_id === second!.message_id)).not.toHaveProperty('deleted_at');
  });

  it('answers an idempotent repeat with the first event and fans out only once', async () => {
    const p = await project();
    await p.endpoint();
    await p.endpoint({ channels: ['eu', 'us'] });
    const body = { event_type: 'pay.done', payload: { id: 1 }, channels: ['us', 'eu'] };
    const first = await p.send(body, { 'idempotency-key': 'pay-1' });
    expect(first.messages).toHaveLength(2);
    // The same request by header or by body, channels in any order: the first event, no new messages.
    expect(await p.send(body, { 'idempotency-key': 'pay-1' })).toEqual(first);
    expect(await p.send({ ...body, channels: ['eu', 'us'], idempotency_key: 'pay-1' })).toEqual(first);
    expect(await t.db.sql`SELECT 1 FROM outbound_messages WHERE project_id = ${p.projectId}`).toHaveLength(2);
    expect(await t.db.sql`SELECT 1 FROM events WHERE project_id = ${p.projectId}`).toHaveLength(1);
    // An endpoint added since changes nothing for a repeat.
    await p.endpoint();
    expect((await p.send(body, { 'idempotency-key': 'pay-1' })).messages).toEqual(first.messages);

    const conflict = await p.request('POST', '/v1/events', { ...body, payload: { id: 2 } }, { 'idempotency-key': 'pay-1' });
    expectError(conflict, 409, 'IDEMPOTENCY_CONFLICT', `event ${first.event_id}`);
    expectError(await p.request('POST', '/v1/events', { ...body, owner_id: 'x' }, { 'idempotency-key': 'pay-1' }), 409, 'IDEMPOTENCY_CONFLICT');
    expectError(await p.request('POST', '/v1/events', { ...body, idempotency_key: 'a' }, { 'idempotency-key': 'b' }), 400, 'INVALID_REQUEST', 'header.idempotency-key');
    // A key of POST /v1/messages is a key of its own.
    const direct = await p.request('POST', '/v1/messages', { endpoint_id: first.messages[0]!.endpoint_id, payload: { other: true } }, { 'idempotency-key': 'pay-1' });
    expect(direct.status, direct.raw).toBe(202);
    // Concurrent submissions of one key make one event.
    const concurrent = await Promise.all(Array.from({ length: 5 }, () => p.send({ event_type: 'race', payload: {} }, { 'idempotency-key': 'race-1' })));
    expect(new Set(concurrent.map((e) => e.event_id)).size).toBe(1);
    expect(await t.db.sql`SELECT 1 FROM events WHERE project_id = ${p.projectId} AND idempotency_key = 'race-1'`).toHaveLength(1);
  });

  it('fans out all the messages or none', async () => {
    const p = await project();
    await p.endpoint();
    const failing = await p.endpoint();
    await p.endpoint();
    // The second of three inserts fails: the statement stores nothing.
    await t.db.sql.execScript(`
      CREATE FUNCTION test_refuse_message() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'refused for the test'; END $$;
      CREATE TRIGGER test_refuse_message BEFORE INSERT ON outbound_messages
        FOR EACH ROW WHEN (NEW.endpoint_id = '${failing}') EXECUTE FUNCTION test_refuse_message();`);
    try {
      const res = await p.request('POST', '/v1/events', { event_type: 'all.or.none', payload: {} });
      expectError(res, 500, 'INTERNAL_ERROR');
      expect(await t.db.sql`SELECT 1 FROM events WHERE project_id = ${p.projectId}`).toHaveLength(0);
      expect(await t.db.sql`SELECT 1 FROM outbound_messages WHERE project_id = ${p.projectId}`).toHaveLength(0);
      expect(await t.db.sql`SELECT 1 FROM payloads WHERE key LIKE 'event/%' AND NOT EXISTS (SELECT 1 FROM events e WHERE 'event/' || e.id = key)`).toHaveLength(0);
    } finally {
      await t.db.sql.execScript('DROP TRIGGER test_refuse_message ON outbound_messages; DROP FUNCTION test_refuse_message();');
    }
    expect((await p.send({ event_type: 'all.or.none' })).messages).toHaveLength(3);
  });

  it('fans out an event with a reserved type only to globs that name it (hookrelay’s own events)', async () => {
    const p = await project();
    await p.endpoint();
    await p.endpoint({ event_types: ['*'] });
    const ops = await p.endpoint({ event_types: ['hookrelay.*'] });
    const paused = await p.endpoint({ event_types: ['hookrelay.endpoint.*', 'order.*'] });
    const outcome = await t.app.engines.api!.events.submit({
      projectId: p.projectId,
      eventType: 'hookrelay.endpoint.paused',
      ownerId: null,
      channels: [],
      idempotencyKey: null,
      requestSha256: 'test',
      payloadFormat: 'json',
      contentType: 'application/json',
      payload: Buffer.from('{}'),
      payloadSha256: 'test',
    });
    expect(outcome.kind).toBe('stored');
    const reached = outcome.kind === 'stored' ? outcome.fannedOut.messages.map((m) => m.endpoint_id) : [];
    expect(sorted(reached)).toEqual(sorted([ops, paused]));
  });
});

describe('POST /v1/events checks the payload against its type’s schema', () => {
  const SCHEMA = { type: 'object', required: ['amount'], properties: { amount: { type: 'number', minimum: 0 } } };
  const MISMATCH = 'does not match the schema of event type "invoice.paid" at /amount: must be >= 0 (minimum)';

  /** A project whose catalogue has `invoice.paid` with a schema, `note.added` without, and an endpoint that takes every event. */
  async function typed() {
    const p = await project();
    expect((await p.request('POST', '/v1/event-types', { name: 'invoice.paid', schema: SCHEMA })).status).toBe(201);
    expect((await p.request('POST', '/v1/event-types', { name: 'note.added' })).status).toBe(201);
    await p.endpoint();
    const stored = async () => (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE project_id = ${p.projectId}`)[0]!.n;
    return { ...p, stored };
  }

  it('refuses a payload that does not match: 400 naming body.payload, the JSON pointer and the rule; nothing is stored', async () => {
    const p = await typed();
    const res = await p.request('POST', '/v1/events', { event_type: 'invoice.paid', payload: { amount: -1 } });
    expectError(res, 400, 'INVALID_REQUEST', `body.payload: ${MISMATCH}`);
    expect(res.body.error.details).toEqual([{ path: 'body.payload', message: MISMATCH }]);
    expectError(await p.request('POST', '/v1/events', { event_type: 'invoice.paid', payload: [] }), 400, 'INVALID_REQUEST', 'body.payload: does not match the schema of event type "invoice.paid" at the top level: must be object (type)');
    expect(await p.stored()).toBe(0);
    expect((await p.send({ event_type: 'invoice.paid', payload: { amount: 12.5 } })).messages).toHaveLength(1);
    expect(await p.stored()).toBe(1);
  });

  it('parses a body whose content type is JSON and checks it, naming body.body', async () => {
    const p = await typed();
    for (const contentType of ['application/json', 'application/vnd.billing+json; charset=utf-8', 'Application/JSON']) {
      expectError(await p.request('POST', '/v1/events', { event_type: 'invoice.paid', body: '{"amount":-1}', content_type: contentType }), 400, 'INVALID_REQUEST', `body.body: ${MISMATCH}`);
    }
    expectError(
      await p.request('POST', '/v1/events', { event_type: 'invoice.paid', body: 'amount=-1', content_type: 'application/json' }),
      400,
      'INVALID_REQUEST',
      'body.body: is not valid JSON, which its content_type says it is',
    );
    // Parsed as a payload is bounded: deeper than 512 levels is refused before the schema sees it.
    expectError(
      await p.request('POST', '/v1/events', { event_type: 'invoice.paid', body: `${'['.repeat(100_000)}${']'.repeat(100_000)}`, content_type: 'application/json' }),
      400,
      'INVALID_REQUEST',
      'body.body: must not nest arrays and objects more than 512 levels deep',
    );
    expect(await p.stored()).toBe(0);
    const sent = await p.send({ event_type: 'invoice.paid', body: '{ "amount": 3 }', content_type: 'application/json' });
    expect((await p.request('GET', `/v1/events/${sent.event_id}`)).body.data).toMatchObject({ body: '{ "amount": 3 }', content_type: 'application/json' });
  });

  it('takes unchecked a body of another content type, a type without a schema and a type not in the catalogue', async () => {
    const p = await typed();
    await p.send({ event_type: 'invoice.paid', body: 'amount=-1', content_type: 'text/plain' });
    await p.send({ event_type: 'invoice.paid', body: '{"amount":-1}' });
    await p.send({ event_type: 'invoice.paid', body: '{"amount":-1}', content_type: 'application/jsonx' });
    // Without a schema a JSON body is not even parsed.
    await p.send({ event_type: 'note.added', body: 'not json', content_type: 'application/json' });
    await p.send({ event_type: 'note.added', payload: { anything: true } });
    await p.send({ event_type: 'not.in.catalogue', payload: { amount: -1 } });
    expect(await p.stored()).toBe(6);
  });

  it('checks an archived type’s payloads, and a changed schema from the next event on', async () => {
    const p = await typed();
    expect((await p.request('PATCH', '/v1/event-types/invoice.paid', { archived: true })).status).toBe(200);
    expectError(await p.request('POST', '/v1/events', { event_type: 'invoice.paid', payload: { amount: -1 } }), 400, 'INVALID_REQUEST', `body.payload: ${MISMATCH}`);
    expect((await p.request('PATCH', '/v1/event-types/invoice.paid', { schema: { type: 'object', properties: { amount: { type: 'number' } } } })).status).toBe(200);
    await p.send({ event_type: 'invoice.paid', payload: { amount: -1 } });
    expect((await p.request('PATCH', '/v1/event-types/invoice.paid', { schema: null })).status).toBe(200);
    await p.send({ event_type: 'invoice.paid', payload: 'a string' });
    expect(await p.stored()).toBe(2);
  });
});

describe('GET /v1/events', () => {
  it('pages newest first with filters by type, owner and creation time', async () => {
    const p = await project();
    await p.endpoint({ owner_id: 'acme' });
    const a = await p.send({ event_type: 'a', owner_id: 'acme' });
    const b = await p.send({ event_type: 'b' });
    const c = await p.send({ event_type: 'a' });
    const ids = async (query: string) => {
      const res = await p.request('GET', `/v1/events?${query}`);
      expect(res.status, res.raw).toBe(200);
      return res.body.data.map((e: { event_id: string }) => e.event_id);
    };
    expect(await ids('')).toEqual([c.event_id, b.event_id, a.event_id]);
    expect(await ids('event_type=a')).toEqual([c.event_id, a.event_id]);
    expect(await ids('owner_id=acme')).toEqual([a.event_id]);
    expect(await ids(`created_after=${encodeURIComponent(b.created_at)}`)).toEqual([c.event_id, b.event_id]);
    expect(await ids(`created_before=${encodeURIComponent(b.created_at)}`)).toEqual([a.event_id]);

    const first = await p.request('GET', '/v1/events?limit=2');
    expect(first.body.data.map((e: { event_id: string }) => e.event_id)).toEqual([c.event_id, b.event_id]);
    expect(first.body.meta).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
    const second = await p.request('GET', `/v1/events?limit=2&cursor=${first.body.meta.next_cursor}`);
    expect(second.body.data.map((e: { event_id: string }) => e.event_id)).toEqual([a.event_id]);
    expect(second.body.meta).toMatchObject({ has_more: false, next_cursor: null });
    expect(first.body.data[1]).toEqual({
      event_id: b.event_id,
      event_type: 'b',
      owner_id: null,
      channels: [],
      content_type: 'application/json',
      size_bytes: 7,
      payload_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      idempotency_key: null,
      message_count: 0,
      created_at: b.created_at,
    });
    expect((await p.request('GET', `/v1/events/${a.event_id}`)).body.data.messages).toEqual([
      { message_id: a.messages[0]!.message_id, endpoint_id: a.messages[0]!.endpoint_id, status: 'queued', attempt_count: 0, response_status: null, last_error: null },
    ]);

    expectError(await p.request('GET', '/v1/events?cursor=nope'), 400, 'INVALID_REQUEST', 'query.cursor');
    expectError(await p.request('GET', '/v1/events?created_after=yesterday'), 400, 'INVALID_REQUEST', 'query.created_after');
    expectError(await p.request('GET', '/v1/events?owner_id=a%00b'), 400, 'INVALID_REQUEST', 'query.owner_id');
  });

  it('answers 404 for an unknown event or another project’s', async () => {
    const p = await project();
    const event = await p.send({ event_type: 'mine' });
    const other = await project();
    expectError(await other.request('GET', `/v1/events/${event.event_id}`), 404, 'NOT_FOUND', `event ${event.event_id} not found`);
    expect((await other.request('GET', '/v1/events')).body.data).toEqual([]);
    expectError(await p.request('GET', '/v1/events/not-a-uuid'), 400, 'INVALID_REQUEST', 'path.id');
  });
});

describe('the typed client', () => {
  it('creates, reads and lists events, and lists endpoints by owner', async () => {
    const p = await project();
    const baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const client = new HookrelayClient({ apiUrl: baseUrl, apiKey: p.apiKey });
    try {
      const endpoint = await client.endpoints.create({ url: 'https://hooks.example.com/client', owner_id: 'cus_9', event_types: ['x.*'] });
      expect(endpoint.data).toMatchObject({ owner_id: 'cus_9', event_types: ['x.*'], channels: null });
      expect((await client.endpoints.list({ owner_id: 'cus_9' })).data.map((e) => e.id)).toEqual([endpoint.data.id]);
      const created = await client.events.create({ event_type: 'x.1', payload: { ok: true }, owner_id: 'cus_9' }, { idempotencyKey: 'client-1' });
      expect(created.status).toBe(202);
      expect(created.data.messages.map((m) => m.endpoint_id)).toEqual([endpoint.data.id]);
      expect((await client.events.create({ event_type: 'x.1', payload: { ok: true }, owner_id: 'cus_9' }, { idempotencyKey: 'client-1' })).data).toEqual(created.data);
      expect((await client.events.get(created.data.event_id)).data).toMatchObject({ payload: { ok: true }, message_count: 1 });
      expect((await client.events.list({ owner_id: 'cus_9' })).data.map((e) => e.event_id)).toEqual([created.data.event_id]);
      const error = await client.events.create({ event_type: 'x.1', payload: { ok: false }, owner_id: 'cus_9' }, { idempotencyKey: 'client-1' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(HookrelayApiError);
      expect(error).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', status: 409 });
    } finally {
      await client.close();
    }
  });
});
