import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { recordInboundResults } from '../../src/db/inbound-results.js';
import { ResultBatcher } from '../../src/stream/result-batcher.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

/** Result reports recorded in group commits (stream frames and the batcher itself). */
let t: TestApp;
let baseUrl: string;

beforeAll(async () => {
  t = await createTestApp();
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
});

async function createCli(): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'results', mode: 'cli' } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function send(token: string, n: number): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: `/in/${token}`, payload: `{"n":${n}}`, headers: { 'content-type': 'application/json' } });
  expect(res.statusCode, res.body).toBe(200);
  return (JSON.parse(res.body) as { data: { message_id: string } }).data.message_id;
}

async function openStream(endpointId: string): Promise<WebSocket> {
  const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/stream`, {
    headers: { authorization: `Bearer ${t.main.apiKey}` },
  });
  await new Promise<void>((resolve, reject) => {
    socket.on('message', (data) => {
      if ((JSON.parse(data.toString()) as { type: string }).type === 'ready') resolve();
    });
    socket.once('error', reject);
  });
  return socket;
}

interface MessageState {
  id: string;
  status: string;
  attempt_count: number;
  response_status: number | null;
  response_latency_ms: number | null;
  last_error: string | null;
  updated_at: Date;
}

async function states(ids: readonly string[]): Promise<Map<string, MessageState>> {
  const rows = await t.db.sql<MessageState>`
    SELECT id, status, attempt_count, response_status, response_latency_ms, last_error, updated_at
    FROM inbound_messages WHERE id = ANY(${[...ids]}::uuid[])`;
  return new Map(rows.map((r) => [r.id, r]));
}

interface AttemptRow {
  message_id: string;
  attempt_number: number;
  response_status: number | null;
  latency_ms: number;
  error: string | null;
}

async function attempts(ids: readonly string[]): Promise<AttemptRow[]> {
  return t.db.sql<AttemptRow>`
    SELECT message_id, attempt_number, response_status, latency_ms, error FROM delivery_attempts
    WHERE message_id = ANY(${[...ids]}::uuid[]) ORDER BY message_id, attempt_number`;
}

/** Waits (bounded) until the messages hold `count` attempts in all. */
async function untilAttempts(ids: readonly string[], count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const [row] = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM delivery_attempts WHERE message_id = ANY(${[...ids]}::uuid[])`;
    if (row!.n >= count) return;
    if (Date.now() > deadline) throw new Error(`timed out: ${row!.n} of ${count} attempts recorded`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Error texts that a text[] literal would mangle if they were not quoted. */
const AWKWARD_ERRORS = ['NULL', 'a "quoted", {braced} \\ back\\slash', 'ünïcødé ✓', '', ' spaced '];

/** The report for message i: a mix of 2xx, other statuses and no answer at all. */
function reportFor(i: number): { status: number | null; latency_ms: number; error: string | null } {
  if (i % 5 === 0) return { status: null, latency_ms: i, error: AWKWARD_ERRORS[(i / 5) % AWKWARD_ERRORS.length]! };
  if (i % 5 === 1) return { status: null, latency_ms: i, error: null };
  if (i % 5 === 2) return { status: 503, latency_ms: 1000 + i, error: null };
  return { status: 200 + (i % 4), latency_ms: 7 * i, error: 'ignored on success' };
}

function expectedOutcome(i: number) {
  const r = reportFor(i);
  const succeeded = r.status !== null && r.status < 300;
  const error = succeeded ? null : (r.error ?? (r.status === null ? 'no response' : `HTTP ${r.status}`));
  return { status: succeeded ? 'succeeded' : 'failed_permanent', response_status: r.status, latency_ms: r.latency_ms, error };
}

/** Makes the database refuse the attempt rows of one message (a test-only trigger). */
async function refuseAttemptsOf(messageId: string): Promise<void> {
  await t.db.sql`CREATE TABLE test_refused_messages (message_id uuid PRIMARY KEY)`;
  await t.db.sql`CREATE SEQUENCE test_refusals`;
  await t.db.sql`
    CREATE FUNCTION test_refuse_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM test_refused_messages WHERE message_id = NEW.message_id) THEN
        PERFORM nextval('test_refusals');
        RAISE EXCEPTION 'test: attempt of message % refused', NEW.message_id;
      END IF;
      RETURN NEW;
    END $$`;
  await t.db.sql`CREATE TRIGGER test_refuse_attempt BEFORE INSERT ON delivery_attempts FOR EACH ROW EXECUTE FUNCTION test_refuse_attempt()`;
  await t.db.sql`INSERT INTO test_refused_messages (message_id) VALUES (${messageId}::uuid)`;
}

async function refusals(): Promise<number> {
  const [row] = await t.db.sql<{ n: number }>`SELECT CASE WHEN is_called THEN last_value ELSE 0 END::int AS n FROM test_refusals`;
  return row!.n;
}

async function dropRefusals(): Promise<void> {
  await t.db.sql`DROP TRIGGER IF EXISTS test_refuse_attempt ON delivery_attempts`;
  await t.db.sql`DROP FUNCTION IF EXISTS test_refuse_attempt()`;
  await t.db.sql`DROP TABLE IF EXISTS test_refused_messages`;
  await t.db.sql`DROP SEQUENCE IF EXISTS test_refusals`;
}

describe('result frames sent back to back on one stream', () => {
  it('records all 50, each with its own status and attempt row, in fewer commits than results', async () => {
    const { id, token } = await createCli();
    const socket = await openStream(id);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) ids.push(await send(token, i));
      ids.forEach((messageId, i) => socket.send(JSON.stringify({ type: 'result', message_id: messageId, ...reportFor(i) })));
      await untilAttempts(ids, 50);

      const byId = await states(ids);
      ids.forEach((messageId, i) => {
        const want = expectedOutcome(i);
        expect(byId.get(messageId), `message ${i}`).toMatchObject({
          status: want.status,
          attempt_count: 1,
          response_status: want.response_status,
          response_latency_ms: want.latency_ms,
          last_error: want.error,
        });
      });
      const rows = await attempts(ids);
      expect(rows).toHaveLength(50);
      const attemptsById = new Map(rows.map((r) => [r.message_id, r]));
      ids.forEach((messageId, i) => {
        const want = expectedOutcome(i);
        expect(attemptsById.get(messageId), `attempt of message ${i}`).toEqual({
          message_id: messageId,
          attempt_number: 1,
          response_status: want.response_status,
          latency_ms: want.latency_ms,
          error: want.error,
        });
      });
      // One commit shares one now(): fewer distinct times than results means results were grouped.
      const commits = new Set([...byId.values()].map((s) => s.updated_at.getTime()));
      expect(commits.size).toBeLessThan(50);
    } finally {
      socket.close();
    }
  });

  it('keeps one-by-one semantics for repeats, deleted messages and other endpoints in the same burst', async () => {
    const { id, token } = await createCli();
    const other = await createCli();
    const socket = await openStream(id);
    try {
      const [twice, deleted, plain] = [await send(token, 1), await send(token, 2), await send(token, 3)];
      const foreign = await send(other.token, 4);
      expect((await t.request('DELETE', `/v1/inbound-messages/${deleted}`)).status).toBe(200);
      const frames = [
        { message_id: twice, status: 500, latency_ms: 5, error: null },
        { message_id: deleted, status: 200, latency_ms: 6, error: null },
        { message_id: foreign, status: 200, latency_ms: 7, error: null },
        { message_id: twice, status: 204, latency_ms: 8, error: null },
        { message_id: plain, status: 201, latency_ms: 9, error: null },
        { message_id: twice, status: null, latency_ms: 10, error: 'socket hang up' },
      ];
      for (const frame of frames) socket.send(JSON.stringify({ type: 'result', ...frame }));
      await untilAttempts([twice, plain], 4);
      // Leave time for anything wrongly recorded for the deleted or foreign message to show.
      await new Promise((r) => setTimeout(r, 200));

      expect(await attempts([twice, deleted, plain, foreign])).toEqual(
        [
          { message_id: twice, attempt_number: 1, response_status: 500, latency_ms: 5, error: 'HTTP 500' },
          { message_id: twice, attempt_number: 2, response_status: 204, latency_ms: 8, error: null },
          { message_id: twice, attempt_number: 3, response_status: null, latency_ms: 10, error: 'socket hang up' },
          { message_id: plain, attempt_number: 1, response_status: 201, latency_ms: 9, error: null },
        ].sort((a, b) => (a.message_id === b.message_id ? a.attempt_number - b.attempt_number : a.message_id < b.message_id ? -1 : 1)),
      );
      const byId = await states([twice, deleted, plain, foreign]);
      // The latest report decides; a success before it keeps its delivered_at but not its status.
      expect(byId.get(twice)).toMatchObject({ status: 'failed_permanent', attempt_count: 3, response_status: null, last_error: 'socket hang up' });
      expect(byId.get(plain)).toMatchObject({ status: 'succeeded', attempt_count: 1 });
      expect(byId.get(deleted)).toMatchObject({ status: 'queued', attempt_count: 0 });
      expect(byId.get(foreign)).toMatchObject({ status: 'queued', attempt_count: 0 });
    } finally {
      socket.close();
    }
  });

  it('a report the database refuses costs only itself, not the reports sent with it', async () => {
    const { id, token } = await createCli();
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) ids.push(await send(token, i));
    // A valid report the database refuses: a trigger raises on the attempt row of one message, and
    // counts each refusal in a sequence (nextval survives the rollback of the statement it ran in).
    let socket: WebSocket | undefined;
    try {
      await refuseAttemptsOf(ids[4]!);
      socket = await openStream(id);
      const stream = socket;
      ids.forEach((messageId, i) => stream.send(JSON.stringify({ type: 'result', message_id: messageId, status: 200 + i, latency_ms: i, error: null })));
      const good = ids.filter((_, i) => i !== 4);
      await untilAttempts(good, 8);
      await new Promise((r) => setTimeout(r, 200));
      const rows = await attempts(ids);
      expect(rows.map((r) => r.message_id).sort()).toEqual([...good].sort());
      for (const row of rows) {
        const i = ids.indexOf(row.message_id);
        expect(row).toMatchObject({ attempt_number: 1, response_status: 200 + i, latency_ms: i });
      }
      expect((await states([ids[4]!])).get(ids[4]!)).toMatchObject({ status: 'queued', attempt_count: 0 });
      // Refused twice: in the batch of the nine frames (which committed nothing), then alone.
      expect(await refusals()).toBe(2);
    } finally {
      socket?.close();
      await dropRefusals();
    }
  });
});

/** A stream that keeps its frames: `ready` first, then acknowledgements as they come. */
async function openAckingStream(endpointId: string, headers: Record<string, string> = {}) {
  const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/stream`, {
    headers: { authorization: `Bearer ${t.main.apiKey}`, ...headers },
  });
  const acks: { type: string; result_id: string; outcome: string; message?: string }[] = [];
  const batches: { type: string; acks: { result_id: string; outcome: string; message?: string }[] }[] = [];
  const waiters: (() => void)[] = [];
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    socket.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { type: string };
      if (frame.type === 'ready') resolve(frame);
      if (frame.type === 'result_ack') {
        acks.push(frame as (typeof acks)[number]);
        waiters.splice(0).forEach((w) => w());
      }
      if (frame.type === 'result_acks') {
        const batch = frame as (typeof batches)[number];
        batches.push(batch);
        acks.push(...batch.acks.map((ack) => ({ type: 'result_ack', ...ack })));
        waiters.splice(0).forEach((w) => w());
      }
    });
    socket.once('error', reject);
  });
  /** Resolves once `count` acknowledgements have come (bounded). */
  const untilAcks = async (count: number): Promise<void> => {
    const deadline = Date.now() + 10_000;
    while (acks.length < count) {
      if (Date.now() > deadline) throw new Error(`timed out: ${acks.length} of ${count} acknowledgements`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  };
  return { socket, ready, acks, batches, untilAcks };
}

const RESULT_IDS = ['0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f01', '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f02', '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f03'];

describe('result acknowledgements', () => {
  it('ready says the server acknowledges; a result frame is acknowledged once its commit is done, a copy of it changes nothing', async () => {
    const { id, token } = await createCli();
    const stream = await openAckingStream(id);
    try {
      expect(stream.ready).toMatchObject({ type: 'ready', result_acks: true });
      const messageId = await send(token, 1);
      const frame = {
        type: 'result',
        message_id: messageId,
        status: 200,
        latency_ms: 12,
        error: null,
        listener: 'laptop',
        response_body: Buffer.from('first').toString('base64'),
        result_id: RESULT_IDS[0]!.toUpperCase(),
      };
      stream.socket.send(JSON.stringify(frame));
      await stream.untilAcks(1);
      // Read the moment the acknowledgement came: the report is committed by then.
      expect(await states([messageId])).toMatchObject(new Map([[messageId, { status: 'succeeded', attempt_count: 1, response_latency_ms: 12 }]]));
      expect(stream.acks[0]).toEqual({ type: 'result_ack', result_id: RESULT_IDS[0], outcome: 'recorded' });

      // The same report again (its acknowledgement was lost), even with another answer: nothing changes.
      stream.socket.send(JSON.stringify({ ...frame, status: 500, latency_ms: 99, response_body: Buffer.from('second').toString('base64') }));
      await stream.untilAcks(2);
      expect(stream.acks[1]).toEqual({ type: 'result_ack', result_id: RESULT_IDS[0], outcome: 'duplicate' });
      expect(await attempts([messageId])).toEqual([{ message_id: messageId, attempt_number: 1, response_status: 200, latency_ms: 12, error: null }]);
      const record = await t.request('GET', `/v1/inbound-messages/${messageId}`);
      expect(record.body.data).toMatchObject({ status: 'succeeded', attempt_count: 1, response_status: 200 });
      expect(record.body.data.answers).toMatchObject([{ listener: 'laptop', status: 200, response_body: Buffer.from('first').toString('base64') }]);

      // Another report of the message (a replay forwarded again) is another attempt.
      stream.socket.send(JSON.stringify({ ...frame, status: 503, result_id: RESULT_IDS[1] }));
      await stream.untilAcks(3);
      expect(stream.acks[2]).toEqual({ type: 'result_ack', result_id: RESULT_IDS[1], outcome: 'recorded' });
      expect((await states([messageId])).get(messageId)).toMatchObject({ status: 'failed_permanent', attempt_count: 2 });
    } finally {
      stream.socket.close();
    }
  });

  it('a client that asks for batches (hookrelay-result-acks: batch) gets one result_acks frame for the reports of one commit, in their order', async () => {
    const { id, token } = await createCli();
    const stream = await openAckingStream(id, { 'hookrelay-result-acks': 'batch' });
    try {
      expect(stream.ready).toMatchObject({ type: 'ready', result_acks: true, result_ack_batches: true });
      const messageIds = [await send(token, 1), await send(token, 2), await send(token, 3)];
      // Sent in one turn: the server holds them for one commit.
      messageIds.forEach((messageId, i) =>
        stream.socket.send(JSON.stringify({ type: 'result', message_id: messageId, status: 200, latency_ms: i, error: null, result_id: RESULT_IDS[i] })),
      );
      await stream.untilAcks(3);
      expect(stream.batches).toEqual([{ type: 'result_acks', acks: RESULT_IDS.map((resultId) => ({ result_id: resultId, outcome: 'recorded' })) }]);
      const recorded = await states(messageIds);
      for (const messageId of messageIds) expect(recorded.get(messageId)).toMatchObject({ status: 'succeeded', attempt_count: 1 });
      // A refusal goes in a batch too: no acknowledgement came as a single frame.
      stream.socket.send(JSON.stringify({ type: 'result', message_id: messageIds[0], status: 9000, latency_ms: 1, error: null, result_id: RESULT_IDS[0] }));
      await stream.untilAcks(4);
      expect(stream.batches[1]).toEqual({ type: 'result_acks', acks: [{ result_id: RESULT_IDS[0], outcome: 'refused', message: 'status: must be at most 599' }] });
      expect(stream.batches.flatMap((batch) => batch.acks)).toHaveLength(stream.acks.length);
    } finally {
      stream.socket.close();
    }
  });

  it('a result for no live message of the stream is acknowledged as not_found, an invalid one as refused; one without an id is recorded, not acknowledged', async () => {
    const { id, token } = await createCli();
    const other = await createCli();
    const stream = await openAckingStream(id);
    try {
      const foreign = await send(other.token, 1);
      const plain = await send(token, 2);
      stream.socket.send(JSON.stringify({ type: 'result', message_id: foreign, status: 200, latency_ms: 1, error: null, result_id: RESULT_IDS[0] }));
      await stream.untilAcks(1);
      stream.socket.send(JSON.stringify({ type: 'result', message_id: plain, status: 200, latency_ms: 1, error: null, result_id: RESULT_IDS[1], bogus: 1 }));
      await stream.untilAcks(2);
      stream.socket.send(JSON.stringify({ type: 'result', message_id: plain, status: 9000, latency_ms: 1, error: null, result_id: RESULT_IDS[2] }));
      await stream.untilAcks(3);
      stream.socket.send(JSON.stringify({ type: 'result', message_id: plain, status: 201, latency_ms: 1, error: null }));
      await untilAttempts([plain], 1);
      await new Promise((r) => setTimeout(r, 200));
      expect(stream.acks).toEqual([
        { type: 'result_ack', result_id: RESULT_IDS[0], outcome: 'not_found' },
        { type: 'result_ack', result_id: RESULT_IDS[1], outcome: 'refused', message: expect.stringContaining('bogus') },
        { type: 'result_ack', result_id: RESULT_IDS[2], outcome: 'refused', message: 'status: must be at most 599' },
      ]);
      expect((await states([foreign, plain])).get(foreign)).toMatchObject({ status: 'queued', attempt_count: 0 });
      expect((await states([plain])).get(plain)).toMatchObject({ status: 'succeeded', attempt_count: 1, response_status: 201 });
    } finally {
      stream.socket.close();
    }
  });

  it('POST: the Idempotency-Key header (or body.result_id) makes a repeated report a no-op answered with the message as it stands', async () => {
    const { token } = await createCli();
    const messageId = await send(token, 1);
    const report = { message_id: messageId, status: 200, latency_ms: 4, error: null };
    const headers = { 'idempotency-key': RESULT_IDS[0]! };
    const first = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, { body: report, headers });
    expect(first.status, first.raw).toBe(200);
    expect(first.body.data).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    const again = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, { body: { ...report, status: 500 }, headers });
    expect(again.status, again.raw).toBe(200);
    expect(again.body.data).toMatchObject({ status: 'succeeded', attempt_count: 1, response_status: 200 });
    const inBody = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, { body: { ...report, result_id: RESULT_IDS[0] } });
    expect(inBody.body.data).toMatchObject({ attempt_count: 1 });
    expect(await attempts([messageId])).toHaveLength(1);

    const differs = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, { body: { ...report, result_id: RESULT_IDS[1] }, headers });
    expect(differs.status).toBe(400);
    expect(differs.body.error).toMatchObject({ code: 'INVALID_REQUEST', details: [{ path: 'header.idempotency-key', message: 'differs from body.result_id' }] });
    const notUuid = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, { body: report, headers: { 'idempotency-key': 'abc' } });
    expect(notUuid.status).toBe(400);
    expect(notUuid.body.error).toMatchObject({ code: 'INVALID_REQUEST', details: [{ path: 'header.idempotency-key', message: 'must be a UUID' }] });
    expect(await attempts([messageId])).toHaveLength(1);
  });

  it('two copies of one report recorded at the same moment (two statements, two connections) count once', async () => {
    const { id, token } = await createCli();
    const ids = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => send(token, i)));
    const report = (messageId: string, i: number) => ({
      projectId: t.main.projectId,
      endpointId: id,
      messageId,
      resultId: `0190b2c4-7d2e-7a51-9c3f-${String(i).padStart(12, '0')}`,
      result: { status: 200, latencyMs: i, error: null },
      answer: { listener: 'default', responseHeaders: [], responseBodyBase64: null, responseBodyTruncated: false },
    });
    const reports = ids.map(report);
    // Both statements start (and read which results exist) while the rows are locked, so that on
    // PostgreSQL they meet at the locks: neither sees the other's copy before the second writes its own.
    let recording: Promise<Awaited<ReturnType<typeof recordInboundResults>>[]> | undefined;
    await t.db.sql.begin(async (tx) => {
      await tx`SELECT id FROM inbound_messages WHERE id = ANY(${ids}::uuid[]) FOR UPDATE`;
      recording = Promise.all([recordInboundResults(t.db.sql, reports), recordInboundResults(t.db.sql, [...reports].reverse())]);
      await new Promise((r) => setTimeout(r, 200));
    });
    const [one, two] = await recording!;
    const outcomes = ids.map((_, i) => [one![i]!.duplicate, two![ids.length - 1 - i]!.duplicate].sort());
    expect(outcomes).toEqual(ids.map(() => [false, true]));
    expect(await attempts(ids)).toHaveLength(ids.length);
    for (const state of (await states(ids)).values()) expect(state).toMatchObject({ status: 'succeeded', attempt_count: 1 });
  });
});

describe('ResultBatcher', () => {
  it('settles each report of a failing batch on its own: rows to the right callers, the bad one rejected', async () => {
    const { id, token } = await createCli();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await send(token, i));
    const batcher = new ResultBatcher(t.db.sql, t.app.log);
    const report = (i: number, latencyMs: number) => ({
      projectId: t.main.projectId,
      endpointId: id,
      messageId: ids[i]!,
      resultId: null,
      result: { status: 200 + i, latencyMs, error: null },
      answer: { listener: 'default', responseHeaders: [], responseBodyBase64: null, responseBodyTruncated: false },
    });
    const otherProjectId = (await t.createProject()).projectId;
    // All in one turn: one batch, which the database refuses because of report 2.
    const settled = await Promise.allSettled([
      batcher.record(report(0, 10)),
      batcher.record(report(1, 11)),
      batcher.record(report(2, 2 ** 40)),
      batcher.record(report(3, 13)),
      batcher.record({ ...report(4, 14), messageId: '01900000-0000-7000-8000-000000000000' }),
      batcher.record({ ...report(5, 15), projectId: otherProjectId }),
    ]);
    await batcher.idle();

    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    const value = (i: number) => (settled[i] as PromiseFulfilledResult<{ row: { id: string }; duplicate: boolean } | undefined>).value;
    for (const i of [0, 1, 3]) {
      expect(value(i)).toMatchObject({ row: { id: ids[i], response_status: 200 + i, response_latency_ms: 10 + i, attempt_count: 1 }, duplicate: false });
    }
    // Unknown message, or one of another project: nothing recorded, undefined to the caller.
    expect(value(4)).toBeUndefined();
    expect(value(5)).toBeUndefined();
    const rows = await attempts(ids);
    expect(rows.map((r) => [r.message_id, r.response_status, r.latency_ms])).toEqual(
      [0, 1, 3].map((i) => [ids[i], 200 + i, 10 + i]).sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
    );
  });

  const reportOf = (endpointId: string, messageId: string, status: number) => ({
    projectId: t.main.projectId,
    endpointId,
    messageId,
    resultId: null,
    result: { status, latencyMs: 1, error: null },
    answer: { listener: 'default', responseHeaders: [], responseBodyBase64: null, responseBodyTruncated: false },
  });
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const cliWithMessages = async (count: number) => {
    const { id, token } = await createCli();
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push(await send(token, i));
    return { id, ids };
  };

  it('holds reports nobody waits on for the linger, so that reports coming one by one share a commit', async () => {
    const { id, ids } = await cliWithMessages(8);
    const held = new ResultBatcher(t.db.sql, t.app.log, { lingerMs: 1_500 });
    const started = performance.now();
    const settledAt: number[] = [];
    const recorded: Promise<unknown>[] = [];
    for (let i = 0; i < 4; i++) {
      recorded.push(held.record(reportOf(id, ids[i]!, 200), { canWait: true }).then(() => settledAt.push(performance.now() - started)));
      await pause(30);
    }
    await Promise.all(recorded);
    expect(Math.min(...settledAt)).toBeGreaterThanOrEqual(1_499);
    const heldStates = await states(ids.slice(0, 4));
    expect(new Set([...heldStates.values()].map((m) => m.updated_at.getTime())).size).toBe(1);
    expect([...heldStates.values()].every((m) => m.status === 'succeeded' && m.attempt_count === 1)).toBe(true);

    // The same reports, waited on: each goes at once, in a commit of its own.
    for (let i = 4; i < 8; i++) {
      await held.record(reportOf(id, ids[i]!, 200));
      await pause(30);
    }
    const waitedStates = await states(ids.slice(4));
    expect(new Set([...waitedStates.values()].map((m) => m.updated_at.getTime())).size).toBe(4);
    await held.idle();
  });

  it('sends the held reports at once with one someone waits on, and at once when the server stops', async () => {
    const { id, ids } = await cliWithMessages(4);
    const held = new ResultBatcher(t.db.sql, t.app.log, { lingerMs: 60_000 });
    const started = performance.now();
    const first = [held.record(reportOf(id, ids[0]!, 200), { canWait: true }), held.record(reportOf(id, ids[1]!, 500), { canWait: true })];
    await pause(30);
    await Promise.all([...first, held.record(reportOf(id, ids[2]!, 200))]);
    expect(performance.now() - started).toBeLessThan(10_000);
    const together = await states(ids.slice(0, 3));
    expect(new Set([...together.values()].map((m) => m.updated_at.getTime())).size).toBe(1);
    expect(together.get(ids[1]!)!.status).toBe('failed_permanent');

    const last = held.record(reportOf(id, ids[3]!, 200), { canWait: true });
    await held.idle();
    await last;
    expect(performance.now() - started).toBeLessThan(10_000);
    expect((await states([ids[3]!])).get(ids[3]!)!.status).toBe('succeeded');
  });

  it('answers the HTTP report after its commit, with the recorded row', async () => {
    const { token } = await createCli();
    const ids = await Promise.all([0, 1, 2, 3].map((i) => send(token, i)));
    const answers = await Promise.all(
      ids.map((messageId, i) =>
        t.request('POST', `/v1/inbound-messages/${messageId}/result`, { body: { message_id: messageId, status: i % 2 ? 500 : 200, latency_ms: i, error: null } }),
      ),
    );
    answers.forEach((res, i) => {
      expect(res.status, res.raw).toBe(200);
      expect(res.body.data).toMatchObject({ id: ids[i], attempt_count: 1, status: i % 2 ? 'failed_permanent' : 'succeeded', response_latency_ms: i });
    });
    expect(await attempts(ids)).toHaveLength(4);
  });
});
