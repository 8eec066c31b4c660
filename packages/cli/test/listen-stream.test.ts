import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { StreamServerFrame } from '@hookrelay/shared';
import { KEY_REVOKED_CLOSE } from '@hookrelay/shared/sockets';
import type { StreamHandlers } from '../src/listen/ports.js';
import { openStream, readServerFrame, streamUrl, type StreamOptions } from '../src/listen/stream.js';

/** The WebSocket client against a small local server: upgrade answers, frames, heartbeat. */

const ENDPOINT = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
const CURSOR = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71';
let server: Server | undefined;
let wss: WebSocketServer | undefined;

afterEach(async () => {
  wss?.clients.forEach((client) => client.terminate());
  wss?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  wss = undefined;
});

async function listen(
  onUpgrade: (socket: WebSocket, url: string, headers: Record<string, string | string[] | undefined>) => void,
  refuse?: { status: number; body: string; retryAfter?: string },
): Promise<string> {
  server = createServer((_req, res) => res.writeHead(404).end());
  wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    if (refuse !== undefined) {
      const retryAfter = refuse.retryAfter === undefined ? '' : `retry-after: ${refuse.retryAfter}\r\n`;
      socket.end(`HTTP/1.1 ${refuse.status} Refused\r\ncontent-type: application/json\r\n${retryAfter}content-length: ${Buffer.byteLength(refuse.body)}\r\nconnection: close\r\n\r\n${refuse.body}`);
      return;
    }
    wss!.handleUpgrade(request, socket, head, (ws) => onUpgrade(ws, request.url ?? '', request.headers));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

function options(apiUrl: string, extra: Partial<StreamOptions> = {}): StreamOptions {
  return {
    apiUrl,
    apiKey: 'hr_test',
    endpointId: ENDPOINT,
    after: null,
    userAgent: 'test',
    handshakeTimeoutMs: 2000,
    heartbeatTimeoutMs: 5000,
    heartbeatWarnMs: 4000,
    ...extra,
  };
}

function recorder() {
  const seen: string[] = [];
  const handlers: StreamHandlers = {
    ready: (cursor, _acks, latest) => seen.push(`ready ${cursor}${latest === undefined ? '' : ` latest ${latest}`}`),
    message: (message, replay) => seen.push(`message ${message.message_id}${replay ? ' replay' : ''}`),
    silent: () => seen.push('silent'),
  };
  return { seen, handlers };
}

const message = (id: string) => ({
  message_id: id,
  content_type: 'text/plain',
  headers: {},
  raw_headers: [],
  size_bytes: 0,
  payload_sha256: 'x',
  received_at: new Date().toISOString(),
  method: 'POST',
  path: '/',
  query: '',
  body: '',
  body_encoding: 'base64',
});

describe('streamUrl', () => {
  it('swaps the scheme, keeps a path prefix, puts the cursor in the query and never the key', () => {
    expect(streamUrl('http://127.0.0.1:8787', ENDPOINT, null)).toBe(`ws://127.0.0.1:8787/v1/inbound-endpoints/${ENDPOINT}/stream`);
    expect(streamUrl('https://hooks.example.com/relay/', ENDPOINT, 'abc')).toBe(`wss://hooks.example.com/relay/v1/inbound-endpoints/${ENDPOINT}/stream?after=abc`);
    expect(streamUrl('http://h', ENDPOINT, 'abc', { events: 'push,checkout.*', path: '/github/*' })).toBe(
      `ws://h/v1/inbound-endpoints/${ENDPOINT}/stream?after=abc&events=push%2Ccheckout.*&path=%2Fgithub%2F*`,
    );
  });
});

describe('openStream', () => {
  it('sends the key in the Authorization header, reads ready and message frames, sends results', async () => {
    const results: string[] = [];
    let headers: Record<string, string | string[] | undefined> = {};
    let url = '';
    const apiUrl = await listen((socket, requestUrl, requestHeaders) => {
      url = requestUrl;
      headers = requestHeaders;
      socket.on('message', (data) => results.push(data.toString()));
      socket.send(JSON.stringify({ type: 'ready', cursor: CURSOR.toUpperCase(), latest_message_id: CURSOR.toUpperCase() }));
      socket.send(JSON.stringify({ type: 'message', message: message('m1') }));
      socket.send(JSON.stringify({ type: 'message', message: message('m2'), replay: true }));
      socket.send('not json');
      socket.send(JSON.stringify({ type: 'message', message: { nope: true } }));
    });
    const { seen, handlers } = recorder();
    const connection = openStream(options(apiUrl, { after: 'c0' }), handlers);
    await expect.poll(() => seen.length).toBe(3);
    // The endpoint's newest message, as the server names it, in lower case like the cursor.
    expect(seen).toEqual([`ready ${CURSOR} latest ${CURSOR}`, 'message m1', 'message m2 replay']);
    expect(headers.authorization).toBe('Bearer hr_test');
    // Acknowledgements asked for in batches; a server that predates them ignores the header.
    expect(headers['hookrelay-result-acks']).toBe('batch');
    expect(url).toBe(`/v1/inbound-endpoints/${ENDPOINT}/stream?after=c0`);
    expect(connection.sendResult({ type: 'result', message_id: 'm1', status: 200, latency_ms: 3, error: null })).toBe(true);
    await expect.poll(() => results.length).toBe(1);
    expect(JSON.parse(results[0]!)).toEqual({ type: 'result', message_id: 'm1', status: 200, latency_ms: 3, error: null });
    connection.close();
    expect(await connection.ended).toMatchObject({ kind: 'closed', cause: 'client' });
    expect(connection.sendResult({ type: 'result', message_id: 'm2', status: 200, latency_ms: 3, error: null })).toBe(false);
  });

  it('result acknowledgements: the ready frame says whether the server gives them; ids go only to a server that does; acks are checked', async () => {
    const RESULT = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f99';
    const RESULT2 = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f98';
    const frames = (acks: boolean) => {
      const received: unknown[] = [];
      return {
        received,
        onUpgrade: (socket: WebSocket) => {
          socket.on('message', (data) => received.push(JSON.parse(data.toString())));
          socket.send(JSON.stringify(acks ? { type: 'ready', cursor: null, result_acks: true } : { type: 'ready', cursor: null }));
          if (!acks) return;
          socket.send(JSON.stringify({ type: 'result_ack', result_id: 'not-a-uuid', outcome: 'recorded' }));
          socket.send(JSON.stringify({ type: 'result_ack', result_id: RESULT, outcome: 'lost' }));
          socket.send(JSON.stringify({ type: 'result_ack', result_id: RESULT.toUpperCase(), outcome: 'refused', message: 'status: must be at most 599' }));
          socket.send(JSON.stringify({ type: 'result_acks', acks: [{ result_id: RESULT2.toUpperCase(), outcome: 'recorded' }, { result_id: RESULT, outcome: 'duplicate' }] }));
          socket.send(JSON.stringify({ type: 'result_acks', acks: [{ result_id: RESULT2, outcome: 'recorded' }, { result_id: RESULT, outcome: 'lost' }] }));
        },
      };
    };
    const result = { type: 'result' as const, message_id: 'm1', status: 200, latency_ms: 3, error: null, result_id: RESULT };

    const acking = frames(true);
    const seen: string[] = [];
    const handlers: StreamHandlers = {
      ready: (cursor, resultAcks) => seen.push(`ready ${cursor} acks ${resultAcks}`),
      message: () => {},
      resultAck: (id, outcome, message) => seen.push(`ack ${id} ${outcome} ${message}`),
      silent: () => {},
    };
    const connection = openStream(options(await listen(acking.onUpgrade)), handlers);
    await expect.poll(() => seen.length).toBe(4);
    // The malformed acknowledgements are ignored (a batch with one bad entry whole): only the valid
    // ones (their ids lower-cased) reach the listener, a batch's in its order.
    expect(seen).toEqual(['ready null acks true', `ack ${RESULT} refused status: must be at most 599`, `ack ${RESULT2} recorded undefined`, `ack ${RESULT} duplicate undefined`]);
    expect(connection.sendResult(result)).toBe(true);
    await expect.poll(() => acking.received.length).toBe(1);
    expect(acking.received[0]).toEqual(result);
    connection.close();
    await connection.ended;
    wss?.clients.forEach((client) => client.terminate());
    wss?.close();
    await new Promise<void>((resolve) => server!.close(() => resolve()));

    // An older server: no result_acks in its ready frame, and it would refuse a frame with a field it does not know.
    const older = frames(false);
    const oldSeen: string[] = [];
    const old = openStream(options(await listen(older.onUpgrade)), { ...handlers, ready: (cursor, resultAcks) => oldSeen.push(`ready ${cursor} acks ${resultAcks}`) });
    await expect.poll(() => oldSeen.length).toBe(1);
    expect(oldSeen).toEqual(['ready null acks false']);
    expect(old.sendResult(result)).toBe(true);
    await expect.poll(() => older.received.length).toBe(1);
    expect(older.received[0]).toEqual({ type: 'result', message_id: 'm1', status: 200, latency_ms: 3, error: null });
    old.close();
    await old.ended;
  });

  it('control frames are read by the shared schema: a ready or cursor frame whose cursor is not an id never reaches the listener', async () => {
    const apiUrl = await listen((socket) => {
      socket.send(JSON.stringify({ type: 'ready', cursor: 'C1' }));
      socket.send(JSON.stringify({ type: 'ready' }));
      socket.send(JSON.stringify({ type: 'ready', cursor: null }));
      socket.send(JSON.stringify({ type: 'cursor', cursor: '../../etc' }));
      socket.send(JSON.stringify({ type: 'cursor', cursor: null }));
      socket.send(JSON.stringify({ type: 'cursor', cursor: CURSOR.toUpperCase() }));
      socket.send(JSON.stringify({ type: 'later', cursor: CURSOR }));
      socket.send(JSON.stringify({ type: 'message', message: message('m1') }));
    });
    const { seen, handlers } = recorder();
    const connection = openStream(options(apiUrl), { ...handlers, cursor: (cursor) => seen.push(`cursor ${cursor}`) });
    await expect.poll(() => seen.includes('message m1')).toBe(true);
    expect(seen).toEqual(['ready null', `cursor ${CURSOR}`, 'message m1']);
    connection.close();
    await connection.ended;
  });

  it('an upgrade refused in the API envelope with 401/404/400 is fatal, with the server message', async () => {
    const body = JSON.stringify({ error: { code: 'INVALID_REQUEST', message: 'inbound endpoint x is in forward mode' }, meta: { request_id: 'req-9' } });
    const apiUrl = await listen(() => {}, { status: 400, body });
    const end = await openStream(options(apiUrl), recorder().handlers).ended;
    expect(end.kind).toBe('fatal');
    if (end.kind === 'fatal') expect(end.error).toMatchObject({ code: 'INVALID_REQUEST', message: 'inbound endpoint x is in forward mode', status: 400, requestId: 'req-9' });
  });

  it('a 429 in the API envelope (too many open sockets) is "limited", with the message and Retry-After', async () => {
    const body = JSON.stringify({ error: { code: 'RATE_LIMITED', message: 'too many open WebSockets for this API key (limit 100 per server process)' }, meta: { request_id: 'req-4' } });
    const apiUrl = await listen(() => {}, { status: 429, body, retryAfter: '10' });
    const end = await openStream(options(apiUrl), recorder().handlers).ended;
    expect(end.kind).toBe('limited');
    if (end.kind === 'limited') {
      expect(end.error).toMatchObject({ code: 'RATE_LIMITED', status: 429, retryAfterSeconds: 10, message: 'too many open WebSockets for this API key (limit 100 per server process)' });
    }
  });

  it("an open stream closed with the revoked-key code is \"revoked\", not a drop to reconnect after", async () => {
    const apiUrl = await listen((socket) => {
      socket.send(JSON.stringify({ type: 'ready', cursor: null }));
      setTimeout(() => socket.close(KEY_REVOKED_CLOSE.code, KEY_REVOKED_CLOSE.reason), 20);
    });
    const { seen, handlers } = recorder();
    expect(await openStream(options(apiUrl), handlers).ended).toEqual({ kind: 'revoked', code: 4401, reason: 'api key revoked' });
    expect(seen).toEqual(['ready null']);
  });

  it('any other refusal (a proxy without WebSockets) is not fatal', async () => {
    const apiUrl = await listen(() => {}, { status: 502, body: '<html>bad gateway</html>' });
    expect(await openStream(options(apiUrl), recorder().handlers).ended).toMatchObject({ kind: 'refused', status: 502 });
  });

  it('no server at all is "unreachable"', async () => {
    const apiUrl = await listen(() => {});
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
    expect(await openStream(options(apiUrl), recorder().handlers).ended).toMatchObject({ kind: 'unreachable' });
  });

  it('pings keep a quiet connection alive', async () => {
    const apiUrl = await listen((socket) => {
      socket.send(JSON.stringify({ type: 'ready', cursor: null }));
      const timer = setInterval(() => socket.ping(), 50);
      socket.on('close', () => clearInterval(timer));
    });
    const { seen, handlers } = recorder();
    const connection = openStream(options(apiUrl, { heartbeatTimeoutMs: 300, heartbeatWarnMs: 200 }), handlers);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(seen).toEqual(['ready null']);
    connection.close();
    expect(await connection.ended).toMatchObject({ kind: 'closed', cause: 'client' });
  });

  it('a silent connection (no FIN, no ping) is warned about, then terminated', async () => {
    const apiUrl = await listen((socket) => {
      socket.send(JSON.stringify({ type: 'ready', cursor: null }));
      // The peer is gone without closing: no more pings, no pongs to ours.
      (socket as unknown as { _socket: { pause(): void } })._socket.pause();
    });
    const { seen, handlers } = recorder();
    const started = Date.now();
    const end = await openStream(options(apiUrl, { heartbeatTimeoutMs: 400, heartbeatWarnMs: 200 }), handlers).ended;
    expect(end).toMatchObject({ kind: 'closed', cause: 'heartbeat' });
    expect(seen).toEqual(['ready null', 'silent']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
  });
});

describe('readServerFrame', () => {
  it('takes an acknowledgement exactly when the shared schema does', () => {
    const ack = { type: 'result_ack', result_id: CURSOR, outcome: 'recorded' };
    const frames: unknown[] = [
      ack,
      { ...ack, outcome: 'refused', message: 'not a valid result' },
      { ...ack, result_id: CURSOR.toUpperCase(), outcome: 'duplicate' },
      { ...ack, outcome: 'not_found' },
      { ...ack, outcome: 'lost' },
      { ...ack, outcome: undefined },
      { ...ack, result_id: 'r1' },
      { ...ack, result_id: 7 },
      { type: 'result_ack', outcome: 'recorded' },
      { ...ack, message: 42 },
      { ...ack, message: null },
      { ...ack, outcome: 'toString' },
    ];
    const taken = frames.map((frame) => readServerFrame(JSON.stringify(frame)) !== undefined);
    expect(taken).toEqual(frames.map((frame) => StreamServerFrame.safeParse(frame).success));
    expect(taken.filter(Boolean)).toHaveLength(4);
    expect(readServerFrame(JSON.stringify({ ...ack, outcome: 'refused', message: 'why' }))).toMatchObject({ result_id: CURSOR, outcome: 'refused', message: 'why' });
  });

  it('takes a batch of acknowledgements exactly when the shared schema does', () => {
    const ack = { result_id: CURSOR, outcome: 'recorded' };
    const frames: unknown[] = [
      { type: 'result_acks', acks: [ack] },
      { type: 'result_acks', acks: [ack, { ...ack, outcome: 'refused', message: 'why' }, { ...ack, result_id: CURSOR.toUpperCase(), outcome: 'duplicate' }] },
      { type: 'result_acks', acks: Array.from({ length: 1000 }, () => ack) },
      { type: 'result_acks', acks: Array.from({ length: 1001 }, () => ack) },
      { type: 'result_acks', acks: [] },
      { type: 'result_acks' },
      { type: 'result_acks', acks: ack },
      { type: 'result_acks', acks: [ack, { ...ack, outcome: 'lost' }] },
      { type: 'result_acks', acks: [ack, null] },
      { type: 'result_acks', acks: [{ ...ack, result_id: 'r1' }] },
      { type: 'result_acks', acks: [{ ...ack, message: 42 }] },
    ];
    const taken = frames.map((frame) => readServerFrame(JSON.stringify(frame)) !== undefined);
    expect(taken).toEqual(frames.map((frame) => StreamServerFrame.safeParse(frame).success));
    expect(taken.filter(Boolean)).toHaveLength(3);
  });
});
