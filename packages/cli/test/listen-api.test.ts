import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HookrelayClient } from '@hookrelay/shared/client';
import { afterEach, describe, expect, it } from 'vitest';
import { createListenApi, type StreamSettings } from '../src/listen/api.js';

const ENDPOINT = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
const LATEST_ON_SERVER = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f79';

let server: Server | undefined;
let client: HookrelayClient | undefined;

afterEach(async () => {
  await client?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  client = undefined;
});

/** A server that answers the endpoint read and records each request's path. */
async function endpointServer(): Promise<{ url: string; paths: string[] }> {
  const paths: string[] = [];
  server = createServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ data: { id: ENDPOINT, mode: 'cli', latest_message_id: LATEST_ON_SERVER }, meta: { request_id: 'r' } }));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, paths };
}

const stream: StreamSettings = { apiUrl: 'http://127.0.0.1:1', apiKey: 'k', userAgent: 'test', handshakeTimeoutMs: 1000, heartbeatTimeoutMs: 1000, heartbeatWarnMs: 500 };

describe('the listen API', () => {
  it('reads the newest message id from the server each time when the caller knows none', async () => {
    const { url, paths } = await endpointServer();
    client = new HookrelayClient({ apiUrl: url, apiKey: 'k' });
    const api = createListenApi(client, ENDPOINT, stream);
    expect(await api.latestMessageId()).toBe(LATEST_ON_SERVER);
    expect(await api.latestMessageId()).toBe(LATEST_ON_SERVER);
    expect(paths).toEqual([`/v1/inbound-endpoints/${ENDPOINT}`, `/v1/inbound-endpoints/${ENDPOINT}`]);
  });

  it('answers the first read from the id the caller has just read (null included), then asks the server', async () => {
    const { url, paths } = await endpointServer();
    client = new HookrelayClient({ apiUrl: url, apiKey: 'k' });
    const api = createListenApi(client, ENDPOINT, stream, {}, null);
    expect(await api.latestMessageId()).toBeNull();
    expect(paths).toEqual([]);
    expect(await api.latestMessageId()).toBe(LATEST_ON_SERVER);
    expect(paths).toEqual([`/v1/inbound-endpoints/${ENDPOINT}`]);
  });
});
