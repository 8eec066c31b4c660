import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildApp } from '../../src/app.js';
import { parseConfig } from '../../src/config.js';
import { CHANNELS, INBOUND_MESSAGES_CHANNEL } from '../../src/db/channels.js';
import type { Database } from '../../src/db/database.js';
import { SecretBox } from '../../src/security/crypto.js';
import { createTestApp, publicResolver } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/database.js';

/**
 * The composition root: the engines each role runs, the LISTENs a process opens and what hears
 * them, and what `app.close()` stops.
 */

let db: Database;
let dataDir: string;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-composition-'));
});
afterAll(async () => {
  await db?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** The database as one app sees it, counting the LISTENs it opens and releases per channel. */
function counting(base: Database): { db: Database; opened: Map<string, number>; released: Map<string, number> } {
  const opened = new Map<string, number>();
  const released = new Map<string, number>();
  const bump = (map: Map<string, number>, channel: string) => map.set(channel, (map.get(channel) ?? 0) + 1);
  return {
    opened,
    released,
    db: {
      ...base,
      async listen(channel, onPayload, onResubscribed) {
        bump(opened, channel);
        const unlisten = await base.listen(channel, onPayload, onResubscribed);
        return async () => {
          bump(released, channel);
          await unlisten();
        };
      },
    },
  };
}

describe('LISTEN', () => {
  it('a process with every role, its workers running, listens once per channel, and its close releases each', async () => {
    const seen = counting(db);
    const t = await createTestApp({ db: seen.db, worker: true, bulkJobs: true });
    try {
      expect(t.worker?.state).toBe('running');
      expect(t.bulkJobs).toBeDefined();
      // The streams and the watch sockets both hear the commit channel, through one LISTEN.
      expect(seen.opened.get(INBOUND_MESSAGES_CHANNEL)).toBe(1);
      expect([...seen.opened].filter(([, n]) => n > 1)).toEqual([]);
      expect([...seen.opened.keys()].sort()).toEqual([...CHANNELS].sort());
    } finally {
      await t.close();
    }
    expect(seen.released).toEqual(seen.opened);
  });

  it("another process's commit reaches this process's CLI stream and watch socket alike", async () => {
    const api = counting(db);
    const a = await createTestApp({ db: api.db, env: { HOOKRELAY_ROLES: 'api' } });
    const b = await createTestApp({ db, env: { HOOKRELAY_ROLES: 'ingest' } });
    const sockets: WebSocket[] = [];
    try {
      expect(api.opened.get(INBOUND_MESSAGES_CHANNEL)).toBe(1);
      const baseUrl = (await a.app.listen({ host: '127.0.0.1', port: 0 })).replace('http', 'ws');
      const created = await a.request('POST', '/v1/inbound-endpoints', { body: { name: 'two roles', mode: 'cli' } });
      expect(created.status, created.raw).toBe(201);
      const { id, secret_token: token } = created.body.data as { id: string; secret_token: string };
      const ticket = (await a.request('POST', '/v1/stream-tickets')).body.data.ticket as string;

      const open = async (url: string, headers: Record<string, string> = {}) => {
        const socket = new WebSocket(url, { headers });
        sockets.push(socket);
        const frames: { type: string; message?: { message_id?: string; id?: string } }[] = [];
        socket.on('message', (data) => frames.push(JSON.parse(data.toString()) as (typeof frames)[number]));
        await new Promise<void>((resolve, reject) => {
          socket.once('open', () => resolve());
          socket.once('error', reject);
        });
        const deadline = Date.now() + 5_000;
        while (!frames.some((f) => f.type === 'ready') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        return frames;
      };
      const stream = await open(`${baseUrl}/v1/inbound-endpoints/${id}/stream`, { authorization: `Bearer ${a.main.apiKey}` });
      const watch = await open(`${baseUrl}/v1/inbound-endpoints/${id}/watch?ticket=${encodeURIComponent(ticket)}`);

      // Stored by the ingest-only process: this process learns of it by NOTIFY only.
      const res = await b.app.inject({ method: 'POST', url: `/in/${token}`, payload: '{"n":1}', headers: { 'content-type': 'application/json' } });
      expect(res.statusCode, res.body).toBe(200);
      const messageId = (JSON.parse(res.body) as { data: { message_id: string } }).data.message_id;
      const deadline = Date.now() + 5_000;
      const arrived = () => stream.some((f) => f.message?.message_id === messageId) && watch.some((f) => f.message?.id === messageId);
      while (!arrived() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(stream.filter((f) => f.type === 'message').map((f) => f.message?.message_id)).toEqual([messageId]);
      expect(watch.filter((f) => f.type === 'message').map((f) => f.message?.id)).toEqual([messageId]);
    } finally {
      for (const socket of sockets) socket.terminate();
      await a.close();
      await b.close();
    }
  });
});

describe('engines by role', () => {
  const build = (roles: string) =>
    buildApp(
      parseConfig({ HOOKRELAY_LOG_LEVEL: 'silent', HOOKRELAY_ROLES: roles, HOOKRELAY_DATA_DIR: dataDir }),
      { db, secretBox: new SecretBox(randomBytes(32)), resolveHost: publicResolver },
      { logger: false },
    );

  it('the worker role gets a delivery worker, started by startBackground and stopped by app.close()', async () => {
    const app = await build('api,ingest,worker');
    const worker = app.engines.worker;
    try {
      expect(worker?.state).toBe('idle');
      await app.engines.startBackground();
      expect(worker?.state).toBe('running');
    } finally {
      await app.close();
    }
    expect(worker?.state).toBe('stopped');
  });

  it('each role builds its own engines and no other', async () => {
    const ingest = await build('ingest');
    const api = await build('api');
    try {
      expect([ingest.engines.ingest !== undefined, ingest.engines.api !== undefined, ingest.engines.worker !== undefined]).toEqual([true, false, false]);
      expect([api.engines.ingest !== undefined, api.engines.api !== undefined, api.engines.worker !== undefined]).toEqual([false, true, false]);
      // Without the worker role, background work is nothing to start.
      await ingest.engines.startBackground();
      expect(ingest.engines.worker).toBeUndefined();
    } finally {
      await ingest.close();
      await api.close();
    }
  });
});
