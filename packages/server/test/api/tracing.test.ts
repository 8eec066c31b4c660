import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { parseConfig } from '../../src/config.js';
import { expiredEndpointsSweeper, startSweepers } from '../../src/sweepers/runner.js';
import { openTracing } from '../../src/tracing/tracing.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { OtlpReceiver, SPAN_KIND, type ReceivedSpan } from '../helpers/otlp.js';
import { createPull } from '../helpers/pull.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * OpenTelemetry traces (docs/operating.md, Tracing): the spans a webhook makes in each mode, as an
 * OTLP/HTTP receiver of the test's own gets them, and how they link into one trace.
 */
let otlp: OtlpReceiver;
let delivery: Receiver;
let t: TestApp;
let baseUrl: string;

/** What no span may carry: the secret parts of a request. */
const BODY_MARK = 'body-secret-7f3a';

beforeAll(async () => {
  otlp = await OtlpReceiver.start();
  delivery = await Receiver.start();
  t = await createTestApp({
    worker: true,
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '20',
      OTEL_SERVICE_NAME: 'hookrelay-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test%20one,service.name=ignored',
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
      HOOKRELAY_TLS_CA_FILE: delivery.caFile,
    },
  });
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
  await delivery?.close();
  await otlp?.close();
});

const FOREIGN_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const FOREIGN_SPAN = '00f067aa0ba902b7';

async function ingest(token: string): Promise<string> {
  const res = await fetch(`${baseUrl}/in/${token}?sig=query-secret`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${FOREIGN_TRACE}-${FOREIGN_SPAN}-01` },
    body: JSON.stringify({ mark: BODY_MARK }),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return (JSON.parse(text) as { data: { message_id: string } }).data.message_id;
}

/** The request span of the message, checked: its attributes and its link to the sender's traceparent. */
async function ingestSpan(messageId: string, endpointId: string): Promise<ReceivedSpan> {
  const span = await otlp.waitFor('for the ingest request', (s) => s.attributes['hookrelay.message.id'] === messageId && s.kind === SPAN_KIND.server);
  expect(span.name).toBe('POST /in/{token}');
  expect(span.parentSpanId).toBeUndefined();
  expect(span.attributes).toMatchObject({
    'http.request.method': 'POST',
    'http.route': '/in/{token}',
    'http.response.status_code': 200,
    'http.request.body.size': JSON.stringify({ mark: BODY_MARK }).length,
    'hookrelay.inbound_endpoint.id': endpointId,
  });
  // The sender's traceparent is a link, never the parent: the webhook's trace is the server's own.
  expect(span.traceId).not.toBe(FOREIGN_TRACE);
  expect(span.links).toContainEqual({ traceId: FOREIGN_TRACE, spanId: FOREIGN_SPAN });
  expect(span.resource).toMatchObject({ 'service.name': 'hookrelay-test', 'deployment.environment': 'test one' });
  expect(typeof span.resource['service.version']).toBe('string');
  // The stored context is this span's.
  const [row] = await t.db.sql<{ trace_context: string | null }>`SELECT trace_context FROM inbound_messages WHERE id = ${messageId}`;
  expect(row!.trace_context).toBe(`00-${span.traceId}-${span.spanId}-01`);
  return span;
}

/** The group commit's span: a trace of its own, linked to the request's span, with the batch size. */
async function commitSpanOf(request: ReceivedSpan, name = 'hookrelay.ingest.commit'): Promise<ReceivedSpan> {
  const commit = await otlp.waitFor(`${name} linked to the request`, (s) => s.name === name && s.links.some((l) => l.spanId === request.spanId));
  expect(commit.links).toContainEqual({ traceId: request.traceId, spanId: request.spanId });
  expect(commit.attributes['hookrelay.batch.size']).toBeGreaterThanOrEqual(1);
  expect(commit.attributes['hookrelay.batch.bytes']).toBeGreaterThan(0);
  return commit;
}

function expectNoSecrets(token: string): void {
  for (const span of otlp.spans) {
    const text = JSON.stringify([span.name, span.attributes, span.resource]);
    expect(text).not.toContain(token);
    expect(text).not.toContain(BODY_MARK);
    expect(text).not.toContain('query-secret');
  }
}

describe('tracing', () => {
  it('cli mode: ingest → commit → stream push → result, in one trace', async () => {
    const created = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'traced cli', mode: 'cli' } });
    expect(created.status, created.raw).toBe(201);
    const { id: endpointId, secret_token: token } = created.body.data as { id: string; secret_token: string };

    const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/stream`, { headers: { authorization: `Bearer ${t.main.apiKey}` } });
    const frames: any[] = [];
    socket.on('message', (data) => frames.push(JSON.parse(data.toString())));
    const frame = async (match: (f: any) => boolean): Promise<any> => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const found = frames.find(match);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no such frame; got ${JSON.stringify(frames)}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    try {
      await frame((f) => f.type === 'ready');
      const messageId = await ingest(token);
      await frame((f) => f.type === 'message' && f.message.message_id === messageId);
      const resultId = randomUUID();
      socket.send(JSON.stringify({ type: 'result', message_id: messageId, result_id: resultId, status: 202, latency_ms: 7, error: null }));
      expect((await frame((f) => f.type === 'result_ack' && f.result_id === resultId)).outcome).toBe('recorded');

      const request = await ingestSpan(messageId, endpointId);
      await commitSpanOf(request);
      const push = await otlp.waitFor('for the stream push', (s) => s.name === 'hookrelay.stream.push' && s.attributes['hookrelay.message.id'] === messageId);
      expect(push).toMatchObject({ traceId: request.traceId, parentSpanId: request.spanId, kind: SPAN_KIND.producer });
      expect(push.attributes['hookrelay.inbound_endpoint.id']).toBe(endpointId);
      const result = await otlp.waitFor('for the result', (s) => s.name === 'hookrelay.stream.result' && s.attributes['hookrelay.message.id'] === messageId);
      expect(result).toMatchObject({ traceId: request.traceId, parentSpanId: request.spanId, kind: SPAN_KIND.consumer });
      expect(result.attributes).toMatchObject({ 'hookrelay.result.status': 202, 'hookrelay.result.outcome': 'recorded', 'hookrelay.result.latency_ms': 7 });

      // A polled page is a push too, in the same trace.
      const page = await t.request('GET', `/v1/inbound-endpoints/${endpointId}/listen`);
      expect(page.status, page.raw).toBe(200);
      const polled = await otlp.waitFor('for the polled page', (s) => s.name === 'hookrelay.stream.push' && s.attributes['hookrelay.stream.source'] === 'poll');
      expect(polled).toMatchObject({ traceId: request.traceId, parentSpanId: request.spanId });
      expectNoSecrets(token);
    } finally {
      socket.close();
    }
  });

  it('forward mode: ingest → commit → delivery attempt, with the target host and status only', async () => {
    const route = delivery.route(() => ({ status: 201, body: 'ok' }));
    const created = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'traced forward', mode: 'forward', url: `${route.url}?key=url-secret` } });
    expect(created.status, created.raw).toBe(201);
    const { id: endpointId, secret_token: token } = created.body.data as { id: string; secret_token: string };

    const messageId = await ingest(token);
    await delivery.waitFor(route.path, 1);
    const request = await ingestSpan(messageId, endpointId);
    await commitSpanOf(request);
    const attempt = await otlp.waitFor('for the delivery attempt', (s) => s.name === 'hookrelay.delivery.attempt' && s.attributes['hookrelay.message.id'] === messageId);
    expect(attempt).toMatchObject({ traceId: request.traceId, parentSpanId: request.spanId, kind: SPAN_KIND.client });
    expect(attempt.attributes).toEqual({
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'server.port': delivery.portNumber,
      'http.response.status_code': 201,
      'hookrelay.message.id': messageId,
      'hookrelay.message.kind': 'inbound',
      'hookrelay.delivery.attempt_number': 1,
    });
    expect(JSON.stringify(attempt)).not.toContain('url-secret');
    expect(JSON.stringify(attempt)).not.toContain(route.path);
    expectNoSecrets(token);
  });

  it('pull ingestion: a request span and a commit span linked to it', async () => {
    const pull = await createPull(t);
    const res = await fetch(`${baseUrl}${pull.path}`, { method: 'POST', body: BODY_MARK });
    expect(res.status).toBe(200);
    const eventId = ((await res.json()) as { data: { event_id: string } }).data.event_id;
    const request = await otlp.waitFor('for the pull request', (s) => s.attributes['hookrelay.pull_event.id'] === eventId);
    expect(request).toMatchObject({ name: 'POST /pull/{id}/{token}', kind: SPAN_KIND.server });
    expect(request.attributes).toMatchObject({ 'hookrelay.pull_endpoint.id': pull.id, 'http.response.status_code': 200, 'http.request.body.size': BODY_MARK.length });
    await commitSpanOf(request, 'hookrelay.pull.commit');
    expectNoSecrets(pull.token);
  });

  it('a refused ingest request is traced with its status and no endpoint', async () => {
    const res = await fetch(`${baseUrl}/in/${'x'.repeat(10)}`, { method: 'POST', body: 'nothing' });
    expect(res.status).toBe(404);
    const span = await otlp.waitFor('for the refused request', (s) => s.kind === SPAN_KIND.server && s.attributes['http.response.status_code'] === 404);
    expect(span.attributes['hookrelay.inbound_endpoint.id']).toBeUndefined();
    expect(span.statusCode).not.toBe(2);
  });

  it('a span per sweeper run, with what it removed', async () => {
    const handle = startSweepers(t.db, { payloadStore: t.app.services.payloadStore, tracing: t.app.services.tracing }, t.app.log, 60_000, [expiredEndpointsSweeper]);
    try {
      const run = await otlp.waitFor('for the sweeper', (s) => s.name === 'hookrelay.sweeper.run' && s.attributes['hookrelay.sweeper.name'] === 'expired-endpoints');
      expect(run.attributes).toMatchObject({ 'hookrelay.sweeper.skipped': false, 'hookrelay.sweeper.removed': 0 });
    } finally {
      await handle.stop();
    }
  });
});

describe('tracing settings', () => {
  it('exports http/protobuf to <endpoint>/v1/traces by default, and flushes at the stop', async () => {
    const receiver = await OtlpReceiver.start();
    // A long schedule: only the graceful stop exports the span.
    const app = await createTestApp({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/`, OTEL_BSP_SCHEDULE_DELAY: '600000' } });
    try {
      const created = await app.request('POST', '/v1/inbound-endpoints', { body: { name: 'proto', mode: 'cli' } });
      const res = await app.app.inject({ method: 'POST', url: `/in/${created.body.data.secret_token}`, payload: 'x' });
      expect(res.statusCode).toBe(200);
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await app.close();
    }
    expect(receiver.requests.length).toBeGreaterThan(0);
    expect(receiver.requests[0]).toMatchObject({ path: '/v1/traces', contentType: 'application/x-protobuf' });
    expect(receiver.requests[0]!.body.includes(Buffer.from('POST /in/{token}'))).toBe(true);
    await receiver.close();
  });

  it('says so in a warn line when the collector cannot be reached, and still stops', async () => {
    const gone = await OtlpReceiver.start();
    const url = gone.url;
    await gone.close();
    const warnings: { fields: object; message: string }[] = [];
    const config = parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_BSP_SCHEDULE_DELAY: '600000', OTEL_EXPORTER_OTLP_TIMEOUT: '2000' }).tracing;
    const tracing = await openTracing(config, 'test', { warn: (fields, message) => warnings.push({ fields, message }) });
    tracing.startSpan('lost').end();
    await tracing.shutdown();
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings[0]!.message).toBe('tracing: the OpenTelemetry SDK reports a problem');
    expect(JSON.stringify(warnings[0]!.fields)).toMatch(/ECONNREFUSED/);
  });

  it('without an endpoint (or with OTEL_SDK_DISABLED=true) tracing is off', async () => {
    const receiver = await OtlpReceiver.start();
    const off = await createTestApp({ env: { OTEL_SERVICE_NAME: 'x' } });
    const disabled = await createTestApp({ env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`, OTEL_SDK_DISABLED: 'true' } });
    try {
      expect(off.app.services.tracing.enabled).toBe(false);
      expect(disabled.app.services.tracing.enabled).toBe(false);
      const created = await disabled.request('POST', '/v1/inbound-endpoints', { body: { name: 'off', mode: 'cli' } });
      const res = await disabled.app.inject({ method: 'POST', url: `/in/${created.body.data.secret_token}`, payload: 'x' });
      expect(res.statusCode).toBe(200);
      const [row] = await disabled.db.sql<{ trace_context: string | null }>`SELECT trace_context FROM inbound_messages WHERE id = ${JSON.parse(res.body).data.message_id}`;
      expect(row!.trace_context).toBeNull();
    } finally {
      await off.close();
      await disabled.close();
    }
    expect(receiver.requests).toHaveLength(0);
    await receiver.close();
  });
});
