import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SERVER_MAIN } from './helpers/paths.js';

let workDir: string | undefined;

afterEach(async () => {
  if (workDir) await rm(workDir, { recursive: true, force: true });
  workDir = undefined;
});

async function newWorkDir(): Promise<string> {
  workDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-bundle-'));
  return workDir;
}

/**
 * Starts the bundled server program on the embedded database in `dataDir`, waits for its listening
 * line, keeps it running `holdMs` longer, kills it and returns its stderr (all of it: the helper in
 * helpers/server.ts keeps only a tail, and a module log's early lines matter here).
 */
async function runBundle(dataDir: string, env: Record<string, string>, holdMs = 0): Promise<string> {
  const child = spawn(process.execPath, [SERVER_MAIN, 'start', '--port', '0', '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', HOOKRELAY_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line within 60 s; stdout: ${stdout.slice(-2000)}`)), 60_000);
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes('hookrelay-server listening on')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the server exited (${code}) before listening; stderr: ${stderr.slice(-2000)}`));
      });
    });
    if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));
  } finally {
    child.kill('SIGKILL');
    await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve)));
  }
  return stderr;
}

/** The code cache files under a HOME. */
async function cacheFiles(home: string): Promise<string[]> {
  const dir = join(home, '.cache', 'hookrelay', 'code-cache');
  return (await readdir(dir).catch(() => [] as string[])).filter((name) => name.endsWith('.bin')).map((name) => join(dir, name));
}

describe('the process', () => {
  it('runs without the Object.prototype.__proto__ accessor, as node --disable-proto=delete would', async () => {
    const probe = join(await newWorkDir(), 'probe.cjs');
    await writeFile(probe, "process.on('exit', () => process.stderr.write(`accessor: ${Object.hasOwn(Object.prototype, '__proto__')}\\n`));\n");
    const plain = spawnSync(process.execPath, ['--require', probe, '-e', ''], { encoding: 'utf8', timeout: 30_000 });
    expect(plain.stderr).toBe('accessor: true\n');
    const server = spawnSync(process.execPath, ['--require', probe, SERVER_MAIN, '--version'], { encoding: 'utf8', timeout: 30_000 });
    expect(server.status, server.stderr).toBe(0);
    expect(server.stderr).toBe('accessor: false\n');
  });
});

describe('the bundled server program', () => {
  it('starts on the embedded database without loading the AWS SDK (only an s3:// payload store needs it)', async () => {
    const dir = await newWorkDir();
    const log = await runBundle(join(dir, 'data'), { NODE_DEBUG: 'module', HOME: join(dir, 'home') });
    // The log is live: it names the CommonJS modules the bundle requires (Node's own among them).
    expect(log).toMatch(/Module\._load REQUEST/u);
    expect(log).not.toMatch(/@aws-sdk|@smithy/u);
  });

  it('loads no OpenTelemetry SDK module without an OTLP endpoint, and loads it with one', async () => {
    const dir = await newWorkDir();
    const sdk = /Module\._load REQUEST @opentelemetry\/(sdk-trace-base|exporter-trace-otlp-proto|resources|core)\b/u;
    const off = await runBundle(join(dir, 'data'), { NODE_DEBUG: 'module', HOME: join(dir, 'home'), OTEL_SERVICE_NAME: 'unused' }, 1500);
    expect(off).toMatch(/Module\._load REQUEST/u);
    expect(off).not.toMatch(/@opentelemetry\//u);
    // Never reached: nothing is exported before a span ends.
    const on = await runBundle(join(dir, 'data'), { NODE_DEBUG: 'module', HOME: join(dir, 'home'), OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(on).toMatch(sdk);
  });

  it('loads the AWS SDK for an s3:// payload store, compiled anew and from its code cache', async () => {
    const dir = await newWorkDir();
    const env = {
      NODE_DEBUG: 'module',
      HOME: join(dir, 'home'),
      HOOKRELAY_PAYLOAD_STORE: 's3://hookrelay-e2e/payloads',
      // Never reached: the store is not used before a webhook arrives.
      AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'e2e',
      AWS_SECRET_ACCESS_KEY: 'e2e',
    };
    expect(await runBundle(join(dir, 'data'), env, 3500)).toMatch(/@aws-sdk\/client-s3/u);
    expect(await cacheFiles(env.HOME)).toHaveLength(1);
    expect(await runBundle(join(dir, 'data'), env)).toMatch(/@aws-sdk\/client-s3/u);
  });

  it('writes a V8 code cache once it listens, uses it at the next start and replaces a damaged one', async () => {
    const dir = await newWorkDir();
    const dataDir = join(dir, 'data');
    const env = { HOME: join(dir, 'home') };

    await runBundle(dataDir, env, 3500);
    const files = await cacheFiles(env.HOME);
    expect(files).toHaveLength(1);
    const written = await readFile(files[0]!);
    expect(written.length).toBeGreaterThan(100_000);

    // Used, so not written again: the same bytes after a start that ran as long.
    await runBundle(dataDir, env, 3500);
    expect(await cacheFiles(env.HOME)).toEqual(files);
    expect((await readFile(files[0]!)).equals(written)).toBe(true);

    // V8 rejects a damaged cache: the server starts all the same and writes a good one.
    await writeFile(files[0]!, Buffer.alloc(written.length, 1));
    await runBundle(dataDir, env, 3500);
    const replaced = await readFile(files[0]!);
    expect(replaced.equals(Buffer.alloc(written.length, 1))).toBe(false);
    expect(replaced.length).toBeGreaterThan(100_000);
  });
});
