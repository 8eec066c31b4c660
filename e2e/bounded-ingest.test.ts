import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { findPgBin, startPgCluster, type PgCluster } from '@hookrelay/server/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createCliEndpoint, delay } from './helpers/listen.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * Senders that hold large bodies open cannot fill the server's memory (docs/operating.md, Body
 * limits and memory), on the embedded database and on PostgreSQL: the probe's case scaled down
 * (many connections each sending all but the last byte of a large body, then waiting), and what
 * kill -9 leaves during and right after a large upload.
 */

const MIB = 1024 * 1024;
const run = promisify(execFile);
const encryptionKey = randomBytes(32).toString('hex');
let cluster: PgCluster;

beforeAll(async () => {
  cluster = await startPgCluster(process.env);
});
afterAll(async () => {
  cluster?.stop();
});

const BOUNDS = {
  HOOKRELAY_MAX_INGEST_BODY_BYTES: String(8 * MIB),
  // 56 MiB for large bodies, 16 MiB per source address.
  HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES: String(64 * MIB),
  HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES_PER_SOURCE: String(16 * MIB),
  HOOKRELAY_INGEST_MIN_UPLOAD_BYTES_PER_SECOND: String(64 * 1024),
  HOOKRELAY_REQUEST_TIMEOUT_SECONDS: '60',
  HOOKRELAY_SWEEP_INTERVAL_SECONDS: '1',
  HOOKRELAY_ENCRYPTION_KEY: encryptionKey,
};

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) / 1024;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

interface Held {
  socket: net.Socket;
  /** The status the server answered, or 0 when it closed without one. */
  status: Promise<number>;
}

/** A connection that declares `declared` bytes, sends `sent` of them and waits. */
function hold(url: string, token: string, declared: number, sent: number, localAddress: string): Promise<Held> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port: Number(port), localAddress }, () => {
      socket.write(`POST /in/${token} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: ${declared}\r\n\r\n`);
      // Big writes in pieces, so that the socket's buffer never holds the whole body in this process.
      let left = sent;
      const piece = Buffer.alloc(256 * 1024, 0x61);
      const pump = (): void => {
        while (left > 0) {
          const n = Math.min(left, piece.length);
          left -= n;
          if (!socket.write(piece.subarray(0, n))) {
            socket.once('drain', pump);
            return;
          }
        }
      };
      pump();
      resolve({ socket, status });
    });
    let text = '';
    const status = new Promise<number>((done) => {
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
        if (match) done(Number(match[1]));
      });
      socket.on('close', () => done(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)));
    });
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

async function post(url: string, token: string, body: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; messageId?: string }> {
  const res = await fetch(`${url}/in/${token}`, { method: 'POST', headers: { 'content-type': 'application/octet-stream', ...headers }, body, signal: AbortSignal.timeout(60_000) });
  const json = (await res.json()) as { data?: { message_id: string } };
  return { status: res.status, ...(json.data ? { messageId: json.data.message_id } : {}) };
}

/** What a database holds of uploads in flight: the pending records and the blobs written. */
async function uploadsOf(backend: 'pglite' | 'postgres', server: RunningServer): Promise<{ pending: number | null; blobs: number }> {
  if (backend === 'pglite') {
    let names: string[] = [];
    try {
      names = readdirSync(path.join(server.dataDir, 'payloads'));
    } catch {
      // Not made yet.
    }
    return { pending: null, blobs: names.length };
  }
  const psql = path.join(findPgBin(process.env), 'psql');
  const { stdout } = await run(psql, [cluster.url, '-At', '-c', 'SELECT (SELECT count(*) FROM payload_uploads) || \' \' || (SELECT count(DISTINCT key) FROM payload_chunks)']);
  const [pending, blobs] = stdout.trim().split(' ').map(Number);
  return { pending: pending!, blobs: blobs! };
}

describe.each(['pglite', 'postgres'] as const)('on %s', (backend) => {
  let dataDir: string;
  let server: RunningServer;
  const start = async (): Promise<RunningServer> =>
    startServer({
      dataDir,
      apiKey: 'hr_' + 'b'.repeat(40),
      env: { ...BOUNDS, ...(backend === 'postgres' ? { DATABASE_URL: cluster.url } : {}) },
    });

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), `hookrelay-e2e-bounded-${backend}-`));
    server = await start();
  });
  afterAll(async () => {
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('forty senders holding 8 MiB − 1 byte each leave the server under 400 MB, another endpoint and /v1 answering within a second; the held are cut with 408 and leave nothing', async () => {
    const target = await createCliEndpoint(server.url, server.apiKey);
    const other = await createCliEndpoint(server.url, server.apiKey);
    const atRest = rssMb(server.pid);
    const held: Held[] = [];
    try {
      // Five senders on each of eight addresses: each address's share admits two, the process seven.
      for (let n = 0; n < 40; n++) held.push(await hold(server.url, target.token, 8 * MIB, 8 * MIB - 1, `127.0.3.${1 + (n % 8)}`));
      const answered: number[] = [];
      for (const h of held) void h.status.then((s) => answered.push(s));
      // Refused at once, before their bodies are read; the admitted ones wait for their last byte.
      // A refused sender still writing its body may see the close as a reset, its 503 lost (0).
      for (let i = 0; i < 100 && answered.length < 40 - 7; i++) await delay(100);
      expect(answered.every((s) => s === 503 || s === 0), String(answered)).toBe(true);
      expect(answered.filter((s) => s === 503).length).toBeGreaterThan(0);
      expect(answered.length).toBeGreaterThanOrEqual(40 - 7);
      const answeredEarly = answered.length;

      let peak = rssMb(server.pid);
      const small = await timed(() => post(server.url, other.token, Buffer.from('{"type":"ping"}')));
      const whoami = await timed(() => api(server.url, server.apiKey, 'GET', '/v1/whoami'));
      peak = Math.max(peak, rssMb(server.pid));
      expect(small.value.status).toBe(200);
      expect(small.ms).toBeLessThan(1000);
      expect(whoami.ms).toBeLessThan(1000);
      expect(peak, `at rest ${atRest} MB`).toBeLessThan(400);

      // The admitted ones stopped arriving: cut within two windows of the minimum rate, not 60 s.
      const statuses = await Promise.race([Promise.all(held.map((h) => h.status)), delay(30_000).then(() => null)]);
      expect(statuses).not.toBeNull();
      expect(statuses!.filter((s) => s === 408).length).toBe(40 - answeredEarly);
      for (const h of held) h.socket.destroy();
      let left = await uploadsOf(backend, server);
      for (let i = 0; i < 100 && (left.blobs > 0 || (left.pending ?? 0) > 0); i++) {
        await delay(100);
        left = await uploadsOf(backend, server);
      }
      // The small webhook is inline: no blob at all is left.
      expect(left).toEqual({ pending: backend === 'postgres' ? 0 : null, blobs: 0 });
      const messages = await api<unknown[]>(server.url, server.apiKey, 'GET', `/v1/inbound-endpoints/${target.id}/messages`);
      expect(messages).toHaveLength(0);
    } finally {
      for (const h of held) h.socket.destroy();
    }
  }, 90_000);

  it('kill -9 during a large upload leaves no message, and what it wrote is removed; kill -9 right after the 200 loses nothing', async () => {
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const cut = await hold(server.url, endpoint.token, 8 * MIB, 4 * MIB, '127.0.0.1');
    for (let i = 0; i < 100 && (await uploadsOf(backend, server)).blobs === 0; i++) await delay(50);
    expect((await uploadsOf(backend, server)).blobs).toBeGreaterThanOrEqual(1);
    await server.kill();
    cut.socket.destroy();
    server = await start();
    expect(await api<unknown[]>(server.url, server.apiKey, 'GET', `/v1/inbound-endpoints/${endpoint.id}/messages`)).toHaveLength(0);
    if (backend === 'pglite') {
      // One process owns the data dir: what an earlier one left pending is swept at once.
      for (let i = 0; i < 100 && (await uploadsOf(backend, server)).blobs > 0; i++) await delay(100);
      expect(await uploadsOf(backend, server)).toEqual({ pending: null, blobs: 0 });
    } else {
      // Other processes may be mid-upload: it stays pending, for the sweeper once an upload's time is past.
      const left = await uploadsOf(backend, server);
      expect(left.pending).toBeGreaterThanOrEqual(1);
      expect(left.blobs).toBeGreaterThanOrEqual(1);
    }

    const body = randomBytes(8 * MIB);
    const sent = await post(server.url, endpoint.token, body);
    expect(sent.status).toBe(200);
    await server.kill();
    server = await start();
    const res = await fetch(`${server.url}/v1/inbound-messages/${sent.messageId}/body`, { headers: { authorization: `Bearer ${server.apiKey}` } });
    expect(res.status).toBe(200);
    expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(sha256(body));
  }, 120_000);
});
