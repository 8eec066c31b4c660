import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
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

describe('the data dir lock of the embedded database', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  /** A process that exits by itself after `ms` (or at the end of the test). */
  function holder(ms: number): ChildProcess {
    const child = spawn(process.execPath, ['-e', `setTimeout(() => {}, ${ms})`], { stdio: 'ignore' });
    children.push(child);
    return child;
  }

  /** `hookrelay-server start` on the data dir; resolves when it prints its listening line or exits. */
  function start(dataDir: string): Promise<{ listening: boolean; code: number | null; output: string; child: ChildProcess }> {
    const child = spawn(process.execPath, [SERVER_MAIN, 'start', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], {
      env: { PATH: process.env.PATH ?? '', HOOKRELAY_LOG_LEVEL: 'warn', HOOKRELAY_BOOTSTRAP_API_KEY: `hr_${'d'.repeat(40)}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ listening: false, code: null, output: `${output}\n(no listening line within 60 s)`, child }), 60_000);
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('hookrelay-server listening on')) {
          clearTimeout(timer);
          resolve({ listening: true, code: null, output, child });
        }
      });
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ listening: false, code, output, child });
      });
    });
  }

  it('a restart right after kill -9 opens the data dir, even while the killed server is not yet reaped', async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-lock-'));
    const dataDir = join(workDir, 'data');
    const log = join(workDir, 'first.log');
    // The server's parent is `sleep`, which never collects its children: once killed the server stays
    // a zombie, a pid that still answers kill(pid, 0), until the test ends its parent.
    const parent = spawn(
      'sh',
      ['-c', `"${process.execPath}" "${SERVER_MAIN}" start --port 0 --host 127.0.0.1 --data-dir "${dataDir}" > "${log}" 2>&1 & exec sleep 120`],
      { env: { PATH: process.env.PATH ?? '', HOOKRELAY_LOG_LEVEL: 'warn', HOOKRELAY_BOOTSTRAP_API_KEY: `hr_${'d'.repeat(40)}` }, stdio: 'ignore' },
    );
    children.push(parent);
    for (let i = 0; i < 600 && !(existsSync(log) && readFileSync(log, 'utf8').includes('listening on')); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(readFileSync(log, 'utf8')).toContain('listening on');
    const pid = Number(readFileSync(join(dataDir, 'hookrelay.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 'SIGKILL');
    expect(() => process.kill(pid, 0)).not.toThrow();

    const second = await start(dataDir);
    expect(second.listening, second.output).toBe(true);
    expect(readFileSync(join(dataDir, 'hookrelay.pid'), 'utf8').split('\n')[0]).toBe(String(second.child.pid));
  });

  it('waits for a holder that exits within a few seconds, and refuses one that keeps running, naming its pid', async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-lock-'));
    const dataDir = join(workDir, 'data');
    await mkdir(dataDir, { mode: 0o700 });
    const lockFile = join(dataDir, 'hookrelay.pid');

    const running = holder(120_000);
    await writeFile(lockFile, `${running.pid}\nhookrelay-server start\n`);
    const refused = await start(dataDir);
    expect(refused.listening).toBe(false);
    expect(refused.code).toBe(1);
    expect(refused.output).toContain(`the data dir ${dataDir} is in use by hookrelay-server start (pid ${running.pid}); stop it first`);
    expect(readFileSync(lockFile, 'utf8')).toBe(`${running.pid}\nhookrelay-server start\n`);

    const exiting = holder(1_000);
    await writeFile(lockFile, `${exiting.pid}\nhookrelay-server start\n`);
    const opened = await start(dataDir);
    expect(opened.listening, opened.output).toBe(true);
    expect(exiting.exitCode).toBe(0);
  });

  it('a lock copied with the data dir (a hot cp -a of a running server) does not hold a start on the copy', async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-lock-'));
    const original = join(workDir, 'original');
    const running = await start(original);
    expect(running.listening, running.output).toBe(true);
    const copy = join(workDir, 'copy');
    execFileSync('cp', ['-a', original, copy]);
    expect(readFileSync(join(copy, 'hookrelay.pid'), 'utf8').split('\n')[0]).toBe(String(running.child.pid));

    const second = await start(copy);
    expect(second.listening, second.output).toBe(true);
    expect(second.output).not.toContain('in use by');
    expect(readFileSync(join(copy, 'hookrelay.pid'), 'utf8').split('\n')[0]).toBe(String(second.child.pid));
    // The original's lock is its own still.
    expect(readFileSync(join(original, 'hookrelay.pid'), 'utf8').split('\n')[0]).toBe(String(running.child.pid));
  });

  it('a lock whose pid now belongs to a process that started at another time is stale', async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-lock-'));
    const dataDir = join(workDir, 'data');
    await mkdir(dataDir, { mode: 0o700 });
    const other = holder(120_000);
    const stat = statSync(dataDir);
    // This directory, a live pid, and a start time that is not that process's: the pid was reused.
    await writeFile(join(dataDir, 'hookrelay.pid'), `${other.pid}\nhookrelay-server start\n${stat.dev}:${stat.ino}\n1\n`);
    const opened = await start(dataDir);
    expect(opened.listening, opened.output).toBe(true);
    expect(other.exitCode).toBe(null);
  });
});
