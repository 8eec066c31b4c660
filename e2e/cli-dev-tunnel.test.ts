import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeConfigDir, parseJsonError, runCli } from './helpers/cli.js';
import { LocalApp, startCli, until, type ListenProcess } from './helpers/listen.js';
import { freePort, processAlive } from './helpers/processes.js';

/**
 * `hookrelay dev --tunnel [cloudflared|ngrok]` with stand-ins of the two programs on PATH
 * (helpers/tunnel-standin.mjs: the real programs' lines, and an HTTP proxy as their edge). dev
 * points the tunnel at an ingest-only port, shows the tunnel's https address in every ingest URL,
 * and stops the program on exit; a webhook sent through the "public" address reaches the local app.
 */

const STANDIN = fileURLToPath(new URL('./helpers/tunnel-standin.mjs', import.meta.url));

interface ReadyLine {
  ingest_url: string;
  inbound_endpoint_id: string;
  api_url: string;
  inspector_url: string;
  tunnel: { program: string; public_url: string } | null;
}

interface StandinState {
  program: string;
  url: string;
  local: string;
  pid: number;
}

let work: string;
let app: LocalApp;
const processes: ListenProcess[] = [];
/** Stand-ins run in their own process group: a dev killed by a failing test cannot stop them, so the file does. */
const standins = new Set<number>();

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-tunnel-'));
  app = await LocalApp.start((request, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`got ${request.url}`));
});
afterAll(async () => {
  for (const cli of processes) cli.kill();
  for (const pid of standins) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  await app?.stop();
  await rm(work, { recursive: true, force: true });
});

/** A directory holding stand-ins named after the real programs, to be PATH. */
async function standinBin(name: string, programs: readonly string[]): Promise<string> {
  const dir = join(work, name);
  await mkdir(dir);
  for (const program of programs) {
    await writeFile(join(dir, program), `#!/bin/sh\nexec "${process.execPath}" "${STANDIN}" ${program} "$@"\n`);
    await chmod(join(dir, program), 0o755);
  }
  return dir;
}

/** Runs dev with a tunnel, returns its ready line and the stand-in's state once both are there. */
async function devWithTunnel(program: 'cloudflared' | 'ngrok', extra: string[]): Promise<{ cli: ListenProcess; ready: ReadyLine; standin: StandinState }> {
  const bin = await standinBin(`bin-${program}`, [program]);
  const state = join(work, `${program}.json`);
  const configDir = await makeConfigDir();
  const cli = startCli(['dev', '--forward-to', `http://127.0.0.1:${app.port}`, '--port', String(await freePort()), '--json', ...extra], {
    env: { PATH: bin, TUNNEL_STANDIN_STATE: state },
    configDir,
  });
  processes.push(cli);
  await until(() => cli.stdout.includes('\n'), 'the ready line', 90_000, () => cli.explain());
  const ready = JSON.parse(cli.stdout.split('\n')[0]!) as ReadyLine;
  const standin = JSON.parse(await readFile(state, 'utf8')) as StandinState;
  standins.add(standin.pid);
  return { cli, ready, standin };
}

/** A POST through the stand-in's edge, addressed to the public URL's host. */
async function throughTunnel(standin: StandinState, path: string, init: { method?: string; body?: string } = {}): Promise<Response> {
  return fetch(`${standin.local}${path}`, {
    method: init.method ?? 'POST',
    headers: { host: new URL(standin.url).host, 'content-type': 'application/json', 'x-github-event': 'push' },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
}

describe('hookrelay dev --tunnel', () => {
  it('cloudflared (the default): ingest URLs carry the quick tunnel address, a webhook through it reaches the app, the API does not, and Ctrl-C stops the program', async () => {
    const { cli, ready, standin } = await devWithTunnel('cloudflared', ['--tunnel']);
    expect(standin.url).toMatch(/^https:\/\/[a-z-]+\.trycloudflare\.com$/u);
    expect(ready.tunnel).toEqual({ program: 'cloudflared', public_url: standin.url });
    expect(ready.ingest_url.startsWith(`${standin.url}/in/`)).toBe(true);
    const apiKey = new URLSearchParams(new URL(ready.inspector_url).hash.slice(1)).get('key')!;
    // The API of that dev server shows the same address.
    const record = (await (await fetch(`${ready.api_url}/v1/inbound-endpoints/${ready.inbound_endpoint_id}`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as { data: { ingest_url: string } };
    expect(record.data.ingest_url).toBe(ready.ingest_url);

    const path = new URL(ready.ingest_url).pathname;
    const sent = await throughTunnel(standin, `${path}/github?via=tunnel`, { body: '{"through":"cloudflared"}' });
    expect(sent.status).toBe(200);
    await until(() => app.requests.some((r) => r.body.toString() === '{"through":"cloudflared"}'), 'the webhook at the app', 20_000, () => cli.explain());
    expect(app.requests.find((r) => r.body.toString() === '{"through":"cloudflared"}')!.url).toBe('/github?via=tunnel');
    // Only the ingest URLs are public: the tunnel leads to the ingest-only port.
    const api = await throughTunnel(standin, '/v1/whoami', { method: 'GET' });
    expect(api.status).toBe(404);
    expect(((await api.json()) as { error: { code: string } }).error.code).toBe('ROUTE_NOT_FOUND');

    expect(processAlive(standin.pid)).toBe(true);
    expect(await cli.stop('SIGINT', 30_000)).toBe(0);
    await until(() => !processAlive(standin.pid), 'the tunnel program to stop', 10_000);
  });

  it('ngrok: the address from its JSON log, and SIGTERM stops it', async () => {
    const { cli, ready, standin } = await devWithTunnel('ngrok', ['--tunnel', 'ngrok']);
    expect(standin.url).toMatch(/^https:\/\/[0-9a-f]{4}-[0-9a-f]{4}\.ngrok-free\.app$/u);
    expect(ready.tunnel).toEqual({ program: 'ngrok', public_url: standin.url });
    expect(ready.ingest_url.startsWith(`${standin.url}/in/`)).toBe(true);
    const sent = await throughTunnel(standin, new URL(ready.ingest_url).pathname, { body: '{"through":"ngrok"}' });
    expect(sent.status).toBe(200);
    await until(() => app.requests.some((r) => r.body.toString() === '{"through":"ngrok"}'), 'the webhook at the app', 20_000, () => cli.explain());
    expect(await cli.stop('SIGTERM', 30_000)).toBe(0);
    await until(() => !processAlive(standin.pid), 'the tunnel program to stop', 10_000);
  });

  it('without the program: CONFIG_ERROR (exit 1) saying how to install it, and no server started', async () => {
    const empty = await standinBin('bin-empty', []);
    const configDir = await makeConfigDir();
    const result = await runCli(['dev', '--forward-to', '3000', '--tunnel', '--json'], { env: { PATH: empty }, configDir, timeoutMs: 30_000 });
    expect(result.code).toBe(1);
    const error = parseJsonError(result).error;
    expect(error).toMatchObject({ code: 'CONFIG_ERROR', message: '--tunnel cloudflared: cloudflared is not installed (not found on PATH)' });
    const human = await runCli(['dev', '--forward-to', '3000', '--tunnel', 'ngrok'], { env: { PATH: empty }, configDir, timeoutMs: 30_000 });
    expect(human.code).toBe(1);
    expect(human.stderr).toContain('CONFIG_ERROR: --tunnel ngrok: ngrok is not installed (not found on PATH)');
    expect(human.stderr).toContain('https://ngrok.com/download');
    await expect(readFile(join(configDir, 'dev', 'hookrelay.pid'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a program that prints no URL: a timeout with its last lines, and it is stopped', async () => {
    const bin = await standinBin('bin-silent', ['cloudflared']);
    const configDir = await makeConfigDir();
    const started = Date.now();
    const result = await runCli(['dev', '--forward-to', '3000', '--tunnel', '--tunnel-timeout', '2s'], {
      env: { PATH: bin, TUNNEL_STANDIN_MODE: 'silent', TUNNEL_STANDIN_STATE: join(work, 'silent.json') },
      configDir,
      timeoutMs: 30_000,
    });
    expect(result.code).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect(result.stderr).toContain('CLI_ERROR: cloudflared printed no public URL within 2 s; its last lines:');
    expect(result.stderr).toContain('(it printed nothing)');
    const { pid } = JSON.parse(await readFile(join(work, 'silent.json'), 'utf8')) as { pid: number };
    standins.add(pid);
    await until(() => !processAlive(pid), 'the silent program to be stopped', 10_000);
  });

  it('refuses --tunnel with --public-url, and an unknown program (exit 2)', async () => {
    const both = await runCli(['dev', '--tunnel', '--public-url', 'https://example.com', '--json'], { timeoutMs: 30_000 });
    expect(both.code).toBe(2);
    expect(parseJsonError(both).error.code).toBe('INVALID_ARGUMENTS');
    const unknown = await runCli(['dev', '--tunnel=localtunnel', '--json'], { timeoutMs: 30_000 });
    expect(unknown.code).toBe(2);
  });
});
