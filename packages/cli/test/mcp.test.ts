import { HookrelayApiError, type HookrelayClient } from '@hookrelay/shared/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { messageBody, toolBody, toolFailure } from '../src/mcp/results.js';
import { createMcpServer, serveStdio } from '../src/mcp/server.js';

/**
 * The MCP server's own rules, through the SDK's client on an in-memory transport and an API client
 * that answers from a script: which tools are offered, how a body is given, how a failure reads,
 * where a wait starts. The real server and the stdio process are e2e/cli-mcp.test.ts.
 */

const ENDPOINT = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
const OLD = '0190b2c4-8000-7000-8000-000000000001';
const NEW = '0190b2c4-8000-7000-8000-000000000002';

function row(id: string, eventType: string | null) {
  return { id, message_id: id, event_type: eventType, path: '/', received_at: '2026-12-04T10:00:00.000Z' };
}

async function connect(api: Partial<Record<'inboundEndpoints' | 'inboundMessages', unknown>>, readOnly = false): Promise<Client> {
  const server = createMcpServer({ context: { client: api as unknown as HookrelayClient, runningDev: undefined, now: () => Date.now() }, readOnly, version: '0.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'test', version: '0.0.0' });
  await client.connect(clientSide);
  return client;
}

function text(result: object): string {
  return ((result as { content: { text: string }[] }).content)[0]!.text;
}

describe('a body as a tool gives it', () => {
  const bytes = Buffer.from('{"name":"café"}');

  it('text when it is UTF-8, cut at the bound without half a character', () => {
    expect(toolBody(bytes, 1000, 'auto')).toEqual({ body: '{"name":"café"}', body_encoding: 'text', body_truncated: false });
    // "é" is two bytes, the 13th and 14th: a cut after the 13th leaves it out.
    expect(toolBody(bytes, 13, 'auto')).toEqual({ body: '{"name":"caf', body_encoding: 'text', body_truncated: true });
    expect(toolBody(bytes, 0, 'auto')).toEqual({ body: '', body_encoding: 'text', body_truncated: true });
  });

  it('base64 when it is not UTF-8, or when asked; text with replacement characters when asked', () => {
    const binary = Buffer.from([0xff, 0x00, 0x41]);
    expect(toolBody(binary, 1000, 'auto')).toEqual({ body: '/wBB', body_encoding: 'base64', body_truncated: false });
    expect(toolBody(binary, 1000, 'text')).toEqual({ body: '\ufffd\u0000A', body_encoding: 'text', body_truncated: false });
    expect(toolBody(bytes, 4, 'base64')).toEqual({ body: Buffer.from('{"na').toString('base64'), body_encoding: 'base64', body_truncated: true });
  });

  it('says why a record has none', () => {
    expect(messageBody({ body_error: 'payload_unavailable' }, 10, 'auto')).toEqual({ body: null, body_omitted: 'payload_unavailable' });
    expect(messageBody({ deleted_at: '2026-12-04T10:00:00.000Z' }, 10, 'auto')).toEqual({ body: null, body_omitted: 'deleted' });
    expect(messageBody({}, 10, 'auto')).toEqual({ body: null, body_omitted: 'too_large' });
    expect(messageBody({ body: Buffer.from('hi').toString('base64'), body_encoding: 'base64' }, 10, 'auto')).toMatchObject({ body: 'hi' });
  });
});

describe('the tools', () => {
  it('offers every tool, or under read-only those that read', async () => {
    const all = (await (await connect({})).listTools()).tools;
    expect(all.map((tool) => tool.name)).toEqual([
      'list_endpoints',
      'list_messages',
      'get_message',
      'list_rejections',
      'wait_for_message',
      'replay_message',
      'trigger',
      'send_event',
      'pause_endpoint',
      'resume_endpoint',
    ]);
    expect(all.filter((tool) => tool.annotations?.readOnlyHint === true).map((tool) => tool.name)).toEqual(['list_endpoints', 'list_messages', 'get_message', 'list_rejections', 'wait_for_message']);
    expect(all.find((tool) => tool.name === 'pause_endpoint')?.annotations?.destructiveHint).toBe(true);
    // The shared schema is what the agent reads: required fields and no others.
    expect(all.find((tool) => tool.name === 'get_message')?.inputSchema).toMatchObject({ required: ['message_id'], additionalProperties: false });
    const reads = (await (await connect({}, true)).listTools()).tools;
    expect(reads.map((tool) => tool.name)).toEqual(['list_endpoints', 'list_messages', 'get_message', 'list_rejections', 'wait_for_message']);
  });

  it("answers an API failure as a tool error with the API's code, message, status and request id", async () => {
    const client = await connect({
      inboundMessages: { get: () => Promise.reject(new HookrelayApiError('NOT_FOUND', 'inbound message not found', 404, 'req_1')) },
    });
    const result = await client.callTool({ name: 'get_message', arguments: { message_id: OLD } });
    expect(result.isError).toBe(true);
    expect(JSON.parse(text(result))).toEqual({ error: { code: 'NOT_FOUND', message: 'inbound message not found', request_id: 'req_1', status: 404 } });
    expect(toolFailure(new HookrelayApiError('INVALID_REQUEST', 'bad', 400, undefined, [{ path: 'body.set', message: 'x' } as never])).content[0]!.text).toContain('"details"');
  });

  it('refuses input the shared schema refuses, before any request', async () => {
    let requests = 0;
    const client = await connect({ inboundMessages: { get: () => (requests += 1, Promise.reject(new Error('no'))) } });
    const result = await client.callTool({ name: 'get_message', arguments: { message_id: 'not-a-uuid', extra: 1 } });
    expect(result.isError).toBe(true);
    // The SDK's own words, naming the field and what it must be.
    expect(text(result)).toMatch(/^MCP error -32602: Input validation error: .*must be a UUID at message_id\nUnrecognized key: "extra"$/u);
    expect(requests).toBe(0);
  });

  it('wait_for_message starts after the newest message at the call, reports it, and answers the first match above it', async () => {
    const pages: unknown[][] = [[row(OLD, 'push')], [row(OLD, 'push')], [row(NEW, 'push'), row(OLD, 'push')]];
    const asked: unknown[] = [];
    const client = await connect({
      inboundEndpoints: {
        messages: (id: string, query: unknown) => {
          asked.push({ id, query });
          return Promise.resolve({ data: pages.length > 1 ? pages.shift() : pages[0], meta: { has_more: false, next_cursor: null } });
        },
      },
      inboundMessages: {
        get: (id: string) => Promise.resolve({ data: { id, inbound_endpoint_id: ENDPOINT, raw_headers: [], body: Buffer.from('{}').toString('base64'), body_encoding: 'base64', answers: [] } }),
      },
    });
    const progress: string[] = [];
    const result = await client.callTool({ name: 'wait_for_message', arguments: { endpoint_id: ENDPOINT, event: 'pu*', timeout_seconds: 10 } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? ''),
    });
    expect(result.isError, text(result)).toBeFalsy();
    expect(JSON.parse(text(result))).toMatchObject({ id: NEW, endpoint_id: ENDPOINT, body: '{}', body_encoding: 'text' });
    expect(progress[0]).toBe(`waiting for a message with event pu* after ${OLD}`);
    expect(asked[0]).toEqual({ id: ENDPOINT, query: { limit: 1 } });
  });

  it('wait_for_message ends with WAIT_TIMEOUT when nothing matches in time', async () => {
    const client = await connect({
      inboundEndpoints: { messages: () => Promise.resolve({ data: [row(OLD, 'issues')], meta: { has_more: false, next_cursor: null } }) },
    });
    const result = await client.callTool({ name: 'wait_for_message', arguments: { endpoint_id: ENDPOINT, timeout_seconds: 1 } });
    expect(result.isError).toBe(true);
    expect(JSON.parse(text(result))).toMatchObject({ error: { code: 'WAIT_TIMEOUT', message: `no message arrived at inbound endpoint ${ENDPOINT} within 1s` } });
  });
});

describe('the stdio server', () => {
  it('answers the requests it read before its input ended, a slow one too, then ends', async () => {
    const slow = { inboundMessages: { get: () => new Promise((resolve) => setTimeout(() => resolve({ data: { id: OLD, inbound_endpoint_id: ENDPOINT, raw_headers: [], answers: [] } }), 100)) } };
    const server = createMcpServer({ context: { client: slow as unknown as HookrelayClient, runningDev: undefined, now: () => Date.now() }, readOnly: true, version: '0.0.0' });
    const input = new PassThrough();
    const output = new PassThrough();
    let written = '';
    output.on('data', (chunk: Buffer) => (written += chunk.toString('utf8')));
    const serving = serveStdio(server, { input, output, stop: new AbortController().signal });
    const lines = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pipe', version: '1' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'get_message', arguments: { message_id: OLD } } },
    ];
    input.end(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
    await serving;
    const answers = written.trim().split('\n').map((line) => JSON.parse(line) as { id: number; result: { serverInfo?: { name: string }; tools?: unknown[]; content?: { text: string }[] } });
    expect(answers.map((answer) => answer.id)).toEqual([1, 2, 3]);
    expect(JSON.parse(answers[2]!.result.content![0]!.text)).toMatchObject({ id: OLD, body: null, body_omitted: 'too_large' });
    expect(answers[0]!.result.serverInfo?.name).toBe('hookrelay');
    expect(answers[1]!.result.tools).toHaveLength(5);
  });

  it('ends at once on a stop', async () => {
    const server = createMcpServer({ context: { client: {} as HookrelayClient, runningDev: undefined, now: () => Date.now() }, readOnly: false, version: '0.0.0' });
    const stop = new AbortController();
    const serving = serveStdio(server, { input: new PassThrough(), output: new PassThrough(), stop: stop.signal });
    stop.abort();
    await serving;
  });
});
