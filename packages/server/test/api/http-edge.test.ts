import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { UUIDV7_PATTERN } from '@hookrelay/shared';
import { backend, createPostgresDatabaseUrl } from '../helpers/database.js';
import { SERVER_MAIN, startServerProcess, type ServerProcess } from '../helpers/process.js';

/**
 * The edge of the HTTP server, against the real process: what the HTTP parser refuses and what
 * arrives too slowly is answered in the API's envelope; client-caused trouble never logs at error
 * level (the process helper fails the file on any level-50 line at stop); and a stdout nobody reads
 * costs log lines, never the server.
 */

const apiKey = `hr_${randomBytes(20).toString('hex')}`;
const HEADERS_TIMEOUT_S = 1;
const REQUEST_TIMEOUT_S = 2;
const dirs: string[] = [];
let server: ServerProcess;
let port: number;
let endpointId: string;
let ingestToken: string;

async function serverEnv(): Promise<Record<string, string>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-http-edge-'));
  dirs.push(dir);
  const env: Record<string, string> = { HOOKRELAY_DATA_DIR: dir, HOOKRELAY_BOOTSTRAP_API_KEY: apiKey, HOOKRELAY_ENCRYPTION_KEY: '44'.repeat(32) };
  if (backend() === 'postgres') env.DATABASE_URL = await createPostgresDatabaseUrl();
  return env;
}

beforeAll(async () => {
  server = await startServerProcess(
    {
      ...(await serverEnv()),
      HOOKRELAY_LOG_LEVEL: 'info',
      HOOKRELAY_HEADERS_TIMEOUT_SECONDS: String(HEADERS_TIMEOUT_S),
      HOOKRELAY_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S),
    },
    90_000,
  );
  port = Number(new URL(server.url).port);
  const created = await fetch(`${server.url}/v1/inbound-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'edge', mode: 'cli' }),
  });
  expect(created.status).toBe(201);
  const body = (await created.json()) as { data: { id: string; secret_token: string } };
  endpointId = body.data.id;
  ingestToken = body.data.secret_token;
}, 120_000);

afterAll(async () => {
  await server?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Splits what a connection received into its HTTP responses (each with a Content-Length). */
function parseResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) break;
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    responses.push({ status: Number(statusLine!.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return responses;
}

/**
 * Opens a connection, runs `talk` on it, and collects what the server sends until it closes the
 * connection (bounded). Resolves with the responses and how long the connection lasted.
 */
function exchange(talk: (socket: net.Socket) => void, boundMs = 15_000): Promise<{ responses: RawResponse[]; raw: string; elapsedMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${boundMs} ms; received: ${Buffer.concat(chunks).toString('latin1')}`));
    }, boundMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    // A reset after the answer (the server closing with bytes unread) still ends the exchange.
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks).toString('latin1');
      resolve({ responses: parseResponses(raw), raw, elapsedMs: Date.now() - started });
    });
    socket.on('connect', () => talk(socket));
  });
}

function expectEnvelope(response: RawResponse | undefined, status: number, code: string, messageIncludes: string): void {
  expect(response, 'a response').toBeDefined();
  expect(response!.status, response!.body).toBe(status);
  expect(response!.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(response!.headers['x-content-type-options']).toBe('nosniff');
  const body = JSON.parse(response!.body) as { error: { code: string; message: string }; meta: { request_id: string } };
  expect(body.error.code).toBe(code);
  expect(body.error.message).toContain(messageIncludes);
  expect(body.meta.request_id).toMatch(UUIDV7_PATTERN);
  expect(response!.headers['x-request-id']).toBe(body.meta.request_id);
}

describe('requests the HTTP parser refuses are answered in the envelope', () => {
  it('a header section over the limit → 431 HEADERS_TOO_LARGE, connection closed', async () => {
    const { responses } = await exchange((socket) => socket.write(`GET /v1/whoami HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
    expect(responses).toHaveLength(1);
    expectEnvelope(responses[0], 431, 'HEADERS_TOO_LARGE', 'header section is larger than the limit');
    expect(responses[0]!.headers.connection).toBe('close');
  });

  it('a NUL in a header value → 400 INVALID_REQUEST', async () => {
    const { responses } = await exchange((socket) => socket.write(`GET /v1/whoami HTTP/1.1\r\nHost: x\r\nX-Nul: a\0b\r\n\r\n`));
    expect(responses).toHaveLength(1);
    expectEnvelope(responses[0], 400, 'INVALID_REQUEST', 'not valid HTTP/1.1');
  });

  it('a body longer than its Content-Length: the request is answered, the bytes after it → 400 INVALID_REQUEST', async () => {
    const { responses } = await exchange((socket) =>
      socket.write(`POST /in/${ingestToken} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}{"left":"over"}`),
    );
    expect(responses.map((r) => r.status)).toEqual([200, 400]);
    expectEnvelope(responses[1], 400, 'INVALID_REQUEST', 'not valid HTTP/1.1');
  });
});

describe('nosniff', () => {
  it.each([
    ['GET', '/v1/whoami', 200],
    ['GET', '/v1/endpoints/%ZZ', 400],
    ['GET', '/v1/nowhere', 404],
    ['POST', '/in/00000000000000000000000000000000', 404],
    ['GET', '/healthz', 200],
  ])('%s %s (%i) says X-Content-Type-Options: nosniff', async (method, url, status) => {
    const res = await fetch(`${server.url}${url}`, { method, headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(10_000) });
    expect(res.status).toBe(status);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    await res.arrayBuffer();
  });
});

describe('timeouts', () => {
  it('a body that trickles is cut by the request timeout: 408 REQUEST_TIMEOUT in the envelope', async () => {
    let trickle: NodeJS.Timeout | undefined;
    const { responses, elapsedMs } = await exchange((socket) => {
      socket.write(`POST /in/${ingestToken} HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n`);
      trickle = setInterval(() => socket.writable && socket.write('x'), 100);
    });
    clearInterval(trickle);
    expect(responses).toHaveLength(1);
    expectEnvelope(responses[0], 408, 'REQUEST_TIMEOUT', `the whole request within ${REQUEST_TIMEOUT_S} s`);
    // Cut at the timeout, give or take Node's 0.5 s check interval and a loaded machine.
    expect(elapsedMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_S * 1000 - 100);
    expect(elapsedMs).toBeLessThan(REQUEST_TIMEOUT_S * 1000 + 5_000);
  });

  it('headers that trickle are cut by the headers timeout: 408 REQUEST_TIMEOUT', async () => {
    let trickle: NodeJS.Timeout | undefined;
    const { responses, elapsedMs } = await exchange((socket) => {
      socket.write('GET /v1/whoami HTTP/1.1\r\nHost: x\r\n');
      trickle = setInterval(() => socket.writable && socket.write('X-A: b\r\n'), 100);
    });
    clearInterval(trickle);
    expect(responses).toHaveLength(1);
    expectEnvelope(responses[0], 408, 'REQUEST_TIMEOUT', `its headers within ${HEADERS_TIMEOUT_S} s`);
    expect(elapsedMs).toBeLessThan(HEADERS_TIMEOUT_S * 1000 + 5_000);
  });

  it('neither timeout ends a kept-alive connection between requests, nor an open WebSocket', async () => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/v1/inbound-endpoints/${endpointId}/stream`, { headers: { authorization: `Bearer ${apiKey}` } });
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      socket.once('message', () => resolve());
      socket.once('error', reject);
    });
    const { responses } = await exchange((connection) => {
      connection.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      setTimeout(() => connection.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), (REQUEST_TIMEOUT_S + 1.5) * 1000);
    });
    expect(responses.map((r) => r.status)).toEqual([200, 200]);
    expect(socket.readyState).toBe(WebSocket.OPEN);
    socket.close(1000);
    expect(await closed).toBe(1000);
  });
});

describe('a WebSocket frame over the limit', () => {
  it('closes the socket with 1009 and logs a warning without a stack, not an error', async () => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/v1/inbound-endpoints/${endpointId}/stream`, { headers: { authorization: `Bearer ${apiKey}` } });
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('message', () => resolve()));
    socket.send('x'.repeat(300 * 1024));
    expect(await closed).toBe(1009);
    const deadline = Date.now() + 5_000;
    const warning = (): string | undefined => server.stdout().split('\n').find((line) => line.includes('WS_ERR_UNSUPPORTED_MESSAGE_LENGTH'));
    while (warning() === undefined && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const line = JSON.parse(warning() ?? '{}') as { level?: string; err?: { stack?: string } };
    expect(line.level).toBe('warn');
    expect(line.err?.stack ?? '').toBe('');
    expect(server.errorLines()).toEqual([]);
  });
});

describe('a stdout nobody reads', () => {
  it('costs log lines, counted in /metrics, never requests or the shutdown', async () => {
    const child = spawn(process.execPath, [SERVER_MAIN, 'start'], {
      env: { PATH: process.env.PATH ?? '', HOOKRELAY_PORT: '0', HOOKRELAY_LOG_LEVEL: 'info', ...(await serverEnv()) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      // Read up to the listening line, then never again: the pipe fills and stays full.
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`no listening line in 60 s: ${out}`)), 60_000);
        const onData = (chunk: Buffer): void => {
          out += chunk.toString();
          const match = /hookrelay-server listening on (http:\/\/\S+)/.exec(out);
          if (match) {
            clearTimeout(timer);
            child.stdout!.off('data', onData);
            child.stdout!.pause();
            resolve(match[1]!);
          }
        };
        child.stdout!.on('data', onData);
      });
      // Each request logs its 8 KiB URL twice or more: 800 of them are several times the log buffer.
      const long = `/nowhere/${'z'.repeat(8 * 1024)}`;
      for (let round = 0; round < 40; round++) {
        const statuses = await Promise.all(
          Array.from({ length: 20 }, () => fetch(`${url}${long}`, { signal: AbortSignal.timeout(10_000) }).then(async (res) => (await res.arrayBuffer(), res.status))),
        );
        expect(statuses.every((status) => status === 404)).toBe(true);
      }
      const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(10_000) });
      expect(health.status).toBe(200);
      const metrics = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
      const dropped = /^hookrelay_log_lines_dropped_total (\d+)$/m.exec(metrics);
      expect(dropped, 'hookrelay_log_lines_dropped_total in /metrics').not.toBeNull();
      expect(Number(dropped![1])).toBeGreaterThan(0);

      const stopped = Date.now();
      child.kill('SIGTERM');
      const code = await Promise.race([exited, new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 15_000))]);
      expect(code).toBe(0);
      expect(Date.now() - stopped).toBeLessThan(15_000);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
  }, 120_000);
});
