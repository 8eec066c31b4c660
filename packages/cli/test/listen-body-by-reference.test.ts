import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { bodyOpener, bodyRequestUrl } from '../src/listen/body-fetch.js';
import { Forwarder, MAX_BODY_MISMATCHES, type ForwardableMessage, type HoldInfo } from '../src/listen/forwarder.js';
import { parseRoute } from '../src/listen/routes.js';

/**
 * A message whose body the server sends by reference (`body_url`): the forwarder downloads it with
 * the API key at each attempt and streams it to the app as it arrives, checked against its SHA-256;
 * a download that breaks off or does not match is a failed attempt, retried; one the server no
 * longer has (404) is reported as a message without a body.
 */

const SIZE = 1024 * 1024 + 17;
const BODY = Buffer.from(Array.from({ length: SIZE }, (_, i) => (i * 31 + (i >> 9)) & 0xff));
const SHA = createHash('sha256').update(BODY).digest('hex');
const ID = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
const BODY_URL = `/v1/inbound-messages/${ID}/body`;
const API_KEY = 'hr_test_key';

let servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.map(
      (s) =>
        new Promise<void>((resolve) => {
          s.closeAllConnections();
          s.close(() => resolve());
        }),
    ),
  );
  servers = [];
});

async function listen(server: Server, port = 0): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** The local app: the requests that arrived whole, and how many were cut before their end. */
async function app(): Promise<{ port: number; whole: Buffer[]; cut: () => number }> {
  const whole: Buffer[] = [];
  let cut = 0;
  const port = await listen(
    createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('aborted', () => (cut += 1));
      req.on('end', () => {
        whole.push(Buffer.concat(chunks));
        res.writeHead(200).end('ok');
      });
    }),
  );
  return { port, whole, cut: () => cut };
}

type Answer = 'ok' | 'corrupt' | 'cut' | 'proxy502' | 404 | 403 | 503;

/** The server's body route: each download answered as the next of `answers` (then 'ok'). */
async function apiServer(answers: Answer[]): Promise<{ url: string; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  const port = await listen(
    createServer((req: IncomingMessage, res: ServerResponse) => {
      requests.push(req);
      const answer = answers.shift() ?? 'ok';
      if (req.url !== `/api${BODY_URL}`) {
        res.writeHead(500).end();
        return;
      }
      if (answer === 'proxy502') {
        res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad gateway</html>');
        return;
      }
      if (typeof answer === 'number') {
        res.writeHead(answer, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'X', message: `answer ${answer}` } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(SIZE), 'x-payload-sha256': SHA });
      const bytes = answer === 'corrupt' ? Buffer.concat([BODY.subarray(0, SIZE - 1), Buffer.from([BODY[SIZE - 1]! ^ 1])]) : BODY;
      // In pieces, as a store streams it.
      let at = 0;
      const step = (): void => {
        if (answer === 'cut' && at >= SIZE / 2) {
          res.socket?.destroy();
          return;
        }
        if (at >= SIZE) {
          res.end();
          return;
        }
        const next = bytes.subarray(at, at + 64 * 1024);
        at += next.length;
        if (res.write(next)) setImmediate(step);
        else res.once('drain', step);
      };
      step();
    }),
  );
  return { url: `http://127.0.0.1:${port}/api`, requests };
}

function message(extra: Partial<ForwardableMessage> = {}): ForwardableMessage {
  return {
    message_id: ID,
    method: 'POST',
    path: '/hook',
    query: '',
    raw_headers: [
      ['Content-Type', 'application/octet-stream'],
      ['Content-Length', String(SIZE)],
    ],
    payload_sha256: SHA,
    size_bytes: SIZE,
    body_url: BODY_URL,
    ...extra,
  };
}

function forwarder(appPort: number, apiUrl: string, holds: HoldInfo[] = []): Forwarder {
  return new Forwarder({
    routes: [parseRoute(String(appPort))],
    preserveHost: false,
    timeoutMs: 10_000,
    retryInitialMs: 10,
    retryMaxMs: 20,
    openBody: bodyOpener({ apiUrl, apiKey: API_KEY, userAgent: 'hookrelay-test' }),
    onHold: (info) => holds.push(info),
  });
}

const never = new AbortController().signal;

describe('Forwarder: a body sent by reference', () => {
  it('is downloaded with the API key and reaches the app byte for byte, with its Content-Length', async () => {
    const target = await app();
    const api = await apiServer(['ok']);
    const f = forwarder(target.port, api.url);
    const outcome = await f.deliver(message(), never);
    await f.close();
    expect(outcome).toMatchObject({ status: 200, error: null, attempt: 1 });
    expect(target.whole).toHaveLength(1);
    expect(target.whole[0]!.equals(BODY)).toBe(true);
    expect(api.requests).toHaveLength(1);
    expect(api.requests[0]!.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it('a download that does not match payload_sha256 is cut before the app has it whole, and fetched again', async () => {
    const target = await app();
    const api = await apiServer(['corrupt', 'ok']);
    const holds: HoldInfo[] = [];
    const f = forwarder(target.port, api.url, holds);
    const outcome = await f.deliver(message(), never);
    await f.close();
    expect(outcome).toMatchObject({ status: 200, error: null, attempt: 2 });
    expect(api.requests).toHaveLength(2);
    // The corrupt copy never arrived whole: the app saw one request, the right one.
    expect(target.whole).toHaveLength(1);
    expect(target.whole[0]!.equals(BODY)).toBe(true);
    expect(holds).toHaveLength(1);
    expect(holds[0]).toMatchObject({ cause: 'body', attempt: 1 });
    expect(holds[0]!.error).toMatch(/payload_sha256 mismatch/u);
  });

  it(`is reported failed after ${MAX_BODY_MISMATCHES} downloads that do not match, none of them forwarded whole`, async () => {
    const target = await app();
    const api = await apiServer(Array.from({ length: MAX_BODY_MISMATCHES + 1 }, () => 'corrupt' as const));
    const f = forwarder(target.port, api.url);
    const outcome = await f.deliver(message(), never);
    await f.close();
    expect(outcome).toMatchObject({ status: null, attempt: MAX_BODY_MISMATCHES });
    expect(outcome!.error).toMatch(/^payload_sha256 mismatch \(expected [0-9a-f]{64}, got [0-9a-f]{64}\): not forwarded$/u);
    expect(api.requests).toHaveLength(MAX_BODY_MISMATCHES);
    expect(target.whole).toHaveLength(0);
  });

  it('a download that breaks off is a failed attempt: the body is fetched again and forwarded whole', async () => {
    const target = await app();
    const api = await apiServer(['cut', 503, 'ok']);
    const holds: HoldInfo[] = [];
    const f = forwarder(target.port, api.url, holds);
    const outcome = await f.deliver(message(), never);
    await f.close();
    expect(outcome).toMatchObject({ status: 200, error: null, attempt: 3 });
    expect(target.whole).toHaveLength(1);
    expect(target.whole[0]!.equals(BODY)).toBe(true);
    expect(holds.map((h) => h.cause)).toEqual(['body', 'body']);
    expect(holds[1]!.error).toBe('the server answered the body\'s download with HTTP 503: answer 503');
  });

  it(`the API's own error answers (its payload store unreadable: 503) are retried, then reported after ${MAX_BODY_MISMATCHES}`, async () => {
    const target = await app();
    const api = await apiServer([503, 503, 503, 'ok']);
    const f = forwarder(target.port, api.url);
    const outcome = await f.deliver(message(), never);
    await f.close();
    expect(outcome).toMatchObject({ status: null, attempt: MAX_BODY_MISMATCHES, error: "the server answered the body's download with HTTP 503: answer 503" });
    expect(api.requests).toHaveLength(MAX_BODY_MISMATCHES);
    expect(target.whole).toHaveLength(0);
  });

  it("a proxy's error page (not the API's answer) is retried like an unreachable server, without a bound", async () => {
    const target = await app();
    const api = await apiServer(['proxy502', 'proxy502', 'proxy502', 'proxy502', 'ok']);
    const f = forwarder(target.port, api.url);
    const outcome = await f.deliver(message(), never);
    await f.close();
    expect(outcome).toMatchObject({ status: 200, error: null, attempt: 5 });
    expect(target.whole).toHaveLength(1);
    expect(target.whole[0]!.equals(BODY)).toBe(true);
  });

  it('a body the server no longer has (404) is reported as a message without a body: nothing reaches the app', async () => {
    const target = await app();
    const api = await apiServer([404]);
    const f = forwarder(target.port, api.url);
    const outcome = await f.deliver(message(), never);
    await f.close();
    expect(outcome).toMatchObject({ status: null, error: 'the payload is no longer stored (deleted); nothing was forwarded', attempt: 0 });
    expect(target.whole).toHaveLength(0);
    expect(target.cut()).toBe(0);
  });

  it('a refused download (403) is final, not retried, and nothing reaches the app', async () => {
    const target = await app();
    const api = await apiServer([403]);
    const f = forwarder(target.port, api.url);
    const outcome = await f.deliver(message(), never);
    await f.close();
    expect(outcome).toMatchObject({ status: null, attempt: 0, error: "the server answered the body's download with HTTP 403: answer 403; nothing was forwarded" });
    expect(api.requests).toHaveLength(1);
    expect(target.whole).toHaveLength(0);
  });

  it('while the app is down, each attempt downloads the body again; once it is back the message goes whole', async () => {
    const api = await apiServer([]);
    const probe = await app();
    const port = probe.port;
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    const holds: HoldInfo[] = [];
    const f = forwarder(port, api.url, holds);
    const pending = f.deliver(message(), never);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const back = await listen(
      createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => res.writeHead(Buffer.concat(chunks).equals(BODY) ? 204 : 400).end());
      }),
      port,
    );
    expect(back).toBe(port);
    const outcome = await pending;
    await f.close();
    expect(outcome).toMatchObject({ status: 204, error: null });
    expect(holds.length).toBeGreaterThan(0);
    expect(holds.every((h) => h.cause === 'app')).toBe(true);
    expect(api.requests.length).toBe(outcome!.attempt);
  });
});

describe('bodyRequestUrl', () => {
  it('puts the path under the API base URL, its path prefix kept', () => {
    expect(bodyRequestUrl('https://api.example.com', BODY_URL)?.href).toBe(`https://api.example.com${BODY_URL}`);
    expect(bodyRequestUrl('https://example.com/hookrelay/', BODY_URL)?.href).toBe(`https://example.com/hookrelay${BODY_URL}`);
  });

  it('refuses anything that would take the API key elsewhere', () => {
    for (const hostile of ['https://evil.example/x', '//evil.example/x', 'v1/x', '/../../x']) {
      expect(bodyRequestUrl('https://example.com/hookrelay', hostile), hostile).toBeNull();
    }
  });
});
