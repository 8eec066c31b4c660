import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { earlyServerOptions, launchEmbeddedServer, startServerEarly } from '../src/dev/early-start.js';
import type { EmbeddedServer } from '../src/dev/embedded-server.js';

const KEY = `hr_${'b'.repeat(40)}`;

let dir: string;
/** A dev data dir that `hookrelay dev` has used: its database dir and dev.json with the key. */
let dataDir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookrelay-early-'));
  dataDir = join(dir, 'config', 'dev');
  await mkdir(join(dataDir, 'pgdata'), { recursive: true });
  await writeFile(join(dataDir, 'dev.json'), JSON.stringify({ api_key: KEY }));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('earlyServerOptions', () => {
  const env = (): Record<string, string> => ({ HOOKRELAY_CONFIG_DIR: join(dir, 'config'), PATH: '/bin' });

  it("reads the server's options from the arguments, with the command's defaults", () => {
    expect(earlyServerOptions(['--forward-to', '3000', '--json'], env(), '/home/nobody')).toEqual({
      dataDir,
      port: 8787,
      apiKey: KEY,
      publicUrl: 'http://127.0.0.1:8787',
      env: env(),
    });
  });

  it('takes --data-dir, --port and --public-url in both forms', async () => {
    const other = join(dir, 'other');
    await mkdir(join(other, 'pgdata'), { recursive: true });
    await writeFile(join(other, 'dev.json'), JSON.stringify({ api_key: KEY, inbound_endpoint_id: 'x' }));
    for (const args of [
      ['-f', '3000', '--port=9000', '--data-dir', other, '--public-url', 'https://abc.ngrok.app//'],
      ['--data-dir=' + other, '--port', '9000', '--public-url=https://abc.ngrok.app', '-f', '3000'],
    ]) {
      expect(earlyServerOptions(args, env(), '/h')).toMatchObject({ dataDir: other, port: 9000, publicUrl: 'https://abc.ngrok.app' });
    }
  });

  it('starts nothing when oclif must interpret the arguments, or the data dir is new', async () => {
    for (const args of [
      ['--help'],
      ['-f', '3000', '-h'],
      ['--version'],
      ['-f', '3000', '--', '--port', '9000'],
      ['--port', '9000', '--port', '9001'],
      ['--port', '70000'],
      ['--port', 'abc'],
      ['--port'],
      ['--public-url', 'ftp://example.com'],
      ['--public-url', 'nope'],
      ['--data-dir', join(dir, 'never-used')],
    ]) {
      expect(earlyServerOptions(args, env(), '/h'), args.join(' ')).toBeUndefined();
    }
    await writeFile(join(dataDir, 'dev.json'), '{}');
    expect(earlyServerOptions([], env(), '/h')).toBeUndefined();
    await rm(join(dataDir, 'dev.json'));
    expect(earlyServerOptions([], env(), '/h')).toBeUndefined();
  });
});

describe('an early-started server', () => {
  /**
   * A stand-in for hookrelay-server: records its pid and port in STARTS, prints the listening line
   * and runs until SIGTERM.
   */
  async function fakeServer(): Promise<{ main: string; starts: () => Promise<{ pid: number; port: string }[]> }> {
    const main = join(dir, 'fake-server.mjs');
    const startsFile = join(dir, 'starts');
    await writeFile(
      main,
      `import { appendFileSync } from 'node:fs';
appendFileSync(${JSON.stringify(startsFile)}, process.pid + ' ' + process.env.HOOKRELAY_PORT + '\\n');
process.stdout.write('{"level":30,"msg":"starting"}\\nhookrelay-server listening on http://127.0.0.1:' + process.env.HOOKRELAY_PORT + '\\n');
process.on('SIGTERM', () => process.exit(0));
setInterval(() => {}, 1000);
`,
    );
    return {
      main,
      starts: async () =>
        (await readFile(startsFile, 'utf8').catch(() => ''))
          .split('\n')
          .filter(Boolean)
          .map((line) => ({ pid: Number(line.split(' ')[0]), port: line.split(' ')[1]! })),
    };
  }

  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  async function until(check: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 200; i++) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  let server: EmbeddedServer | undefined;
  afterEach(async () => {
    await server?.stop(5_000);
    server = undefined;
  });

  it('is taken over by the command when its flags give the same server, with what it printed before', async () => {
    const fake = await fakeServer();
    const env = { HOOKRELAY_CONFIG_DIR: join(dir, 'config'), PATH: process.env.PATH ?? '/bin' };
    startServerEarly(['--port', '9100', '-f', '3000'], env, '/h', fake.main);
    // The listening line is printed before the command takes the server over.
    await until(async () => (await fake.starts()).length === 1, 'the early start');
    await new Promise((r) => setTimeout(r, 200));

    const logFile = join(dataDir, 'server.log');
    server = await launchEmbeddedServer({ dataDir, port: 9100, apiKey: KEY, publicUrl: 'http://127.0.0.1:9100', env, logFile, serverMain: fake.main });
    expect(await server.waitUntilListening(5_000, new AbortController().signal)).toBe('http://127.0.0.1:9100');
    const starts = await fake.starts();
    expect(starts).toEqual([{ pid: server.pid, port: '9100' }]);
    expect(await server.stop(5_000)).toEqual({ code: 0, signal: null });
    expect(await readFile(logFile, 'utf8')).toContain('hookrelay-server listening on http://127.0.0.1:9100\n');
    server = undefined;
  });

  it('is stopped, and another started, when the command computes a different server', async () => {
    const fake = await fakeServer();
    const env = { HOOKRELAY_CONFIG_DIR: join(dir, 'config'), PATH: process.env.PATH ?? '/bin' };
    startServerEarly(['--port', '9200'], env, '/h', fake.main);
    await until(async () => (await fake.starts()).length === 1, 'the early start');
    const [early] = await fake.starts();

    server = await launchEmbeddedServer({ dataDir, port: 9201, apiKey: KEY, publicUrl: 'http://127.0.0.1:9201', env, logFile: join(dataDir, 'server.log'), serverMain: fake.main });
    expect(alive(early!.pid)).toBe(false);
    expect(await server.waitUntilListening(5_000, new AbortController().signal)).toBe('http://127.0.0.1:9201');
    const starts = await fake.starts();
    expect(starts).toHaveLength(2);
    expect(starts[1]).toEqual({ pid: server.pid, port: '9201' });
  });

  it('without an early start, the command spawns its own server', async () => {
    const fake = await fakeServer();
    const env = { PATH: process.env.PATH ?? '/bin' };
    server = await launchEmbeddedServer({ dataDir, port: 9300, apiKey: KEY, publicUrl: 'http://127.0.0.1:9300', env, logFile: join(dataDir, 'server.log'), serverMain: fake.main });
    expect(await server.waitUntilListening(5_000, new AbortController().signal)).toBe('http://127.0.0.1:9300');
    expect(await fake.starts()).toEqual([{ pid: server.pid, port: '9300' }]);
  });
});
