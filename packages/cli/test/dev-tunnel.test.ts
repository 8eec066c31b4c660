import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTunnelDefault } from '../src/commands/dev.js';
import { earlyServerOptions } from '../src/dev/early-start.js';
import { embeddedServerEnv } from '../src/dev/embedded-server.js';
import { SERVER_DATABASE_DIR } from '../src/dev/layout.js';

describe('--tunnel on the command line', () => {
  it('a bare --tunnel means cloudflared; a named program stays; nothing after -- changes', () => {
    expect(withTunnelDefault(['--tunnel'])).toEqual(['--tunnel', 'cloudflared']);
    expect(withTunnelDefault(['--tunnel', '-f', '3000'])).toEqual(['--tunnel', 'cloudflared', '-f', '3000']);
    expect(withTunnelDefault(['-f', '3000', '--tunnel', 'ngrok'])).toEqual(['-f', '3000', '--tunnel', 'ngrok']);
    expect(withTunnelDefault(['--tunnel=ngrok'])).toEqual(['--tunnel=ngrok']);
    expect(withTunnelDefault(['--', '--tunnel'])).toEqual(['--', '--tunnel']);
  });
});

describe('the embedded server of a tunnel', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hookrelay-dev-tunnel-'));
    await mkdir(join(dir, 'dev', SERVER_DATABASE_DIR), { recursive: true });
    await writeFile(join(dir, 'dev', 'dev.json'), JSON.stringify({ api_key: 'hr_test' }));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is not started early: its public URL is known only once the tunnel runs', () => {
    const env = { HOOKRELAY_CONFIG_DIR: dir };
    expect(earlyServerOptions(['--forward-to', '3000'], env, '/nonexistent', '/x.js')).toBeDefined();
    expect(earlyServerOptions(['--forward-to', '3000', '--tunnel'], env, '/nonexistent', '/x.js')).toBeUndefined();
    expect(earlyServerOptions(['--tunnel=ngrok'], env, '/nonexistent', '/x.js')).toBeUndefined();
  });

  it('gets the ingest-only port in its environment', () => {
    const env = embeddedServerEnv({ dataDir: '/d', port: 8787, apiKey: 'k', publicUrl: 'https://a.trycloudflare.com', ingestPort: 40001, env: { HOOKRELAY_INGEST_PORT: '1' } });
    expect(env).toMatchObject({ HOOKRELAY_INGEST_PORT: '40001', HOOKRELAY_PUBLIC_URL: 'https://a.trycloudflare.com', HOOKRELAY_PORT: '8787' });
    expect(embeddedServerEnv({ dataDir: '/d', port: 8787, apiKey: 'k', env: { HOOKRELAY_INGEST_PORT: '1' } }).HOOKRELAY_INGEST_PORT).toBeUndefined();
  });
});
