import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

/**
 * The bounds on bodies being received (docs/operating.md, Body limits and memory): a process-wide
 * budget of body bytes in flight and each source address's share of it, both refused 503 before the
 * body is read; a body that stops arriving at the minimum rate is cut with 408 long before the
 * request timeout.
 */

const MIB = 1024 * 1024;

let t: TestApp;
let port: number;
beforeAll(async () => {
  t = await createTestApp({
    env: {
      HOOKRELAY_MAX_INGEST_BODY_BYTES: String(2 * MIB),
      // An eighth (2 MiB) is kept for small bodies: large ones may hold 14 MiB, 4 MiB per source.
      HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES: String(16 * MIB),
      HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES_PER_SOURCE: String(4 * MIB),
      HOOKRELAY_INGEST_MIN_UPLOAD_BYTES_PER_SECOND: String(64 * 1024),
      HOOKRELAY_REQUEST_TIMEOUT_SECONDS: '60',
    },
  });
  const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
  port = Number(new URL(address).port);
});
afterAll(async () => {
  await t?.close();
});

async function createInbound(): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'budget', mode: 'cli' } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

interface Held {
  socket: net.Socket;
  /** Everything the server sent back, once it has answered or closed. */
  answer: Promise<{ text: string; at: number }>;
}

/**
 * A raw connection from `localAddress` that declares `declared` bytes of body and sends `sent` of
 * them, then waits: what a slow or hostile sender does.
 */
function hold(token: string, declared: number, sent: number, localAddress = '127.0.0.1'): Promise<Held> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress }, () => {
      socket.write(`POST /in/${token} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: ${declared}\r\n\r\n`);
      if (sent > 0) socket.write(Buffer.alloc(sent, 0x61));
      resolve({ socket, answer });
    });
    const chunks: Buffer[] = [];
    const answer = new Promise<{ text: string; at: number }>((done) => {
      const finish = () => done({ text: Buffer.concat(chunks).toString('latin1'), at: Date.now() });
      socket.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        if (/\r\n\r\n[\s\S]*\}\s*$/.test(Buffer.concat(chunks).toString('latin1'))) finish();
      });
      socket.on('close', finish);
    });
    socket.on('error', reject);
  });
}

function statusOf(text: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
}

async function metric(name: string): Promise<number> {
  const res = await t.app.inject({ method: 'GET', url: '/metrics' });
  const line = res.body.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
}

async function settled(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('not settled within 5 s');
}

describe('the ingest body budget', () => {
  it("refuses a source past its share 503 with Retry-After before reading the body, admits other sources and small bodies, and returns the bytes when the connections close", async () => {
    const { id, token } = await createInbound();
    const refusedBefore = await metric('hookrelay_ingest_budget_refusals_total{bound="source"}');
    const overBefore = await metric('hookrelay_ingest_requests_total{kind="inbound",outcome="over_budget"}');
    // Two bodies of 2 MiB − 1 byte sent from one address fill its 4 MiB share.
    const held = [await hold(token, 2 * MIB, 2 * MIB - 1), await hold(token, 2 * MIB, 2 * MIB - 1)];
    await settled(async () => (await metric('hookrelay_ingest_inflight_bytes')) === 4 * MIB);

    const third = await hold(token, 2 * MIB, 0);
    const answer = await third.answer;
    expect(statusOf(answer.text), answer.text).toBe(503);
    expect(answer.text).toMatch(/\r\nretry-after: 5\r\n/i);
    expect(answer.text).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(answer.text.slice(answer.text.indexOf('\r\n\r\n') + 4)).error).toEqual({
      code: 'SERVICE_UNAVAILABLE',
      message: "this sender's share of budget of webhook bodies being received at once is spent; retry later",
    });
    expect(await metric('hookrelay_ingest_budget_refusals_total{bound="source"}')).toBe(refusedBefore + 1);
    expect(await metric('hookrelay_ingest_requests_total{kind="inbound",outcome="over_budget"}')).toBe(overBefore + 1);

    // Another address still has its own share.
    const other = await hold(token, 1024, 1024, '127.0.0.2');
    expect(statusOf((await other.answer).text)).toBe(200);

    for (const h of held) h.socket.destroy();
    await settled(async () => (await metric('hookrelay_ingest_inflight_bytes')) === 0);
    const after = await hold(token, 2 * MIB, 2 * MIB);
    expect(statusOf((await after.answer).text)).toBe(200);
    const rows = await t.db.sql<{ size_bytes: number }>`SELECT size_bytes FROM inbound_messages WHERE inbound_endpoint_id = ${id} ORDER BY id`;
    // Nothing of the cut or refused bodies was stored.
    expect(rows.map((r) => r.size_bytes)).toEqual([1024, 2 * MIB]);
  });

  it('keeps its last eighth for small bodies when large ones from many sources fill the rest', async () => {
    const { token } = await createInbound();
    const held: Held[] = [];
    // Seven large bodies of 2 MiB from four addresses reach the 14 MiB large bodies may hold.
    for (let i = 0; i < 7; i++) held.push(await hold(token, 2 * MIB, MIB, `127.0.1.${1 + (i % 4)}`));
    await settled(async () => (await metric('hookrelay_ingest_inflight_bytes')) === 14 * MIB);
    const large = await hold(token, 2 * MIB, 0, '127.0.2.1');
    expect(statusOf((await large.answer).text)).toBe(503);
    const small = await hold(token, 64 * 1024, 64 * 1024, '127.0.2.1');
    expect(statusOf((await small.answer).text)).toBe(200);
    for (const h of held) h.socket.destroy();
    await settled(async () => (await metric('hookrelay_ingest_inflight_bytes')) === 0);
  });

  it('cuts a body that stops arriving past its first MiB with 408, long before the request timeout, and stores nothing', async () => {
    const { id, token } = await createInbound();
    const timeoutsBefore = await metric('hookrelay_ingest_requests_total{kind="inbound",outcome="timeout"}');
    const started = Date.now();
    const stalled = await hold(token, 2 * MIB, 2 * MIB - 1);
    const answer = await stalled.answer;
    expect(statusOf(answer.text), answer.text).toBe(408);
    expect(answer.text).toContain('"code":"REQUEST_TIMEOUT"');
    expect(answer.text).toContain('less than 65536 bytes per second');
    // Two windows of 5 s at most; the request timeout is 60 s.
    expect(answer.at - started).toBeLessThan(20_000);
    expect(await metric('hookrelay_ingest_requests_total{kind="inbound",outcome="timeout"}')).toBe(timeoutsBefore + 1);
    await settled(async () => (await metric('hookrelay_ingest_inflight_bytes')) === 0);
    expect(await t.db.sql`SELECT 1 FROM inbound_messages WHERE inbound_endpoint_id = ${id}`).toHaveLength(0);
  }, 30_000);

  it('counts a body its sender aborted as aborted, not as an error of the server, and returns its bytes', async () => {
    const { token } = await createInbound();
    const name = (outcome: string) => `hookrelay_ingest_requests_total{kind="inbound",outcome="${outcome}"}`;
    const [abortedBefore, errorsBefore] = [await metric(name('aborted')), await metric(name('error'))];
    const cut = await hold(token, 2 * MIB, MIB);
    await settled(async () => (await metric('hookrelay_ingest_inflight_bytes')) === 2 * MIB);
    cut.socket.resetAndDestroy();
    await settled(async () => (await metric(name('aborted'))) === abortedBefore + 1);
    expect(await metric(name('error'))).toBe(errorsBefore);
    await settled(async () => (await metric('hookrelay_ingest_inflight_bytes')) === 0);
  });
});
