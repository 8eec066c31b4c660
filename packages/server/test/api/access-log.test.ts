import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { parseConfig } from '../../src/config.js';
import type { Database } from '../../src/db/database.js';
import { loggerOptions } from '../../src/logging.js';
import { SecretBox } from '../../src/security/crypto.js';
import { publicResolver } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/database.js';

/** The server's own logger settings, writing to an array: one access line per request, level names. */
let db: Database;
let app: FastifyInstance;
let dataDir: string;
const lines: Record<string, any>[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-access-'));
  const config = parseConfig({ HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_LOG_LEVEL: 'info', HOOKRELAY_TRUSTED_PROXIES: '10.0.0.0/8' });
  const logger = { ...(loggerOptions(config) as object), stream: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, any>) } };
  app = await buildApp(config, { db, secretBox: new SecretBox(randomBytes(32)), resolveHost: publicResolver }, { logger, worker: false });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await db?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function linesOf(request: () => Promise<{ headers: Record<string, unknown> }>): Promise<{ requestId: unknown; logged: Record<string, any>[] }> {
  const before = lines.length;
  const res = await request();
  return { requestId: res.headers['x-request-id'], logged: lines.slice(before) };
}

describe('the access log', () => {
  it('has one info line per request: method, URL, status, duration and request id', async () => {
    const { requestId, logged } = await linesOf(() => app.inject({ method: 'GET', url: '/healthz?probe=1', remoteAddress: '192.0.2.7' }));
    expect(logged).toHaveLength(1);
    const [line] = logged;
    expect(line).toMatchObject({ level: 'info', msg: 'request completed', reqId: requestId, req: { method: 'GET', url: '/healthz?probe=1', remoteAddress: '192.0.2.7' }, res: { statusCode: 200 } });
    expect(typeof line!.responseTime).toBe('number');
  });

  it('logs refused requests too, and never the token of an ingest URL', async () => {
    const token = randomBytes(16).toString('hex');
    const { requestId, logged } = await linesOf(() => app.inject({ method: 'POST', url: `/in/${token}?secret=x`, payload: '{}', headers: { 'content-type': 'application/json' } }));
    expect(logged.map((l) => l.msg)).toEqual(['request completed']);
    expect(logged[0]).toMatchObject({ level: 'info', reqId: requestId, req: { method: 'POST', url: '/in/[redacted]?[redacted]' }, res: { statusCode: 404 } });
    expect(JSON.stringify(logged)).not.toContain(token);
  });

  it('names the client a trusted proxy forwards for, and the peer otherwise', async () => {
    const forwarded = { 'x-forwarded-for': '198.51.100.4, 10.9.9.9' };
    const proxied = await linesOf(() => app.inject({ method: 'GET', url: '/healthz', remoteAddress: '10.1.2.3', headers: forwarded }));
    expect(proxied.logged[0]?.req.remoteAddress).toBe('198.51.100.4');
    const untrusted = await linesOf(() => app.inject({ method: 'GET', url: '/healthz', remoteAddress: '192.0.2.8', headers: forwarded }));
    expect(untrusted.logged[0]?.req.remoteAddress).toBe('192.0.2.8');
  });
});
