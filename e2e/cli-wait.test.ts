import { setTimeout as sleep } from 'node:timers/promises';
import { uuidv7Time } from '@hookrelay/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonOutput, runCli, type CliResult } from './helpers/cli.js';
import { expectJsonFailure, expectSuccess, explain, startCli } from './helpers/expect-cli.js';
import { startHttpsReceiver, type HttpsReceiver } from './helpers/https-receiver.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * The commands a CI job waits with, as the built CLI against the real server: `messages wait`
 * (delivered: 0, failed for good: 8, timeout: 9) and `inbound messages wait` (the first matching
 * message from --since on, `now` counting from the CLI process's start; it reads only, so cli-mode
 * messages stay queued and no listener shows).
 * Deliveries go to a local HTTPS receiver: `/ok…` answers 200, anything else 500; a one-second
 * retry schedule makes a failing message final within seconds.
 */

interface Message {
  message_id: string;
  status: string;
  attempt_count: number;
}

interface InboundMessage {
  id: string;
  status: string;
  event_type: string | null;
  path: string;
  body?: unknown;
}

let server: RunningServer;
let receiver: HttpsReceiver;
let env: Record<string, string>;

async function cli(args: readonly string[], timeoutMs?: number): Promise<CliResult> {
  return runCli(args, { env, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
}

async function json<T>(args: readonly string[]): Promise<T> {
  const result = await cli([...args, '--json']);
  expectSuccess(result);
  return parseJsonOutput<T>(result);
}

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  server = await startServer({
    env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_RETRY_SCHEDULE: '1' },
  });
  env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
});
afterAll(async () => {
  await server?.stop();
  await receiver?.stop();
});

describe('messages wait', () => {
  it('exits 0 with the delivered message', async () => {
    const endpoint = (await json<{ id: string }>(['endpoints', 'create', '--url', `${receiver.url}/ok-wait`])).id;
    const sent = await json<{ message_id: string }>(['messages', 'send', '--endpoint', endpoint, '--data', '{"n":1}']);
    const result = await cli(['messages', 'wait', sent.message_id, '--timeout', '30s', '--json']);
    expectSuccess(result);
    expect(parseJsonOutput<Message>(result)).toMatchObject({ message_id: sent.message_id, status: 'succeeded', attempt_count: 1 });
    expect(receiver.received.some((r) => r.path === '/ok-wait')).toBe(true);
    const human = await cli(['messages', 'wait', sent.message_id]);
    expectSuccess(human);
    expect(human.stdout).toContain('succeeded');
  });

  it('exits 8 when the message fails for good, with the record on stdout; --for final exits 0', async () => {
    const endpoint = (await json<{ id: string }>(['endpoints', 'create', '--url', `${receiver.url}/fail-wait`])).id;
    const sent = await json<{ message_id: string }>(['messages', 'send', '--endpoint', endpoint, '--data', '{"n":2}']);
    const result = await cli(['messages', 'wait', sent.message_id, '--timeout', '30s', '--json']);
    expect(result.code, explain(result)).toBe(8);
    expect(parseJsonOutput<Message>(result)).toMatchObject({ message_id: sent.message_id, status: 'failed_permanent', attempt_count: 2 });
    expect(JSON.parse(result.stderr)).toMatchObject({ error: { code: 'DELIVERY_FAILED', status: null } });
    const final = await cli(['messages', 'wait', sent.message_id, '--for', 'final', '--json']);
    expectSuccess(final);
    expect(parseJsonOutput<Message>(final).status).toBe('failed_permanent');
  });

  it('exits 9 on timeout while the message waits (paused endpoint), and 4 for an unknown message', async () => {
    const endpoint = (await json<{ id: string }>(['endpoints', 'create', '--url', `${receiver.url}/ok-paused`])).id;
    await json(['endpoints', 'pause', endpoint]);
    const sent = await json<{ message_id: string }>(['messages', 'send', '--endpoint', endpoint, '--data', '{"n":3}']);
    const started = Date.now();
    const error = expectJsonFailure(await cli(['messages', 'wait', sent.message_id, '--timeout', '1500ms', '--json']), 9, 'WAIT_TIMEOUT');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    expect(error.message).toContain(`message ${sent.message_id} reached no final state`);
    expectJsonFailure(await cli(['messages', 'wait', '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71', '--json']), 4, 'NOT_FOUND');
    expectJsonFailure(await cli(['messages', 'wait', sent.message_id, '--timeout', 'soon', '--json']), 2, 'INVALID_ARGUMENTS');
  });

  it('a message deleted while it is waited on ends the wait at once: exit 4, MESSAGE_DELETED', async () => {
    const endpoint = (await json<{ id: string }>(['endpoints', 'create', '--url', `${receiver.url}/ok-deleted`])).id;
    await json(['endpoints', 'pause', endpoint]);
    const sent = await json<{ message_id: string }>(['messages', 'send', '--endpoint', endpoint, '--data', '{"n":4}']);
    const waiter = await startCli(['messages', 'wait', sent.message_id, '--timeout', '30s', '--json'], env);
    await new Promise((resolve) => setTimeout(resolve, 700));
    await json(['messages', 'delete', sent.message_id, '--force']);
    const deletedAt = Date.now();
    const code = await waiter.exited;
    expect(code, waiter.stderr()).toBe(4);
    // It saw the delete at its next read (every half second), not at --timeout.
    expect(Date.now() - deletedAt).toBeLessThan(5_000);
    expect(waiter.stdout()).toBe('');
    const error = (JSON.parse(waiter.stderr()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('MESSAGE_DELETED');
    expect(error.message).toMatch(new RegExp(`^message ${sent.message_id} was deleted \\(at .+\\) while queued: it will never be delivered$`, 'u'));
  });
});

describe('inbound messages wait', () => {
  let endpointId: string;
  let ingestUrl: string;

  const post = async (path: string, event: string, body: unknown): Promise<string> => {
    const res = await fetch(`${ingestUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': event }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    return ((await res.json()) as { data: { message_id: string } }).data.message_id;
  };

  beforeAll(async () => {
    const created = await json<{ id: string; ingest_url: string }>(['inbound', 'create', '--name', 'wait']);
    endpointId = created.id;
    ingestUrl = created.ingest_url;
  });

  it('--since now ignores what arrived more than a second before the CLI started, and times out with exit 9', async () => {
    const before = await post('/github', 'push', { before: true });
    // The default start is the CLI process's start less 1 s (the clock-skew allowance): start later than that.
    await sleep(Math.max(0, uuidv7Time(before) + 1_100 - Date.now()));
    const error = expectJsonFailure(await cli(['inbound', 'messages', 'wait', endpointId, '--event', 'push', '--timeout', '1500ms', '--json']), 9, 'WAIT_TIMEOUT');
    expect(error.message).toBe(`no message with event push arrived at inbound endpoint ${endpointId} within 1.5s`);
  });

  it('--since MESSAGE-ID: the first match from it on, by event and path glob, reading only', async () => {
    const mark = await post('/other', 'ping', { n: 0 });
    const waiter = await startCli(['inbound', 'messages', 'wait', endpointId, '--since', mark, '--event', 'pull_*', '--path', '/github*', '--timeout', '30s', '--json'], env);
    await post('/github', 'push', { n: 1 });
    await post('/other', 'pull_request', { n: 2 });
    const wanted = await post('/github/repo', 'pull_request', { n: 3 });
    await post('/github', 'pull_request', { n: 4 });
    expect(await waiter.exited, waiter.stderr()).toBe(0);
    const found = JSON.parse(waiter.stdout()) as InboundMessage;
    expect(found).toMatchObject({ id: wanted, event_type: 'pull_request', path: '/github/repo', body: { n: 3 }, status: 'queued' });
    // It moved no cursor and showed no listener: the messages stay queued for `listen`.
    const record = await json<{ connected_listeners: number }>(['inbound', 'get', endpointId]);
    expect(record.connected_listeners).toBe(0);
    const again = await cli(['inbound', 'messages', 'wait', endpointId, '--since', mark, '--event', 'pull_*', '--path', '/github*', '--json']);
    expectSuccess(again);
    expect(parseJsonOutput<InboundMessage>(again).id).toBe(wanted);
    // As with `listen --since`, the message named is the first one counted.
    const itself = await cli(['inbound', 'messages', 'wait', endpointId, '--since', wanted, '--event', 'pull_*', '--path', '/github*', '--json']);
    expectSuccess(itself);
    expect(parseJsonOutput<InboundMessage>(itself).id).toBe(wanted);
  });

  it('--since takes what listen takes: a duration, an RFC 3339 time, --from-start; each finds the oldest match already stored', async () => {
    const other = await json<{ id: string; ingest_url: string }>(['inbound', 'create', '--name', 'wait-since']);
    const send = async (event: string, n: number): Promise<string> => {
      const res = await fetch(other.ingest_url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': event }, body: JSON.stringify({ n }) });
      expect(res.status).toBe(200);
      return ((await res.json()) as { data: { message_id: string } }).data.message_id;
    };
    const first = await send('release', 1);
    await send('ping', 2);
    const second = await send('release', 3);
    const aMinuteBefore = new Date(uuidv7Time(first) - 60_000).toISOString();
    for (const since of [['--since', '2h'], ['--since', aMinuteBefore], ['--from-start'], ['--since', first]]) {
      const result = await cli(['inbound', 'messages', 'wait', other.id, '--event', 'release', ...since, '--timeout', '10s', '--json']);
      expectSuccess(result);
      expect(parseJsonOutput<InboundMessage>(result), since.join(' ')).toMatchObject({ id: first, event_type: 'release', body: { n: 1 } });
    }
    const fromSecond = await cli(['inbound', 'messages', 'wait', other.id, '--event', 'release', '--since', second, '--json']);
    expectSuccess(fromSecond);
    expect(parseJsonOutput<InboundMessage>(fromSecond).id).toBe(second);
  });

  it('--since now finds a webhook posted the moment the wait is started, 10 times out of 10; human output shows it', async () => {
    // `hookrelay inbound messages wait … &` then the system under test at once: the webhook arrives
    // while the CLI is still loading, before its first request.
    for (let i = 0; i < 10; i++) {
      const event = `race_${i}`;
      const waiter = await startCli(['inbound', 'messages', 'wait', endpointId, '--event', event, '--timeout', '15s', ...(i === 0 ? [] : ['--json'])], env);
      const sent = await post('/race', event, { i });
      expect(await waiter.exited, `attempt ${i}: ${waiter.stderr()}`).toBe(0);
      if (i === 0) {
        expect(waiter.stdout()).toContain(sent);
        expect(waiter.stdout()).toContain(event);
      } else {
        expect(JSON.parse(waiter.stdout()) as InboundMessage, `attempt ${i}`).toMatchObject({ id: sent, event_type: event, path: '/race', body: { i } });
      }
    }
  }, 180_000);

  it('refuses a --since it cannot read, or with --from-start (exit 2), and an unknown endpoint exits 4', async () => {
    for (const since of [['--since', 'yesterday'], ['--since', '2999-01-01T00:00:00Z'], ['--since', '2h', '--from-start']]) {
      expectJsonFailure(await cli(['inbound', 'messages', 'wait', endpointId, ...since, '--json']), 2, 'INVALID_ARGUMENTS');
    }
    expectJsonFailure(await cli(['inbound', 'messages', 'wait', '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70', '--json']), 4, 'ENDPOINT_NOT_FOUND');
  });
});
