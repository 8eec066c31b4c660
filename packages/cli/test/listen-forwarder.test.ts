import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { errorCode } from '../src/listen/error-text.js';
import {
  capturedHeaders,
  Forwarder,
  isRetryable,
  MAX_CAPTURED_HEADERS,
  type ForwardableMessage,
  type HoldInfo,
} from '../src/listen/forwarder.js';
import { parseRoute } from '../src/listen/routes.js';

/** The forwarder against a real local HTTP server: exact requests, holding while it is down. */

interface Received {
  method: string;
  url: string;
  rawHeaders: string[];
  body: Buffer;
}

let servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  servers = [];
});

async function app(status = 200, port = 0, delayMs = 0): Promise<{ port: number; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', rawHeaders: req.rawHeaders, body: Buffer.concat(chunks) });
      setTimeout(() => res.writeHead(status).end('answer'), delayMs);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, received, server };
}

function message(body: Buffer, extra: Partial<ForwardableMessage> = {}): ForwardableMessage {
  return {
    message_id: '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    method: 'PUT',
    path: '/github/push',
    query: 'a=1&a=2',
    raw_headers: [
      ['Host', 'hooks.example.com'],
      ['Content-Type', 'application/octet-stream'],
      ['X-Dup', 'one'],
      ['X-Dup', 'two'],
      ['Connection', 'close'],
      ['Content-Length', String(body.length)],
    ],
    payload_sha256: createHash('sha256').update(body).digest('hex'),
    size_bytes: body.length,
    body: body.toString('base64'),
    body_encoding: 'base64',
    ...extra,
  };
}

const never = new AbortController().signal;
const BINARY = Buffer.from([0, 1, 2, 0xfe, 0xff, 0x0d, 0x0a, 0x80]);

describe('Forwarder', () => {
  it('sends the method, sub-path, query, header lines and exact bytes', async () => {
    const { port, received } = await app(201);
    const forwarder = new Forwarder({ routes: [parseRoute(`http://127.0.0.1:${port}/webhooks`)], preserveHost: false, timeoutMs: 5000 });
    const outcome = await forwarder.deliver(message(BINARY), never);
    await forwarder.close();
    expect(outcome).toMatchObject({ status: 201, error: null, attempt: 1 });
    expect(received).toHaveLength(1);
    const [request] = received;
    expect(request!.method).toBe('PUT');
    expect(request!.url).toBe('/webhooks/github/push?a=1&a=2');
    expect(request!.body.equals(BINARY)).toBe(true);
    const pairs = [];
    for (let i = 0; i < request!.rawHeaders.length; i += 2) pairs.push([request!.rawHeaders[i], request!.rawHeaders[i + 1]]);
    expect(pairs).toContainEqual(['host', `127.0.0.1:${port}`]);
    expect(pairs.filter(([name]) => name === 'X-Dup')).toEqual([
      ['X-Dup', 'one'],
      ['X-Dup', 'two'],
    ]);
    expect(pairs).toContainEqual(['content-length', String(BINARY.length)]);
  });

  it('keeps the Host with preserveHost', async () => {
    const { port, received } = await app();
    const forwarder = new Forwarder({ routes: [parseRoute(String(port))], preserveHost: true, timeoutMs: 5000 });
    await forwarder.deliver(message(BINARY), never);
    await forwarder.close();
    expect(received[0]!.rawHeaders).toContain('hooks.example.com');
  });

  it('does not forward a body whose SHA-256 does not match', async () => {
    const { port, received } = await app();
    const forwarder = new Forwarder({ routes: [parseRoute(String(port))], preserveHost: false, timeoutMs: 5000 });
    const outcome = await forwarder.deliver(message(BINARY, { payload_sha256: 'f'.repeat(64) }), never);
    await forwarder.close();
    expect(outcome).toMatchObject({ status: null, attempt: 0 });
    expect(outcome?.error).toMatch(/payload_sha256 mismatch/u);
    expect(received).toHaveLength(0);
  });

  it('fetches the body again when it came as JSON or was unavailable', async () => {
    const { port, received } = await app();
    const exact = Buffer.from('{"b": 1,\n "a": 2}');
    const forwarder = new Forwarder({
      routes: [parseRoute(String(port))],
      preserveHost: false,
      timeoutMs: 5000,
      refetch: async () => message(exact),
    });
    await forwarder.deliver(message(exact, { body: { b: 1, a: 2 }, body_encoding: undefined }), never);
    await forwarder.close();
    expect(received[0]!.body.equals(exact)).toBe(true);
  });

  it('an HTTP error answer is final: reported, not retried', async () => {
    const { port, received } = await app(503);
    const forwarder = new Forwarder({ routes: [parseRoute(String(port))], preserveHost: false, timeoutMs: 5000 });
    expect(await forwarder.deliver(message(BINARY), never)).toMatchObject({ status: 503, error: null, attempt: 1 });
    await forwarder.close();
    expect(received).toHaveLength(1);
  });

  it('holds the message while the app is down and delivers it once the app is back on its port', async () => {
    const probe = await app();
    const port = probe.port;
    await new Promise<void>((resolve) => probe.server.close(() => resolve()));
    servers = [];
    const holds: HoldInfo[] = [];
    const forwarder = new Forwarder({
      routes: [parseRoute(`http://127.0.0.1:${port}`)],
      preserveHost: false,
      timeoutMs: 5000,
      retryInitialMs: 20,
      retryMaxMs: 80,
      onHold: (info) => holds.push(info),
    });
    const pending = forwarder.deliver(message(BINARY), never);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const back = await app(200, port);
    const outcome = await pending;
    await forwarder.close();
    expect(outcome?.status).toBe(200);
    expect(outcome!.attempt).toBeGreaterThan(2);
    expect(back.received).toHaveLength(1);
    expect(holds[0]!.error).toMatch(/ECONNREFUSED/u);
    // Backoff doubles up to its ceiling.
    expect(holds.slice(0, 4).map((h) => h.nextRetryMs)).toEqual([20, 40, 80, 80]);
  });

  it('gives up after --max-wait and reports the error', async () => {
    const probe = await app();
    await new Promise<void>((resolve) => probe.server.close(() => resolve()));
    servers = [];
    const forwarder = new Forwarder({
      routes: [parseRoute(`http://127.0.0.1:${probe.port}`)],
      preserveHost: false,
      timeoutMs: 5000,
      maxWaitMs: 200,
      retryInitialMs: 20,
    });
    const started = Date.now();
    const outcome = await forwarder.deliver(message(BINARY), never);
    await forwarder.close();
    expect(outcome?.status).toBeNull();
    expect(outcome?.error).toMatch(/ECONNREFUSED.*gave up after/u);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('returns null when stopped while holding', async () => {
    const probe = await app();
    await new Promise<void>((resolve) => probe.server.close(() => resolve()));
    servers = [];
    const forwarder = new Forwarder({ routes: [parseRoute(`http://127.0.0.1:${probe.port}`)], preserveHost: false, timeoutMs: 5000, retryInitialMs: 50 });
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 100);
    expect(await forwarder.deliver(message(BINARY), stop.signal)).toBeNull();
    await forwarder.close();
  });

  it('an app slower than --timeout is an error, not retried', async () => {
    const { port, received } = await app(200, 0, 500);
    const forwarder = new Forwarder({ routes: [parseRoute(String(port))], preserveHost: false, timeoutMs: 100 });
    const outcome = await forwarder.deliver(message(BINARY), never);
    await forwarder.close();
    expect(outcome).toMatchObject({ status: null, attempt: 1, error: 'no answer within 100ms (--timeout)' });
    expect(received).toHaveLength(1);
  });
});

describe('Forwarder routes', () => {
  it('sends each message to the first route that takes it, prefix removed', async () => {
    const a = await app(200);
    const b = await app(202);
    const forwarder = new Forwarder({
      routes: [parseRoute(`/github=127.0.0.1:${a.port}/gh`), parseRoute(`event:checkout.*=127.0.0.1:${b.port}`)],
      preserveHost: false,
      timeoutMs: 5000,
    });
    const one = await forwarder.deliver(message(BINARY, { path: '/github/push' }), never);
    const two = await forwarder.deliver(message(BINARY, { path: '/stripe', event_type: 'checkout.session.completed' }), never);
    const three = await forwarder.deliver(message(BINARY, { path: '/other', event_type: 'push' }), never);
    await forwarder.close();
    expect(one).toMatchObject({ status: 200, target: `http://127.0.0.1:${a.port}/gh` });
    expect(two).toMatchObject({ status: 202, target: `http://127.0.0.1:${b.port}` });
    expect(three).toMatchObject({ status: null, attempt: 0, target: null, error: 'no route takes this message (path /other, event push): skipped' });
    expect(a.received.map((r) => r.url)).toEqual(['/gh/push?a=1&a=2']);
    expect(b.received.map((r) => r.url)).toEqual(['/stripe?a=1&a=2']);
  });
});

describe("Forwarder: the app's answer", () => {
  async function answering(headers: [string, string][], body: Buffer): Promise<number> {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(418, headers.flat());
        res.end(body);
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  it('keeps the headers and the first --capture-response-bytes of the body', async () => {
    const port = await answering([['Content-Type', 'text/plain'], ['X-Trace', 'abc']], Buffer.from('0123456789'));
    const forwarder = new Forwarder({ routes: [parseRoute(String(port))], preserveHost: false, timeoutMs: 5000, captureResponseBytes: 4 });
    const outcome = await forwarder.deliver(message(BINARY), never);
    const again = await forwarder.deliver(message(BINARY), never);
    await forwarder.close();
    expect(outcome?.status).toBe(418);
    expect(outcome?.response?.headers).toEqual(expect.arrayContaining([['content-type', 'text/plain'], ['x-trace', 'abc']]));
    expect(outcome?.response?.body.toString()).toBe('0123');
    expect(outcome?.response?.truncated).toBe(true);
    // The connection was left usable: the next message is answered the same way.
    expect(again?.status).toBe(418);
  });

  it('a body within the limit is whole and not truncated; 0 captures nothing', async () => {
    const port = await answering([], BINARY);
    const whole = new Forwarder({ routes: [parseRoute(String(port))], preserveHost: false, timeoutMs: 5000, captureResponseBytes: 65_536 });
    const none = new Forwarder({ routes: [parseRoute(String(port))], preserveHost: false, timeoutMs: 5000, captureResponseBytes: 0 });
    const captured = await whole.deliver(message(BINARY), never);
    const uncaptured = await none.deliver(message(BINARY), never);
    await Promise.all([whole.close(), none.close()]);
    expect(captured?.response?.body.equals(BINARY)).toBe(true);
    expect(captured?.response?.truncated).toBe(false);
    expect(uncaptured).toMatchObject({ status: 418 });
    expect(uncaptured?.response).toBeUndefined();
  });

  it('capturedHeaders keeps at most 100 pairs and 16 KiB', () => {
    const many: Record<string, string> = {};
    for (let i = 0; i < 150; i++) many[`x-h${i}`] = 'v';
    expect(capturedHeaders(many)).toHaveLength(MAX_CAPTURED_HEADERS);
    expect(capturedHeaders({ a: 'x'.repeat(10_000), b: 'y'.repeat(10_000), c: 'z' })).toEqual([['a', 'x'.repeat(10_000)]]);
    expect(capturedHeaders({ 'set-cookie': ['a=1', 'b=2'] })).toEqual([['set-cookie', 'a=1'], ['set-cookie', 'b=2']]);
  });
});

describe('Forwarder: --timeout 0', () => {
  it('waits for an app slower than undici\'s own default limits would allow at 1 ms granularity', async () => {
    const { port, received } = await app(200, 0, 1_200);
    const forwarder = new Forwarder({ routes: [parseRoute(String(port))], preserveHost: false, timeoutMs: 0 });
    const outcome = await forwarder.deliver(message(BINARY), never);
    await forwarder.close();
    expect(outcome).toMatchObject({ status: 200, error: null, attempt: 1 });
    expect(received).toHaveLength(1);
  });
});

describe('Forwarder: an https:// app with a self-signed certificate', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-forwarder-tls-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
      '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
    { stdio: 'ignore', timeout: 10_000 },
  );
  const cert = readFileSync(join(dir, 'cert.pem'));

  async function httpsApp(): Promise<{ port: number; bodies: Buffer[] }> {
    const bodies: Buffer[] = [];
    const server = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        bodies.push(Buffer.concat(chunks));
        res.writeHead(200).end();
      });
    });
    servers.push(server as unknown as Server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { port: (server.address() as AddressInfo).port, bodies };
  }

  it('is refused without --ca-file (final, not held), accepted with it and with --insecure', async () => {
    const { port, bodies } = await httpsApp();
    const routes = [parseRoute(`https://127.0.0.1:${port}`)];
    const plain = new Forwarder({ routes, preserveHost: false, timeoutMs: 5000, maxWaitMs: 0 });
    const trusted = new Forwarder({ routes, preserveHost: false, timeoutMs: 5000, tls: { ca: cert, insecure: false } });
    const insecure = new Forwarder({ routes, preserveHost: false, timeoutMs: 5000, tls: { insecure: true } });
    const refused = await plain.deliver(message(BINARY), never);
    const one = await trusted.deliver(message(BINARY), never);
    const two = await insecure.deliver(message(BINARY), never);
    await Promise.all([plain.close(), trusted.close(), insecure.close()]);
    expect(refused).toMatchObject({ status: null, attempt: 1, error: expect.stringMatching(/self.signed/i) });
    expect(one).toMatchObject({ status: 200, error: null });
    expect(two).toMatchObject({ status: 200, error: null });
    expect(bodies.map((body) => body.equals(BINARY))).toEqual([true, true]);
  });
});

describe('error classification', () => {
  it('finds codes in AggregateErrors (IPv4 and IPv6 both refused)', () => {
    const aggregate = new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:3000'), { code: 'ECONNREFUSED' })], '');
    expect(errorCode(aggregate)).toBe('ECONNREFUSED');
    expect(isRetryable(aggregate)).toBe(true);
    expect(isRetryable(Object.assign(new Error('timeout'), { code: 'UND_ERR_HEADERS_TIMEOUT' }))).toBe(false);
  });
});
