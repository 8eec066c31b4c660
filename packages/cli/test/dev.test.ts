import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { describeStartFailure, embeddedServerEnv, LISTENING_LINE, resolveServerMain } from '../src/dev/embedded-server.js';
import { parseDevState, readDevState, readServerBootstrapKey, writeDevState } from '../src/dev/state.js';

const KEY = `hr_${'a'.repeat(40)}`;
const ENDPOINT = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';

describe('embeddedServerEnv', () => {
  it('drops DATABASE_URL and HOOKRELAY_* of the shell and sets the dev settings', () => {
    const env = embeddedServerEnv({
      env: { PATH: '/bin', DATABASE_URL: 'postgres://prod', HOOKRELAY_ROLES: 'api', HOOKRELAY_API_KEY: 'x', NODE_OPTIONS: '--max-old-space-size=512', EMPTY: undefined },
      dataDir: '/tmp/dev',
      port: 9000,
      apiKey: KEY,
      publicUrl: 'http://127.0.0.1:9000',
    });
    expect(env).toEqual({
      PATH: '/bin',
      NODE_OPTIONS: '--max-old-space-size=512',
      HOOKRELAY_HOST: '127.0.0.1',
      HOOKRELAY_PORT: '9000',
      HOOKRELAY_DATA_DIR: '/tmp/dev',
      HOOKRELAY_BOOTSTRAP_API_KEY: KEY,
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
      HOOKRELAY_PUBLIC_URL: 'http://127.0.0.1:9000',
    });
  });
});

describe('the embedded server', () => {
  it('is the installed @hookrelay/server package', () => {
    const main = resolveServerMain();
    expect(main).toMatch(/server[\\/]dist[\\/]bin[\\/]hookrelay-server\.js$/u);
  });

  it('is ready at its listening line', () => {
    expect(LISTENING_LINE.exec('{"level":30}\nhookrelay-server listening on http://127.0.0.1:8787\n')?.[1]).toBe('http://127.0.0.1:8787');
  });

  it('explains a failed start', () => {
    expect(describeStartFailure('hookrelay-server: Error: listen EADDRINUSE: address already in use 127.0.0.1:8787\n    at Server.setupListenHandle', 8787, '/d/server.log')).toEqual({
      message: 'port 8787 is already in use',
      hint: expect.stringContaining('--port') as string,
    });
    const locked = describeStartFailure('hookrelay-server: the data dir /d is in use by hookrelay-server start (pid 42); stop it first\n', 8787, '/d/server.log');
    expect(locked.message).toBe('the data dir /d is in use by hookrelay-server start (pid 42); stop it first');
    expect(locked.hint).toContain('--data-dir');
    expect(describeStartFailure('{"level":50,"msg":"boom"}\n', 1, '/l').message).toBe('boom');
    expect(describeStartFailure('', 1, '/l').message).toBe('no output');
  });
});

describe('dev state', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('keeps only well-formed fields', () => {
    expect(parseDevState(JSON.stringify({ api_key: KEY, inbound_endpoint_id: ENDPOINT }))).toEqual({ api_key: KEY, inbound_endpoint_id: ENDPOINT });
    expect(parseDevState(JSON.stringify({ api_key: 'short', inbound_endpoint_id: 'nope' }))).toEqual({});
    expect(parseDevState('not json')).toEqual({});
    expect(parseDevState('[1]')).toEqual({});
  });

  it('is written with mode 0600 and read back; a missing file is empty', async () => {
    dir = await mkdtemp(join(tmpdir(), 'hookrelay-dev-state-'));
    expect(await readDevState(dir)).toEqual({});
    await writeDevState(join(dir, 'nested'), { api_key: KEY });
    expect(await readDevState(join(dir, 'nested'))).toEqual({ api_key: KEY });
    expect((await stat(join(dir, 'nested', 'dev.json'))).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(join(dir, 'nested', 'dev.json'), 'utf8'))).toEqual({ api_key: KEY });
    expect(existsSync(join(dir, 'nested', `dev.json.${process.pid}.tmp`))).toBe(false);
  });

  it("reads the key a server wrote into its data dir", async () => {
    dir = await mkdtemp(join(tmpdir(), 'hookrelay-dev-state-'));
    expect(await readServerBootstrapKey(dir)).toBeUndefined();
    await writeFile(join(dir, 'bootstrap-api-key'), `${KEY}\n`);
    expect(await readServerBootstrapKey(dir)).toBe(KEY);
  });
});
