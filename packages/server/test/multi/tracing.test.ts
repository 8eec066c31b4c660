import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createPostgresDatabaseUrl } from '../helpers/database.js';
import { OtlpReceiver, SPAN_KIND, type ReceivedSpan } from '../helpers/otlp.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * One trace per webhook across processes (docs/operating.md, Tracing): the ingest role in one server
 * process, the API (streams, results) and the worker (deliveries) in another, on one PostgreSQL; the
 * spans of both reach an OTLP/HTTP receiver of the test's own.
 */
let otlp: OtlpReceiver;
let delivery: Receiver;
let ingestProcess: ServerProcess;
let apiProcess: ServerProcess;
const apiKey = `hr_${randomBytes(20).toString('hex')}`;
const dirs: string[] = [];

beforeAll(async () => {
  otlp = await OtlpReceiver.start();
  delivery = await Receiver.start();
  const databaseUrl = await createPostgresDatabaseUrl();
  const start = (roles: string, instance: string) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-tracing-'));
    dirs.push(dir);
    return startServerProcess({
      DATABASE_URL: databaseUrl,
      HOOKRELAY_DATA_DIR: dir,
      HOOKRELAY_BOOTSTRAP_API_KEY: apiKey,
      HOOKRELAY_ENCRYPTION_KEY: '33'.repeat(32),
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
      HOOKRELAY_TLS_CA_FILE: delivery.caFile,
      HOOKRELAY_ROLES: roles,
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '20',
      OTEL_RESOURCE_ATTRIBUTES: `service.instance.id=${instance}`,
    });
  };
  // One after the other: both would migrate the new database at once.
  apiProcess = await start('api,worker', 'api-worker');
  ingestProcess = await start('ingest', 'ingest');
}, 120_000);
afterAll(async () => {
  await Promise.all([ingestProcess?.stop(5000), apiProcess?.stop(5000)]);
  await delivery?.close();
  await otlp?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function api(method: string, url: string, body?: unknown): Promise<any> {
  const res = await fetch(`${apiProcess.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json()) as any;
  if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

async function ingest(token: string): Promise<string> {
  const res = await fetch(`${ingestProcess.url}/in/${token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"traced":true}' });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { message_id: string } }).data.message_id;
}

async function requestSpan(messageId: string): Promise<ReceivedSpan> {
  const span = await otlp.waitFor('for the ingest request', (s) => s.kind === SPAN_KIND.server && s.attributes['hookrelay.message.id'] === messageId);
  expect(span.resource['service.instance.id']).toBe('ingest');
  const commit = await otlp.waitFor('for the commit', (s) => s.name === 'hookrelay.ingest.commit' && s.links.some((l) => l.spanId === span.spanId));
  expect(commit.resource['service.instance.id']).toBe('ingest');
  return span;
}

describe('a webhook traced across two processes', () => {
  it('cli mode: ingested by one process, pushed to the CLI and answered in the other, in one trace', async () => {
    const endpoint = await api('POST', '/v1/inbound-endpoints', { name: 'traced', mode: 'cli' });
    const socket = new WebSocket(`${apiProcess.url.replace('http', 'ws')}/v1/inbound-endpoints/${endpoint.id}/stream`, { headers: { authorization: `Bearer ${apiKey}` } });
    const frames: any[] = [];
    socket.on('message', (data) => frames.push(JSON.parse(data.toString())));
    const frame = async (match: (f: any) => boolean): Promise<any> => {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const found = frames.find(match);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no such frame; got ${JSON.stringify(frames)}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    try {
      await frame((f) => f.type === 'ready');
      const messageId = await ingest(endpoint.secret_token);
      await frame((f) => f.type === 'message' && f.message.message_id === messageId);
      const resultId = randomUUID();
      socket.send(JSON.stringify({ type: 'result', message_id: messageId, result_id: resultId, status: 200, latency_ms: 3, error: null }));
      await frame((f) => f.type === 'result_ack' && f.result_id === resultId);

      const request = await requestSpan(messageId);
      const push = await otlp.waitFor('for the push', (s) => s.name === 'hookrelay.stream.push' && s.attributes['hookrelay.message.id'] === messageId);
      expect(push).toMatchObject({ traceId: request.traceId, parentSpanId: request.spanId });
      // Read back after the other process's NOTIFY.
      expect(push.attributes['hookrelay.stream.source']).toBe('read');
      expect(push.resource['service.instance.id']).toBe('api-worker');
      const result = await otlp.waitFor('for the result', (s) => s.name === 'hookrelay.stream.result' && s.attributes['hookrelay.message.id'] === messageId);
      expect(result).toMatchObject({ traceId: request.traceId, parentSpanId: request.spanId });
      expect(result.resource['service.instance.id']).toBe('api-worker');
    } finally {
      socket.close();
    }
  }, 60_000);

  it('forward mode: ingested by one process, delivered by the other’s worker, in one trace', async () => {
    const route = delivery.route(() => ({ status: 200 }));
    const endpoint = await api('POST', '/v1/inbound-endpoints', { name: 'traced forward', mode: 'forward', url: route.url });
    const messageId = await ingest(endpoint.secret_token);
    await delivery.waitFor(route.path, 1, 15_000);
    const request = await requestSpan(messageId);
    const attempt = await otlp.waitFor('for the attempt', (s) => s.name === 'hookrelay.delivery.attempt' && s.attributes['hookrelay.message.id'] === messageId);
    expect(attempt).toMatchObject({ traceId: request.traceId, parentSpanId: request.spanId, kind: SPAN_KIND.client });
    expect(attempt.attributes).toMatchObject({ 'server.address': '127.0.0.1', 'http.response.status_code': 200 });
    expect(attempt.resource['service.instance.id']).toBe('api-worker');
  }, 60_000);
});
