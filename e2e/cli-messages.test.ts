import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from './helpers/cli.js';
import { eventually, expectJsonFailure, expectSuccess, explain, startCli } from './helpers/expect-cli.js';
import { startDeliveryRig, type DeliveryRig } from './helpers/delivery-rig.js';
import { api } from './helpers/listen.js';
import type { HttpsReceiver } from './helpers/https-receiver.js';

/**
 * `messages send|get|attempts|retry|delete|delete-batch` and `logs` (with --follow), run as the
 * built CLI against the real server. Deliveries go to a local HTTPS receiver on 127.0.0.1 (private
 * networks allowed, its self-signed certificate trusted): `/ok…` answers 200, anything else 500.
 * One retry an hour after a failure keeps a failed message in pending_retry for the test.
 */

interface Created {
  message_id: string;
  status: string;
  created_at: string;
}

interface Message {
  message_id: string;
  endpoint_id: string;
  endpoint: string;
  status: string;
  attempt_count: number;
  event_type: string | null;
  idempotency_key: string | null;
  content_type: string;
  payload?: unknown;
  body?: string;
  deleted_at?: string;
}

interface Attempt {
  attempt_number: number;
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
}

interface LogPage {
  data: { message_id: string; status: string; endpoint: string; created_at: string; deleted_at?: string }[];
  next_cursor: string | null;
}

const UNKNOWN_MESSAGE = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71';
const UNKNOWN_ENDPOINT = 'ep_0123456789abcdef0123456789abcdef';

let rig: DeliveryRig;
let receiver: HttpsReceiver;
let env: Record<string, string>;
let okEndpoint: string;
let failEndpoint: string;
let workDir: string;

const cli = (args: readonly string[], input?: string): Promise<CliResult> => rig.cli(args, input);
const json = <T>(args: readonly string[], input?: string): Promise<T> => rig.json<T>(args, input);

async function createEndpoint(path: string): Promise<string> {
  return (await json<{ id: string }>(['endpoints', 'create', '--url', `${receiver.url}${path}`])).id;
}

async function send(endpoint: string, ...extra: string[]): Promise<Created> {
  return json<Created>(['messages', 'send', '--endpoint', endpoint, ...extra]);
}

/** Waits through the API (a CLI process per poll would cost more than the test), then reads it with the CLI. */
async function waitForStatus(id: string, status: string): Promise<Message> {
  await eventually(async () => ((await api<Message>(rig.server.url, rig.server.apiKey, 'GET', `/v1/messages/${id}`)).status === status ? true : undefined), `message ${id} to become ${status}`);
  return json<Message>(['messages', 'get', id]);
}

beforeAll(async () => {
  rig = await startDeliveryRig('messages');
  ({ receiver, env, workDir } = rig);
  okEndpoint = await createEndpoint('/ok');
  failEndpoint = await createEndpoint('/fail');
});

afterAll(async () => {
  await rig?.stop();
});

describe('messages send', () => {
  it('--data: the API answer as JSON; the message is delivered with exactly that payload', async () => {
    const created = await send(okEndpoint, '--data', '{"type":"invoice.paid","amount":42}', '--event-type', 'invoice.paid');
    expect(Object.keys(created).sort()).toEqual(['created_at', 'message_id', 'status']);
    expect(created.status).toBe('queued');

    const delivered = await waitForStatus(created.message_id, 'succeeded');
    expect(delivered).toMatchObject({ endpoint_id: okEndpoint, event_type: 'invoice.paid', payload: { type: 'invoice.paid', amount: 42 } });
    const request = receiver.received.find((r) => r.headers['webhook-id'] === created.message_id);
    expect(request?.body.toString('utf8')).toBe('{"type":"invoice.paid","amount":42}');
    expect(request?.headers['content-type']).toBe('application/json');

    const human = await cli(['messages', 'get', created.message_id]);
    expectSuccess(human);
    expect(human.stdout).toMatch(/^Status:\s+succeeded$/mu);
    expect(human.stdout).toMatch(/^Event type:\s+invoice\.paid$/mu);
    expect(human.stdout).toContain('"amount": 42');
  });

  it('reads the body from stdin and from --file; a non-JSON content type is sent as text', async () => {
    const stdin = await json<Created>(['messages', 'send', '--endpoint', okEndpoint], '{"from":"stdin"}\n');
    expect((await waitForStatus(stdin.message_id, 'succeeded')).payload).toEqual({ from: 'stdin' });

    const file = join(workDir, 'event.json');
    await writeFile(file, '{"from":"file"}');
    const fromFile = await send(okEndpoint, '--file', file);
    expect((await json<Message>(['messages', 'get', fromFile.message_id])).payload).toEqual({ from: 'file' });

    const text = await send(okEndpoint, '--content-type', 'text/plain; charset=utf-8', '--data', 'hello, plain text');
    const message = await waitForStatus(text.message_id, 'succeeded');
    expect(message).toMatchObject({ body: 'hello, plain text', content_type: 'text/plain; charset=utf-8' });
    expect(message.payload).toBeUndefined();
    const request = receiver.received.find((r) => r.headers['webhook-id'] === text.message_id);
    expect(request?.body.toString('utf8')).toBe('hello, plain text');
    expect(request?.headers['content-type']).toBe('text/plain; charset=utf-8');
  });

  it('--idempotency-key: a repeat answers the first message; another body under the key is a conflict (exit 5)', async () => {
    const key = `order-${randomUUID()}`;
    const first = await send(okEndpoint, '--data', '{"order":1}', '--idempotency-key', key);
    const again = await send(okEndpoint, '--data', '{"order":1}', '--idempotency-key', key);
    expect(again.message_id).toBe(first.message_id);
    expect((await json<Message>(['messages', 'get', first.message_id])).idempotency_key).toBe(key);
    const conflict = await cli(['messages', 'send', '--endpoint', okEndpoint, '--data', '{"order":2}', '--idempotency-key', key, '--json']);
    expectJsonFailure(conflict, 5, 'IDEMPOTENCY_CONFLICT');
  });

  it('human output names the message and how to follow it', async () => {
    const result = await cli(['messages', 'send', '--endpoint', okEndpoint, '--data', '{}']);
    expectSuccess(result);
    expect(result.stdout).toMatch(/^Accepted message [0-9a-f-]{36} for ep_[0-9a-f]{32}: queued$/mu);
    expect(result.stdout).toMatch(/hookrelay messages get [0-9a-f-]{36}/u);
  });

  it('checks its input before any request (exit 2, no request id)', async () => {
    for (const [args, input] of [
      [['--data', 'not json'], undefined],
      [['--data', '{}', '--file', 'x.json'], undefined],
      [[], ''],
      [['--file', join(workDir, 'missing.json')], undefined],
      [['--content-type', 'text/plain'], ''],
    ] as const) {
      const result = await cli(['messages', 'send', '--endpoint', okEndpoint, ...args, '--json'], input);
      expect(expectJsonFailure(result, 2, 'INVALID_ARGUMENTS').request_id).toBeNull();
    }
    const missingEndpoint = await cli(['messages', 'send', '--data', '{}', '--json']);
    expectJsonFailure(missingEndpoint, 2, 'INVALID_ARGUMENTS');
    const human = await cli(['messages', 'send', '--endpoint', okEndpoint, '--data', 'nope']);
    expect(human.code).toBe(2);
    expect(human.stdout).toBe('');
    expect(human.stderr).toMatch(/^INVALID_ARGUMENTS: the body from --data is not valid JSON/mu);
    expect(human.stderr).toMatch(/^hint: .*--content-type/mu);
  });

  it('maps the server\'s answers: unknown endpoint 4, malformed endpoint or bad content type 2, bad key 3', async () => {
    expectJsonFailure(await cli(['messages', 'send', '--endpoint', UNKNOWN_ENDPOINT, '--data', '{}', '--json']), 4, 'ENDPOINT_NOT_FOUND');
    expectJsonFailure(await cli(['messages', 'send', '--endpoint', 'ep_nope', '--data', '{}', '--json']), 2, 'INVALID_REQUEST');
    expectJsonFailure(await cli(['messages', 'send', '--endpoint', okEndpoint, '--content-type', 'not a type', '--data', 'x', '--json']), 2, 'INVALID_REQUEST');
    const badKey = await runCli(['messages', 'send', '--endpoint', okEndpoint, '--data', '{}', '--json'], {
      env: { ...env, HOOKRELAY_API_KEY: `hr_${'0'.repeat(40)}` },
    });
    expectJsonFailure(badKey, 3, 'UNAUTHORIZED');
  });
});

describe('messages get, attempts, retry', () => {
  it('a failed delivery waits for its retry; attempts lists it; retry sends it again now', async () => {
    const created = await send(failEndpoint, '--data', '{"will":"fail"}');
    const waiting = await waitForStatus(created.message_id, 'pending_retry');
    expect(waiting.attempt_count).toBe(1);

    const attempts = await json<Attempt[]>(['messages', 'attempts', created.message_id]);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ attempt_number: 1, response_status: 500 });

    const table = await cli(['messages', 'attempts', created.message_id]);
    expectSuccess(table);
    expect(table.stdout).toMatch(/^#\s+STARTED\s+RESPONSE\s+LATENCY\s+ERROR$/mu);
    expect(table.stdout).toMatch(/^1\s+\S+\s+500\s+\d+ ms/mu);

    const retried = await json<{ message_id: string; status: string }>(['messages', 'retry', created.message_id]);
    expect(retried).toEqual({ message_id: created.message_id, status: 'queued' });
    await eventually(async () => ((await api<Attempt[]>(rig.server.url, rig.server.apiKey, 'GET', `/v1/messages/${created.message_id}/attempts`)).length === 2 ? true : undefined), 'the second attempt');
    expect(await json<Attempt[]>(['messages', 'attempts', created.message_id])).toHaveLength(2);
    const human = await cli(['messages', 'retry', created.message_id]);
    expectSuccess(human);
    expect(human.stdout).toMatch(/^Retry queued for /mu);
  });

  it('a message without attempts yet says so', async () => {
    // A paused endpoint keeps its messages queued.
    const paused = await createEndpoint('/ok/paused');
    expectSuccess(await cli(['endpoints', 'pause', paused]));
    const created = await send(paused, '--data', '{"waits":true}');
    expect(await json<Attempt[]>(['messages', 'attempts', created.message_id])).toEqual([]);
    const human = await cli(['messages', 'attempts', created.message_id]);
    expect(human.stdout.trim()).toBe('No delivery attempt yet.');
    expect((await json<Message>(['messages', 'get', created.message_id])).status).toBe('queued');
  });

  it('unknown ids exit 4 with NOT_FOUND, malformed ids exit 2, a bad key exits 3', async () => {
    for (const args of [['get'], ['attempts'], ['retry'], ['delete', '--force']]) {
      const [verb, ...rest] = args;
      const result = await cli(['messages', verb ?? '', UNKNOWN_MESSAGE, ...rest, '--json']);
      expect(expectJsonFailure(result, 4, 'NOT_FOUND').status).toBe(404);
      expectJsonFailure(await cli(['messages', verb ?? '', 'not-a-uuid', ...rest, '--json']), 2, 'INVALID_REQUEST');
    }
    const badKey = await runCli(['messages', 'get', UNKNOWN_MESSAGE, '--json'], { env: { ...env, HOOKRELAY_API_KEY: `hr_${'0'.repeat(40)}` } });
    expectJsonFailure(badKey, 3, 'UNAUTHORIZED');
  });
});

describe('messages delete and delete-batch', () => {
  it('without --force and without a TTY: exit 2, nothing deleted', async () => {
    const created = await send(okEndpoint, '--data', '{"keep":true}');
    const refused = await cli(['messages', 'delete', created.message_id], 'y\n');
    expect(refused.code, explain(refused)).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^CONFIRMATION_REQUIRED: /mu);
    expect(refused.stderr).toContain('--force');
    expectJsonFailure(await cli(['messages', 'delete', created.message_id, '--json']), 2, 'CONFIRMATION_REQUIRED');
    const batch = await cli(['messages', 'delete-batch', created.message_id, '--json']);
    expectJsonFailure(batch, 2, 'CONFIRMATION_REQUIRED');

    const kept = await json<Message>(['messages', 'get', created.message_id]);
    expect(kept.deleted_at).toBeUndefined();
    expect(kept.payload).toEqual({ keep: true });
  });

  it('--force deletes the payload and keeps the record; a repeat says already_deleted', async () => {
    const created = await send(okEndpoint, '--data', '{"secret":"x"}');
    const deleted = await json<{ message_id: string; deleted_at: string; already_deleted: boolean }>(['messages', 'delete', created.message_id, '--force']);
    expect(deleted).toMatchObject({ message_id: created.message_id, already_deleted: false });
    const again = await json<{ already_deleted: boolean; deleted_at: string }>(['messages', 'delete', created.message_id, '--force']);
    expect(again).toMatchObject({ already_deleted: true, deleted_at: deleted.deleted_at });
    const record = await json<Message>(['messages', 'get', created.message_id]);
    expect(record.deleted_at).toBe(deleted.deleted_at);
    expect(record.payload).toBeUndefined();
    const human = await cli(['messages', 'get', created.message_id]);
    expect(human.stdout).toMatch(/^Payload\n\(deleted\)$/mu);
  });

  it('delete-batch gives each id an outcome and the counts', async () => {
    const one = await send(okEndpoint, '--data', '{"n":1}');
    const two = await send(okEndpoint, '--data', '{"n":2}');
    expectSuccess(await cli(['messages', 'delete', two.message_id, '--force']));
    const result = await json<{ results: { message_id: string; outcome: string }[]; deleted_count: number; already_deleted_count: number; not_found_count: number }>([
      'messages',
      'delete-batch',
      one.message_id,
      two.message_id,
      UNKNOWN_MESSAGE,
      one.message_id,
      '--force',
    ]);
    expect(result.results).toEqual([
      expect.objectContaining({ message_id: one.message_id, outcome: 'deleted' }),
      expect.objectContaining({ message_id: two.message_id, outcome: 'already_deleted' }),
      { message_id: UNKNOWN_MESSAGE, outcome: 'not_found' },
    ]);
    expect(result).toMatchObject({ deleted_count: 1, already_deleted_count: 1, not_found_count: 1 });

    const human = await cli(['messages', 'delete-batch', one.message_id, '--force']);
    expectSuccess(human);
    expect(human.stdout).toContain('0 deleted, 1 already deleted, 0 not found');
  });

  it('delete-batch refuses an id that is not a UUID before any request', async () => {
    const result = await cli(['messages', 'delete-batch', UNKNOWN_MESSAGE, 'nope', '--force', '--json']);
    expect(expectJsonFailure(result, 2, 'INVALID_ARGUMENTS').request_id).toBeNull();
    expectJsonFailure(await cli(['messages', 'delete-batch', '--force', '--json']), 2, 'INVALID_ARGUMENTS');
  });
});

describe('logs', () => {
  let endpoint: string;
  const ids: string[] = [];

  beforeAll(async () => {
    endpoint = await createEndpoint('/ok/logs');
    for (let i = 0; i < 3; i += 1) ids.push((await send(endpoint, '--data', `{"i":${i}}`)).message_id);
    for (const id of ids) await waitForStatus(id, 'succeeded');
  });

  it('lists messages newest first with the filters --endpoint and --status', async () => {
    const page = await json<LogPage>(['logs', '--endpoint', endpoint]);
    expect(page.data.map((row) => row.message_id)).toEqual([...ids].reverse());
    expect(page.next_cursor).toBeNull();
    expect(page.data[0]).toMatchObject({ status: 'succeeded', endpoint: `${receiver.url}/ok/logs` });

    const failed = await json<LogPage>(['logs', '--endpoint', endpoint, '--status', 'failed_permanent']);
    expect(failed.data).toEqual([]);
    const all = await json<LogPage>(['logs', '--status', 'succeeded', '--limit', '500']);
    for (const id of ids) expect(all.data.map((row) => row.message_id)).toContain(id);
  });

  it('--since/--start-time and --until/--end-time bound the creation time', async () => {
    const future = await json<LogPage>(['logs', '--endpoint', endpoint, '--since', '2999-01-01T00:00:00Z']);
    expect(future.data).toEqual([]);
    const recent = await json<LogPage>(['logs', '--endpoint', endpoint, '--start-time', '1h']);
    expect(recent.data).toHaveLength(3);
    const { data: rows } = await json<LogPage>(['logs', '--endpoint', endpoint]);
    const middle = await json<LogPage>(['logs', '--endpoint', endpoint, '--since', rows[1]?.created_at ?? '']);
    expect(middle.data.map((row) => row.message_id)).toEqual([ids[2], ids[1]]);
    const before = await json<LogPage>(['logs', '--endpoint', endpoint, '--end-time', rows[1]?.created_at ?? '']);
    expect(before.data.map((row) => row.message_id)).toEqual([ids[0]]);
  });

  it('pages with --limit and --cursor; --all walks every page; the human hint names the next page', async () => {
    const paged: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page += 1) {
      const body: LogPage = await json<LogPage>(['logs', '--endpoint', endpoint, '--limit', '1', ...(cursor === null ? [] : ['--cursor', cursor])]);
      paged.push(...body.data.map((row) => row.message_id));
      cursor = body.next_cursor;
      if (cursor === null) break;
    }
    expect(paged).toEqual([...ids].reverse());

    const all = await json<LogPage>(['logs', '--endpoint', endpoint, '--limit', '1', '--all']);
    expect(all.data.map((row) => row.message_id)).toEqual([...ids].reverse());
    expect(all.next_cursor).toBeNull();

    const human = await cli(['logs', '--endpoint', endpoint, '--limit', '1']);
    expectSuccess(human);
    expect(human.stdout).toMatch(/^CREATED\s+MESSAGE\s+STATUS\s+ATTEMPTS\s+RESPONSE\s+LATENCY\s+ERROR$/mu);
    expect(human.stdout.trim().split('\n')).toHaveLength(2);
    expect(human.stderr).toMatch(new RegExp(`hookrelay logs --endpoint ${endpoint} --limit 1 --cursor \\S+`, 'u'));
  });

  it('bad flag values exit 2; a bad key exits 3', async () => {
    expectJsonFailure(await cli(['logs', '--status', 'nope', '--json']), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await cli(['logs', '--since', 'yesterday', '--json']), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await cli(['logs', '--limit', 'x', '--json']), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await cli(['logs', '--follow', '--cursor', 'abc', '--json']), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await cli(['logs', '--limit', '0', '--json']), 2, 'INVALID_REQUEST');
    expectJsonFailure(await cli(['logs', '--limit', '501', '--json']), 2, 'INVALID_REQUEST');
    expectJsonFailure(await cli(['logs', '--endpoint', 'ep_nope', '--json']), 2, 'INVALID_REQUEST');
    expectJsonFailure(await cli(['logs', '--cursor', 'garbage', '--json']), 2, 'INVALID_REQUEST');
    const badKey = await runCli(['logs', '--json'], { env: { ...env, HOOKRELAY_API_KEY: `hr_${'0'.repeat(40)}` } });
    expectJsonFailure(badKey, 3, 'UNAUTHORIZED');
  });

  it('--follow prints the latest rows, then each new message once, and exits 0 on Ctrl-C', async () => {
    const followed = await createEndpoint('/ok/follow');
    const old = await send(followed, '--data', '{"old":true}');
    const running = await startCli(['logs', '--follow', '--endpoint', followed, '--json'], env);
    try {
      await running.waitForLine(new RegExp(old.message_id, 'u'));
      const fresh = await send(followed, '--data', '{"fresh":true}');
      await running.waitForLine(new RegExp(fresh.message_id, 'u'));
      // Two more polls: nothing is printed twice.
      await new Promise((resolve) => setTimeout(resolve, 4_500));
      running.child.kill('SIGINT');
      const started = Date.now();
      expect(await running.exited).toBe(0);
      expect(Date.now() - started).toBeLessThan(5_000);
      const lines = running.stdout().trim().split('\n').map((line) => JSON.parse(line) as { message_id: string });
      expect(lines.map((line) => line.message_id)).toEqual([old.message_id, fresh.message_id]);
      expect(running.stderr()).toBe('');
    } finally {
      running.child.kill('SIGKILL');
    }
  });

  it('--follow in human output: one line per message', async () => {
    const followed = await createEndpoint('/ok/follow-human');
    const running = await startCli(['logs', '--follow', '--endpoint', followed], env);
    try {
      const created = await send(followed, '--data', '{}');
      const line = await running.waitForLine(new RegExp(created.message_id, 'u'));
      expect(line).toMatch(new RegExp(`^\\S+Z  ${created.message_id}  (queued|delivering|succeeded)  `, 'u'));
      running.child.kill('SIGINT');
      expect(await running.exited).toBe(0);
      expect(running.stderr()).toMatch(/following new messages/u);
    } finally {
      running.child.kill('SIGKILL');
    }
  });
});
