import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SERVER_MAIN } from './helpers/paths.js';
import { startServer, type RunningServer } from './helpers/server.js';

const servers: RunningServer[] = [];
let workDir: string | undefined;

afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
  workDir = undefined;
});

/** `hookrelay-server ARGS…` to its exit: the code and what it printed (bounded: 120 s). */
function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [SERVER_MAIN, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function api(server: RunningServer, path: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json', ...init.headers },
  });
  return { status: response.status, body: await response.json() };
}

async function createEndpoint(server: RunningServer): Promise<{ id: string; token: string }> {
  const created = await api(server, '/v1/inbound-endpoints', { method: 'POST', body: JSON.stringify({ name: 'backup', mode: 'cli' }) });
  expect(created.status).toBe(201);
  return { id: created.body.data.id, token: created.body.data.secret_token };
}

/** Every message id of the endpoint, page by page (bounded). */
async function messageIds(server: RunningServer, endpointId: string): Promise<Set<string>> {
  const ids = new Set<string>();
  let cursor: string | null = null;
  for (let page = 0; page < 1_000; page++) {
    const listed = await api(server, `/v1/inbound-endpoints/${endpointId}/messages?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
    expect(listed.status).toBe(200);
    for (const row of listed.body.data as { id: string }[]) ids.add(row.id);
    cursor = listed.body.meta.next_cursor;
    if (cursor === null) return ids;
  }
  throw new Error('more than 1,000 pages of messages');
}

describe('hookrelay-server backup and restore of the embedded data dir', () => {
  it('a backup taken while webhooks are ingested holds every webhook acknowledged before it began', async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-backup-'));
    const server = await startServer();
    servers.push(server);
    const endpoint = await createEndpoint(server);

    // Four senders post without pause; each 200 is noted with when its answer came.
    const acknowledged: { id: string; at: number }[] = [];
    let sending = true;
    let failures = 0;
    const senders = Array.from({ length: 4 }, async (_, sender) => {
      for (let n = 0; sending && n < 100_000; n++) {
        const response = await fetch(`${server.url}/in/${endpoint.token}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ sender, n, pad: 'x'.repeat(500) }),
        });
        const body = (await response.json()) as { data?: { message_id?: string } };
        if (response.status === 200 && body.data?.message_id) acknowledged.push({ id: body.data.message_id, at: Date.now() });
        else failures++;
      }
    });
    for (let i = 0; i < 600 && acknowledged.length < 400; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(acknowledged.length).toBeGreaterThanOrEqual(400);

    const file = join(workDir, 'backup.tar.gz');
    const began = Date.now();
    const backup = await run(['backup', '--to', file, '--data-dir', server.dataDir, '--json']);
    const ended = Date.now();
    sending = false;
    await Promise.all(senders);
    expect(backup.code, backup.stderr).toBe(0);
    const report = JSON.parse(backup.stdout) as { file: string; bytes: number; online: boolean };
    expect(report).toMatchObject({ file, online: true });
    expect(statSync(file).size).toBe(report.bytes);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(failures).toBe(0);
    // The server kept answering while it wrote the backup.
    expect(acknowledged.filter((ack) => ack.at > began && ack.at < ended).length).toBeGreaterThan(0);

    const restoredDir = join(workDir, 'restored');
    const restored = await run(['restore', '--from', file, '--data-dir', restoredDir]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toContain(`into ${restoredDir}`);
    expect(readdirSync(restoredDir).sort()).toEqual(['encryption-key', 'pgdata']);

    const copy = await startServer({ dataDir: restoredDir, apiKey: server.apiKey });
    servers.push(copy);
    const held = await messageIds(copy, endpoint.id);
    const before = acknowledged.filter((ack) => ack.at < began);
    expect(before.filter((ack) => !held.has(ack.id))).toEqual([]);
    // Nothing that was not acknowledged appears, and the restored endpoint still ingests: its secret
    // opened with the restored key.
    const sent = new Set(acknowledged.map((ack) => ack.id));
    expect([...held].filter((id) => !sent.has(id))).toEqual([]);
    const more = await fetch(`${copy.url}/in/${endpoint.token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(more.status).toBe(200);
  });

  it('backs up a data dir no server runs on, and restores it only into a new or empty directory that nothing holds', async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-backup-'));
    const dataDir = join(workDir, 'data');
    const first = await startServer({ dataDir });
    servers.push(first);
    const endpoint = await createEndpoint(first);
    const ingested = await fetch(`${first.url}/in/${endpoint.token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    const { data } = (await ingested.json()) as { data: { message_id: string } };
    await first.stop();
    expect(existsSync(join(dataDir, 'hookrelay.sock'))).toBe(false);

    const file = join(workDir, 'offline.tar.gz');
    const backup = await run(['backup', '--to', file, '--data-dir', dataDir]);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toMatch(/^backup written to .*offline\.tar\.gz \([\d.]+ MB in [\d.]+ s, no server running\)\n$/);
    const again = await run(['backup', '--to', file, '--data-dir', dataDir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`hookrelay-server: ${file} already exists: choose a new file for the backup\n`);

    const notEmpty = join(workDir, 'not-empty');
    await mkdir(notEmpty);
    await writeFile(join(notEmpty, 'notes.txt'), 'keep me');
    const refused = await run(['restore', '--from', file, '--data-dir', notEmpty]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`hookrelay-server: the data dir ${notEmpty} is not empty (it holds notes.txt): restore into a new or empty directory\n`);
    expect(readdirSync(notEmpty)).toEqual(['notes.txt']);

    const running = await startServer();
    servers.push(running);
    const inUse = await run(['restore', '--from', file, '--data-dir', running.dataDir]);
    expect(inUse.code).toBe(1);
    expect(inUse.stderr).toContain(`hookrelay-server: the data dir ${running.dataDir} is in use by hookrelay-server (pid `);

    const damaged = join(workDir, 'damaged.tar.gz');
    await writeFile(damaged, 'not an archive');
    const unreadable = await run(['restore', '--from', damaged, '--data-dir', join(workDir, 'from-damaged')]);
    expect(unreadable.code).toBe(1);
    expect(unreadable.stderr).toContain(`hookrelay-server: ${damaged} is not a whole hookrelay-server backup`);
    expect(readdirSync(join(workDir, 'from-damaged'))).toEqual([]);

    const empty = join(workDir, 'empty');
    await mkdir(empty);
    const restored = await run(['restore', '--from', file, '--data-dir', empty]);
    expect(restored.code, restored.stderr).toBe(0);
    const copy = await startServer({ dataDir: empty, apiKey: first.apiKey });
    servers.push(copy);
    expect([...(await messageIds(copy, endpoint.id))]).toEqual([data.message_id]);
  });

  it('takes the large bodies, files in payloads/ beside the database, into the backup', async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-backup-'));
    const server = await startServer();
    servers.push(server);
    const endpoint = await createEndpoint(server);
    const large = Buffer.alloc(300 * 1024, 'large body ');
    const ingested = await fetch(`${server.url}/in/${endpoint.token}`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: large });
    expect(ingested.status).toBe(200);
    const { data } = (await ingested.json()) as { data: { message_id: string } };
    expect(readdirSync(join(server.dataDir, 'payloads')).length).toBe(1);

    const file = join(workDir, 'backup.tar.gz');
    const backup = await run(['backup', '--to', file, '--data-dir', server.dataDir]);
    expect(backup.code, backup.stderr).toBe(0);
    const restoredDir = join(workDir, 'restored');
    expect((await run(['restore', '--from', file, '--data-dir', restoredDir])).code).toBe(0);
    expect(readdirSync(join(restoredDir, 'payloads'))).toEqual(readdirSync(join(server.dataDir, 'payloads')));
    const copy = await startServer({ dataDir: restoredDir, apiKey: server.apiKey });
    servers.push(copy);
    const body = await fetch(`${copy.url}/v1/inbound-messages/${data.message_id}/body`, { headers: { authorization: `Bearer ${copy.apiKey}` } });
    expect(body.status).toBe(200);
    expect(Buffer.from(await body.arrayBuffer()).equals(large)).toBe(true);
  });

  it('a server whose data dir path is too long for a Unix socket says so, and a backup beside it is refused with the reason', async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-backup-'));
    const dataDir = join(workDir, 'd'.repeat(Math.max(1, 110 - workDir.length)));
    const server = await startServer({ dataDir, env: { HOOKRELAY_LOG_LEVEL: 'warn' } });
    servers.push(server);
    expect(server.logs()).toContain('online backup is unavailable: the data dir has no backup socket');
    const refused = await run(['backup', '--to', join(workDir, 'b.tar.gz'), '--data-dir', dataDir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`is in use by hookrelay-server (pid `);
    expect(refused.stderr).toContain(`it cannot take the backup itself: it has no backup socket (its path ${join(dataDir, 'hookrelay.sock')} is longer than the 107 bytes a Unix socket allows)`);
    expect(existsSync(join(workDir, 'b.tar.gz'))).toBe(false);
  });

  it('a command that goes away in the middle of a backup leaves the server ready for the next one', async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-backup-'));
    const server = await startServer();
    servers.push(server);
    // The first bytes of the archive, then the connection is dropped.
    const firstBytes = await new Promise<number>((resolve, reject) => {
      const req = request({ socketPath: join(server.dataDir, 'hookrelay.sock'), method: 'POST', path: '/backup' }, (res) => {
        res.once('data', (chunk: Buffer) => {
          req.destroy();
          resolve(chunk.length);
        });
      });
      req.once('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
      req.end();
    });
    expect(firstBytes).toBeGreaterThan(0);
    const file = join(workDir, 'after.tar.gz');
    const backup = await run(['backup', '--to', file, '--data-dir', server.dataDir]);
    expect(backup.code, backup.stderr).toBe(0);
    expect(existsSync(file)).toBe(true);
  });

  it('refuses with DATABASE_URL, pointing to pg_dump', async () => {
    const refused = await run(['backup', '--to', join(tmpdir(), 'never.tar.gz')], {
      DATABASE_URL: 'postgres://127.0.0.1:1/none',
      HOOKRELAY_ENCRYPTION_KEY: 'a'.repeat(64),
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("backup is for the embedded database (HOOKRELAY_DATA_DIR); with DATABASE_URL use PostgreSQL's own pg_dump");
  });
});
