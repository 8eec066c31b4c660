import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeConfigDir, runCli } from './helpers/cli.js';
import { startDeliveryRig, type DeliveryRig } from './helpers/delivery-rig.js';
import { eventually, explain } from './helpers/expect-cli.js';
import { testResources } from './helpers/fixture.js';
import { api, createCliEndpoint, sendWebhook, until } from './helpers/listen.js';
import { CLI_BIN, REPO_ROOT } from './helpers/paths.js';

/**
 * `hookrelay mcp` as a coding agent runs it: the built CLI started by the MCP SDK's own client over
 * stdio, against the real server. The agent finds a webhook, reads it, replays it with an edit and
 * waits for the copy, which a running `hookrelay listen` forwards to the app, whose answer the
 * agent then reads; the writes (trigger, pause and resume, send_event) and their failures;
 * --read-only lists the reads alone.
 */

const READS = ['list_endpoints', 'list_messages', 'get_message', 'list_rejections', 'wait_for_message'];
const WRITES = ['replay_message', 'trigger', 'send_event', 'pause_endpoint', 'resume_endpoint'];

interface ToolAnswer {
  isError: boolean;
  value: Record<string, unknown> & { error?: { code: string; message: string } };
}

interface MessageRecord {
  id: string;
  endpoint_id: string;
  status: string;
  headers: [string, string][];
  body: string | null;
  body_encoding: 'text' | 'base64';
  body_truncated: boolean;
  replay_of: string | null;
  edited: boolean;
  signed: boolean | null;
  answers: { listener: string; status: number | null; response_body: string | null }[];
}

let rig: DeliveryRig;
const { configDir, localApp, defer, cleanup, listen } = testResources();

beforeAll(async () => {
  rig = await startDeliveryRig('mcp');
});
afterAll(async () => {
  await cleanup();
  await rig?.stop();
});

/** The SDK's client on `hookrelay mcp ARGS`, closed after the test. */
async function agent(args: string[] = []): Promise<{ client: Client; stderr: () => string }> {
  const dir = await configDir();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_BIN, 'mcp', ...args],
    cwd: REPO_ROOT,
    env: { ...rig.env, HOOKRELAY_CONFIG_DIR: dir, NO_COLOR: '1', PATH: process.env.PATH ?? '' },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'hookrelay-e2e', version: '1.0.0' });
  await client.connect(transport);
  defer(() => client.close());
  return { client, stderr: () => stderr };
}

async function call(client: Client, name: string, args: Record<string, unknown>, onprogress?: (message: string) => void): Promise<ToolAnswer> {
  const result = await client.callTool({ name, arguments: args }, undefined, onprogress === undefined ? undefined : { onprogress: (p) => onprogress(p.message ?? '') });
  const content = result.content as { type: string; text: string }[];
  expect(content).toHaveLength(1);
  expect(content[0]!.type).toBe('text');
  let value: ToolAnswer['value'];
  try {
    value = JSON.parse(content[0]!.text) as ToolAnswer['value'];
  } catch {
    value = { text: content[0]!.text };
  }
  return { isError: result.isError === true, value };
}

async function ok<T>(client: Client, name: string, args: Record<string, unknown>): Promise<T> {
  const answer = await call(client, name, args);
  expect(answer.isError, `${name}: ${JSON.stringify(answer.value)}`).toBe(false);
  return answer.value as T;
}

describe('hookrelay mcp', () => {
  it('list → get → replay with an edit → wait_for_message sees the copy; the app that listen forwarded it to answered', async () => {
    const endpoint = await createCliEndpoint(rig.server.url, rig.server.apiKey);
    const app = await localApp((request, res) => res.writeHead(201, { 'content-type': 'text/plain' }).end(`took ${request.body.length} bytes`));
    const listener = listen([endpoint.id, '--forward-to', app.url], await configDir(), rig.env);
    await listener.waitForStderr(/connected \(websocket\)/u);
    const original = '{"order":{"id":"ord_7Hq2","amount":100},"note":"caf\u00e9"}';
    const sent = await sendWebhook(rig.server.url, endpoint.token, { body: original, headers: [['Content-Type', 'application/json'], ['X-Shop', 'north']] });
    await app.waitFor(1);

    const { client, stderr } = await agent();
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([...READS, ...WRITES]);
    expect(stderr()).toContain(`hookrelay mcp: serving every tool for ${rig.server.url}`);

    const endpoints = await ok<{ endpoints: { id: string; mode: string }[]; next_cursor: string | null }>(client, 'list_endpoints', {});
    expect(endpoints.endpoints).toContainEqual(expect.objectContaining({ id: endpoint.id, mode: 'cli' }));

    const found = await ok<{ messages: { id: string; method: string }[]; search: { q: string } }>(client, 'list_messages', { endpoint_id: endpoint.id, text: 'ord_7Hq2', since: '1h' });
    expect(found.messages.map((m) => m.id)).toEqual([sent.messageId]);
    expect(found.search.q).toBe('ord_7Hq2');
    expect((await ok<{ messages: unknown[] }>(client, 'list_messages', { endpoint_id: endpoint.id, text: 'ord_none' })).messages).toEqual([]);

    const read = await ok<MessageRecord>(client, 'get_message', { message_id: sent.messageId });
    expect(read).toMatchObject({ id: sent.messageId, endpoint_id: endpoint.id, body: original, body_encoding: 'text', body_truncated: false, edited: false, replay_of: null });
    expect(read.headers).toContainEqual(['X-Shop', 'north']);
    expect(read.answers).toEqual([expect.objectContaining({ status: 201, response_body: `took ${Buffer.byteLength(original)} bytes` })]);
    const cut = await ok<MessageRecord>(client, 'get_message', { message_id: sent.messageId, max_body_bytes: 10, body_as: 'base64' });
    expect(cut).toMatchObject({ body: Buffer.from(original).subarray(0, 10).toString('base64'), body_encoding: 'base64', body_truncated: true });

    // The wait starts first (its first progress report names where it starts); the replay's copy is what it sees.
    const progress: string[] = [];
    const waiting = call(client, 'wait_for_message', { endpoint_id: endpoint.id, timeout_seconds: 30 }, (message) => progress.push(message));
    await until(() => progress.length > 0, 'the wait to start');
    expect(progress[0]).toBe(`waiting for a message after ${sent.messageId}`);
    const replay = await ok<{ message_id: string; replay_of: string; edited: boolean; signed: boolean }>(client, 'replay_message', {
      message_id: sent.messageId,
      set: [{ path: 'order.amount', value: 250 }],
      headers: { 'X-Shop': 'south' },
    });
    expect(replay).toMatchObject({ replay_of: sent.messageId, edited: true, signed: false });
    expect(replay.message_id).not.toBe(sent.messageId);
    const waited = await waiting;
    expect(waited.isError, JSON.stringify(waited.value)).toBe(false);
    const copy = waited.value as unknown as MessageRecord;
    expect(copy).toMatchObject({ id: replay.message_id, replay_of: sent.messageId, edited: true, body_encoding: 'text' });
    expect(JSON.parse(copy.body!)).toEqual({ order: { id: 'ord_7Hq2', amount: 250 }, note: 'café' });
    expect(copy.headers).toContainEqual(['X-Shop', 'south']);

    // listen forwarded the copy; its answer is in the record.
    await app.waitFor(2);
    expect(JSON.parse(app.requests[1]!.body.toString('utf8'))).toEqual({ order: { id: 'ord_7Hq2', amount: 250 }, note: 'café' });
    const answered = await eventually(async () => {
      const record = await ok<MessageRecord>(client, 'get_message', { message_id: replay.message_id });
      return record.answers.length > 0 ? record : undefined;
    }, 'the answer to the copy');
    expect(answered.answers).toEqual([expect.objectContaining({ status: 201 })]);
  });

  it('trigger, pause and resume, list_rejections and send_event; failures are tool errors with the code', async () => {
    const endpoint = await createCliEndpoint(rig.server.url, rig.server.apiKey);
    await api(rig.server.url, rig.server.apiKey, 'POST', '/v1/endpoints', { url: `${rig.receiver.url}/ok/mcp`, event_types: ['order.*'] });
    const { client } = await agent();

    const sample = await ok<{ message_id: string; provider: string; signed: boolean; signed_by: string }>(client, 'trigger', {
      endpoint_id: endpoint.id,
      provider: 'github',
      event: 'push',
      set: [{ path: 'ref', value: 'refs/heads/mcp' }],
    });
    // The endpoint verifies nothing and holds no secret: the sample goes unsigned, and says so.
    expect(sample).toMatchObject({ provider: 'github', signed: false, signed_by: 'none' });
    const pushes = await ok<{ messages: { id: string; event_type: string }[] }>(client, 'list_messages', { endpoint_id: endpoint.id, event: 'pu*' });
    expect(pushes.messages).toEqual([expect.objectContaining({ id: sample.message_id, event_type: 'push' })]);
    const pushed = await ok<MessageRecord>(client, 'get_message', { message_id: sample.message_id });
    expect((JSON.parse(pushed.body!) as { ref: string }).ref).toBe('refs/heads/mcp');

    expect(await ok(client, 'pause_endpoint', { endpoint_id: endpoint.id })).toEqual({ id: endpoint.id, paused: true });
    const refused = await fetch(`${rig.server.url}/in/${endpoint.token}`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(15_000) });
    expect(refused.status).toBe(503);
    const rejections = await eventually(async () => {
      const page = await ok<{ rejections: { reason: string; status: number; method: string }[] }>(client, 'list_rejections', { endpoint_id: endpoint.id });
      return page.rejections.length > 0 ? page.rejections : undefined;
    }, 'the refused request in list_rejections');
    expect(rejections[0]).toMatchObject({ reason: 'endpoint_paused', status: 503, method: 'POST' });
    expect(await ok(client, 'resume_endpoint', { endpoint_id: endpoint.id })).toEqual({ id: endpoint.id, paused: false });
    expect((await sendWebhook(rig.server.url, endpoint.token, { body: '{}' })).status).toBe(200);

    const event = await ok<{ event_id: string; messages: { message_id: string; endpoint_id: string }[] }>(client, 'send_event', { event_type: 'order.created', payload: { id: 'ord_9' } });
    expect(event.messages).toHaveLength(1);
    await until(() => rig.receiver.received.some((r) => r.path === '/ok/mcp'), 'the event at the receiver');
    expect(JSON.parse(rig.receiver.received.find((r) => r.path === '/ok/mcp')!.body.toString('utf8'))).toEqual({ id: 'ord_9' });

    const missing = await call(client, 'get_message', { message_id: '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71' });
    expect(missing).toMatchObject({ isError: true, value: { error: { code: 'NOT_FOUND', status: 404 } } });
    const both = await call(client, 'replay_message', { message_id: sample.message_id, body: '{}', set: [{ path: 'a', value: 1 }] });
    expect(both.isError).toBe(true);
    expect(JSON.stringify(both.value)).toContain('must not be given together with body');
    const polluting = await call(client, 'replay_message', { message_id: sample.message_id, set: [{ path: '__proto__.x', value: 1 }] });
    expect(polluting.isError).toBe(true);
    const late = await call(client, 'wait_for_message', { endpoint_id: endpoint.id, event: 'never', timeout_seconds: 1 });
    expect(late).toMatchObject({ isError: true, value: { error: { code: 'WAIT_TIMEOUT' } } });
    const noEvent = await call(client, 'send_event', { event_type: 'order.created' });
    expect(noEvent.isError).toBe(true);
    expect(JSON.stringify(noEvent.value)).toContain('or body is required');
  });

  it('--read-only lists no write tool and refuses a call of one', async () => {
    const endpoint = await createCliEndpoint(rig.server.url, rig.server.apiKey);
    const sent = await sendWebhook(rig.server.url, endpoint.token, { body: '{"n":1}' });
    const { client } = await agent(['--read-only']);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(READS);
    const refused = await call(client, 'replay_message', { message_id: sent.messageId });
    expect(refused.isError).toBe(true);
    const messages = await api<{ id: string; replay_count: number }[]>(rig.server.url, rig.server.apiKey, 'GET', `/v1/inbound-endpoints/${endpoint.id}/messages`);
    expect(messages.map((m) => [m.id, m.replay_count])).toEqual([[sent.messageId, 0]]);
  });

  it('without an API key it exits 3 at the start, before serving', async () => {
    const dir = await makeConfigDir();
    defer(() => import('node:fs/promises').then(({ rm }) => rm(dir, { recursive: true, force: true })));
    const result = await runCli(['mcp'], { env: { HOOKRELAY_API_URL: rig.server.url }, configDir: dir });
    expect(result.code, explain(result)).toBe(3);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('NO_API_KEY');
  });
});
