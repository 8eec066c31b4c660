import { readdirSync, readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeConfigDir, parseJsonError, runCli } from './helpers/cli.js';
import { LocalApp, sendWebhook, startCli, until, type ListenProcess } from './helpers/listen.js';
import { freePort, processAlive } from './helpers/processes.js';

/**
 * `hookrelay dev` end to end: the built CLI starts the real server (its own child process, PGlite
 * in a temp config dir, on a free port), a cli-mode endpoint and the listener; a webhook posted to
 * the printed ingest URL reaches a local app; Ctrl-C stops both with exit 0.
 */

interface ReadyLine {
  type: string;
  ingest_url: string;
  inbound_endpoint_id: string;
  api_url: string;
  inspector_url: string;
  tunnel: null;
  endpoints: { provider: string | null; inbound_endpoint_id: string; ingest_url: string; inspector_url: string }[];
}

interface DeliveryLine {
  message_id: string;
  status: number | null;
  path: string;
  error: string | null;
}

let configDir: string;
let app: LocalApp;
let port: number;
const processes: ListenProcess[] = [];
const serverPids = new Set<number>();

/** The embedded server's pid, from the data dir's lock file (the server writes it while it runs). */
async function serverPid(): Promise<number> {
  const pid = Number.parseInt((await readFile(join(configDir, 'dev', 'hookrelay.pid'), 'utf8')).split('\n')[0] ?? '', 10);
  serverPids.add(pid);
  return pid;
}

/** The live processes whose environment names the dev data dir: its servers, early-started or not. */
function devServers(): number[] {
  const marker = `\0HOOKRELAY_DATA_DIR=${join(configDir, 'dev')}\0`;
  return readdirSync('/proc')
    .filter((name) => /^\d+$/u.test(name))
    .filter((pid) => {
      try {
        return `\0${readFileSync(`/proc/${pid}/environ`, 'latin1')}`.includes(marker);
      } catch {
        return false; // gone, or not ours to read
      }
    })
    .map(Number);
}

async function refused(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(5_000) });
    return false;
  } catch {
    return true;
  }
}

function dev(args: string[]): ListenProcess {
  const cli = startCli(['dev', ...args], { env: {}, configDir });
  processes.push(cli);
  return cli;
}

function readyLine(cli: ListenProcess): ReadyLine | undefined {
  const first = cli.stdout.split('\n')[0];
  if (first === undefined || !cli.stdout.includes('\n')) return undefined;
  return JSON.parse(first) as ReadyLine;
}

function deliveries(cli: ListenProcess): DeliveryLine[] {
  return cli.records<DeliveryLine & { type?: string }>().filter((line) => line.type === undefined);
}

beforeAll(async () => {
  configDir = await makeConfigDir();
  app = await LocalApp.start((request, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`got ${request.url}`));
  port = await freePort();
});

afterAll(async () => {
  for (const cli of processes) cli.kill();
  for (const pid of serverPids) {
    if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  }
  await app?.stop();
  await rm(configDir, { recursive: true, force: true });
});

describe('hookrelay dev', () => {
  let first: ReadyLine;

  it('starts a server and a cli endpoint, prints the ingest URL first, and forwards a webhook to the local app', async () => {
    const cli = dev(['--forward-to', `http://127.0.0.1:${app.port}/hooks`, '--port', String(port), '--json']);
    await until(() => readyLine(cli) !== undefined || !cli.running, 'the ready line', 120_000, () => cli.explain());
    const ready = readyLine(cli);
    expect(ready, cli.explain()).toBeDefined();
    first = ready!;
    expect(Object.keys(first)).toEqual(['type', 'ingest_url', 'inbound_endpoint_id', 'api_url', 'inspector_url', 'tunnel', 'endpoints']);
    expect(first.tunnel).toBeNull();
    // Without --verify, one endpoint that verifies nothing: the top-level fields are its own.
    expect(first.endpoints).toEqual([{ provider: null, inbound_endpoint_id: first.inbound_endpoint_id, ingest_url: first.ingest_url, inspector_url: first.inspector_url }]);
    expect(first.type).toBe('ready');
    expect(first.api_url).toBe(`http://127.0.0.1:${port}`);
    expect(first.ingest_url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/in/[0-9a-f]{32}$`, 'u'));
    const pid = await serverPid();
    expect(processAlive(pid)).toBe(true);

    // The endpoint exists in cli mode on the embedded server, with the key dev stored.
    const state = JSON.parse(await readFile(join(configDir, 'dev', 'dev.json'), 'utf8')) as { api_key: string; inbound_endpoint_id: string };
    expect(state.inbound_endpoint_id).toBe(first.inbound_endpoint_id);
    expect(first.inspector_url).toBe(`http://127.0.0.1:${port}/#key=${state.api_key}&endpoint=${first.inbound_endpoint_id}`);
    const got = await runCli(['inbound', 'get', first.inbound_endpoint_id, '--json'], {
      env: { HOOKRELAY_API_URL: first.api_url, HOOKRELAY_API_KEY: state.api_key },
    });
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ mode: 'cli', ingest_url: first.ingest_url });

    const token = first.ingest_url.split('/in/')[1]!;
    // Sent at once after the ready line, perhaps before the listener is connected: dev starts with
    // the endpoint's first message, so nothing sent to the printed URL is skipped.
    const sent = await sendWebhook(`http://127.0.0.1:${port}`, token, {
      pathAndQuery: '/github/push?x=1',
      headers: [['Content-Type', 'application/json'], ['X-GitHub-Event', 'push']],
      body: '{"ref":"refs/heads/main"}',
    });
    await until(() => deliveries(cli).length >= 1, 'the delivery line', 30_000, () => cli.explain());
    expect(deliveries(cli)[0]).toMatchObject({ message_id: sent.messageId, status: 200, path: '/github/push', error: null });
    const received = app.requests.find((request) => request.url === '/hooks/github/push?x=1');
    expect(received, JSON.stringify(app.requests.map((request) => request.url))).toBeDefined();
    expect(received!.method).toBe('POST');
    expect(received!.body.toString('utf8')).toBe('{"ref":"refs/heads/main"}');
    expect(received!.headers.find(([name]) => name.toLowerCase() === 'x-github-event')?.[1]).toBe('push');

    // Ctrl-C: the listener stops, then the server; exit 0.
    expect(await cli.stop('SIGINT', 30_000)).toBe(0);
    expect(processAlive(pid)).toBe(false);
    expect(await refused(`${first.api_url}/healthz`)).toBe(true);
  });

  it('a restart reuses the key, the endpoint and its ingest URL; human output shows the URL on stderr', async () => {
    expect(first, 'the first test must pass').toBeDefined();
    const cli = dev(['--forward-to', `127.0.0.1:${app.port}/hooks`, '--port', String(port)]);
    await cli.waitForStderr(/connected \(websocket\)/u, 120_000);
    expect(cli.stderr).toMatch(/^Ingest URL \(send webhooks here\):$/mu);
    expect(cli.stderr).toContain(`  ${first.ingest_url}\n`);
    expect(cli.stderr).toContain(`Forwarding inbound endpoint ${first.inbound_endpoint_id}`);
    expect(cli.stdout).toBe('');
    const pid = await serverPid();

    const token = first.ingest_url.split('/in/')[1]!;
    const before = app.requests.length;
    await sendWebhook(`http://127.0.0.1:${port}`, token, { pathAndQuery: '/again', body: 'plain text', headers: [['Content-Type', 'text/plain']] });
    await app.waitFor(before + 1, 30_000);
    await cli.waitForStderr(/POST \/again {2}200 /u, 20_000);

    expect(await cli.stop('SIGINT', 30_000)).toBe(0);
    expect(cli.stderr).toMatch(/stopping the embedded server/u);
    expect(processAlive(pid)).toBe(false);
  });

  it('a port in use is a clear failure (exit 1), and no server is left running', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const busy = (blocker.address() as { port: number }).port;
    try {
      const result = await runCli(['dev', '--forward-to', '3000', '--port', String(busy), '--json'], { configDir, timeoutMs: 120_000 });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stdout).toBe('');
      const { error } = parseJsonError(result);
      expect(error.code).toBe('CLI_ERROR');
      expect(error.message).toContain(`port ${busy} is already in use`);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
    // The data dir is free again: nothing holds its lock.
    await expect(readFile(join(configDir, 'dev', 'hookrelay.pid'), 'utf8')).rejects.toThrow(/ENOENT/u);
  });

  it('bad flags exit 2, and leave no server running', async () => {
    for (const args of [[], ['--forward-to', 'not a target'], ['--forward-to', '3000', '--port', '70000'], ['--forward-to', '3000', '--timeout', 'soon'], ['--forward-to', '3000', '--public-url', 'nope']]) {
      // On the test's free port: an early-started server must not take 8787 from anything else.
      const withPort = args.includes('--port') ? args : [...args, '--port', String(port)];
      const result = await runCli(['dev', ...withPort, '--json'], { configDir });
      expect(result.code, result.stderr).toBe(2);
      expect(parseJsonError(result).error.code).toBe('INVALID_ARGUMENTS');
      // The data dir was used before, so bin/run.js started its server early (src/dev/early-start.ts);
      // the failed command stopped it.
      await until(() => devServers().length === 0, 'no server of the dev data dir', 20_000, () => `still running: ${devServers().join(', ')}`);
    }
  });
});
