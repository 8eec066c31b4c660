import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningSecret } from '@hookrelay/shared';
import { buildForwardRequest } from '../../src/delivery/request.js';
import { sendRequest, type StreamedBody } from '../../src/delivery/sender.js';

/**
 * A body streamed from its store into a delivery's request (sender.ts): sent with its size as
 * Content-Length, read afresh for each pass, and any failure to read it — before the request, while
 * it is sent, or a body shorter or longer than its size — reported as the body's, not the receiver's.
 */

interface Arrival {
  headers: http.IncomingHttpHeaders;
  sha256: string;
  bytes: number;
  complete: boolean;
}

let server: http.Server;
let url: string;
const arrivals: Arrival[] = [];
const agent = new Agent();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const hash = createHash('sha256');
    const arrival: Arrival = { headers: req.headers, sha256: '', bytes: 0, complete: false };
    arrivals.push(arrival);
    req.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      arrival.bytes += chunk.length;
    });
    req.on('error', () => {});
    req.on('end', () => {
      arrival.complete = true;
      arrival.sha256 = hash.digest('hex');
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await agent.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** A body of `pieces`, counting its passes; `fail` throws once the pieces before it are given. */
function body(pieces: Buffer[], size: number, fail?: { after: number; error: Error }): StreamedBody & { passes: number } {
  const streamed = {
    passes: 0,
    size,
    async *open() {
      streamed.passes++;
      for (let i = 0; i < pieces.length; i++) {
        if (fail && i === fail.after) throw fail.error;
        yield pieces[i]!;
      }
      if (fail && fail.after >= pieces.length) throw fail.error;
    },
  };
  return streamed;
}

const send = (streamed: StreamedBody) => sendRequest(agent, { url, method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: streamed }, { timeoutMs: 5000, connectTimeoutMs: 1000 });
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const pieces = [Buffer.alloc(300_000, 0x61), Buffer.alloc(300_000, 0x62), Buffer.from('end')];
const whole = Buffer.concat(pieces);

describe('a streamed body', () => {
  it('is sent whole with its size as Content-Length, and signed with a pass of its own to the same signature as the bytes', async () => {
    const secret = generateSigningSecret();
    const streamed = body(pieces, whole.length);
    const input = { messageId: '01900000-0000-7000-8000-000000000009', url, method: 'post', path: '/', query: '', rawHeaders: [] as [string, string][], secrets: [secret], timestamp: 1_700_000_000 };
    const request = await buildForwardRequest({ ...input, body: streamed });
    expect(request.headers['webhook-signature']).toBe((await buildForwardRequest({ ...input, body: whole })).headers['webhook-signature']);
    expect(streamed.passes).toBe(1);
    const before = arrivals.length;
    const result = await sendRequest(agent, request, { timeoutMs: 5000, connectTimeoutMs: 1000 });
    expect(result).toMatchObject({ status: 200, error: null, bodyError: null });
    expect(streamed.passes).toBe(2);
    const [arrival] = arrivals.slice(before);
    expect(arrival).toMatchObject({ bytes: whole.length, sha256: sha256(whole), complete: true });
    expect(arrival!.headers['content-length']).toBe(String(whole.length));
    expect(arrival!.headers['transfer-encoding']).toBeUndefined();
  });

  it('whose first piece cannot be read fails before any request goes out', async () => {
    const before = arrivals.length;
    const missing = new Error('blob is missing');
    const result = await send(body(pieces, whole.length, { after: 0, error: missing }));
    expect(result).toMatchObject({ status: null, aborted: false });
    expect(result.bodyError).toBe(missing);
    expect(arrivals.length).toBe(before);
  });

  it('that fails midway, ends short of its size or runs past it fails the request, as the body\'s error', async () => {
    const before = arrivals.length;
    const cut = new Error('blob ends early');
    const failed = await send(body(pieces, whole.length, { after: 2, error: cut }));
    expect(failed).toMatchObject({ status: null });
    expect(failed.bodyError).toBe(cut);
    const short = await send(body(pieces, whole.length + 10));
    expect(short.status).toBeNull();
    expect((short.bodyError as Error).message).toBe(`the body ended at byte ${whole.length} of its ${whole.length + 10}`);
    const long = await send(body(pieces, whole.length - 1));
    expect(long.status).toBeNull();
    expect((long.bodyError as Error).message).toBe(`the body runs past its ${whole.length - 1} bytes`);
    // The receiver saw each request cut, never complete.
    expect(arrivals.slice(before).filter((a) => a.complete)).toEqual([]);
  });
});
