import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SERVER_MAIN } from './helpers/paths.js';
import { startServer, type RunningServer } from './helpers/server.js';

let server: RunningServer | undefined;
let workDir: string | undefined;

afterEach(async () => {
  await server?.stop();
  server = undefined;
  if (workDir) await rm(workDir, { recursive: true, force: true });
  workDir = undefined;
});

/** The `time` of the first JSON log line whose msg is `message`, once it appears (bounded wait). */
async function logTime(running: RunningServer, message: string, timeoutMs = 10_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const line of running.logs().split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as { msg?: string; time?: number };
      if (entry.msg === message && typeof entry.time === 'number') return entry.time;
    }
    if (Date.now() > deadline) throw new Error(`no "${message}" log line within ${timeoutMs} ms; output:\n${running.logs()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the start of a server on the embedded database', () => {
  it('starts its delivery worker and sweepers half a second after listening, behind the first requests', async () => {
    server = await startServer({ env: { HOOKRELAY_LOG_LEVEL: 'info' } });
    const listeningSeenAt = Date.now();
    const response = await fetch(`${server.url}/v1/inbound-endpoints`, { headers: { authorization: `Bearer ${server.apiKey}` } });
    expect(response.status).toBe(200);
    const workerStartedAt = await logTime(server, 'delivery worker started');
    // A timer cannot fire early, whatever the machine's load: at once (the PostgreSQL order) it would
    // be logged before the listening line was read here.
    expect(workerStartedAt - listeningSeenAt).toBeGreaterThanOrEqual(300);
  });

  it('stops cleanly when told to before its background work started', async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-start-'));
    const child = spawn(process.execPath, [SERVER_MAIN, 'start', '--port', '0', '--data-dir', join(workDir, 'data')], {
      env: { PATH: process.env.PATH ?? '', HOOKRELAY_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line within 60 s:\n${output}`)), 60_000);
      let signalled = false;
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (!signalled && output.includes('hookrelay-server listening on')) {
          // At once, within the half second before the worker and sweepers start; and once only.
          signalled = true;
          clearTimeout(timer);
          child.kill('SIGTERM');
          resolve();
        }
      });
    });
    const code = await Promise.race([exit, new Promise<string>((resolve) => setTimeout(() => resolve('timeout'), 15_000))]);
    if (code === 'timeout') child.kill('SIGKILL');
    expect(code).toBe(0);
    expect(output).toContain('shutting down');
    expect(output).not.toContain('delivery worker started');
  });

  it('ends a start told to stop before listening: exit 0, the database closed and the data dir free', async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-start-'));
    const dataDir = join(workDir, 'data');
    const apiKey = `hr_${'c'.repeat(40)}`;
    const child = spawn(process.execPath, [SERVER_MAIN, 'start', '--port', '0', '--data-dir', dataDir], {
      env: { PATH: process.env.PATH ?? '', HOOKRELAY_LOG_LEVEL: 'info', HOOKRELAY_BOOTSTRAP_API_KEY: apiKey },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // The lock is taken as the database starts to open, a second or more before listening.
    const lockFile = join(dataDir, 'hookrelay.pid');
    for (let i = 0; i < 1_000 && !existsSync(lockFile); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(existsSync(lockFile), output).toBe(true);
    child.kill('SIGTERM');
    const code = await Promise.race([exit, new Promise<string>((resolve) => setTimeout(() => resolve('timeout'), 30_000))]);
    if (code === 'timeout') child.kill('SIGKILL');
    expect(code, output).toBe(0);
    expect(output).toContain('hookrelay-server: stopped by SIGTERM before listening');
    expect(output).not.toContain('listening on');
    expect(existsSync(lockFile)).toBe(false);

    // The data dir opens again as usual.
    server = await startServer({ dataDir, apiKey });
    const response = await fetch(`${server.url}/v1/inbound-endpoints`, { headers: { authorization: `Bearer ${server.apiKey}` } });
    expect(response.status).toBe(200);
  });
});
