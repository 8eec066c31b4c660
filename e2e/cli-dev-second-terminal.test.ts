import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeConfigDir, parseJsonOutput, runCli } from './helpers/cli.js';
import { LocalApp, startCli, until, type ListenProcess } from './helpers/listen.js';
import { freePort } from './helpers/processes.js';

/**
 * A second terminal beside `hookrelay dev`: dev leaves a marker in the CLI's configuration
 * directory while it runs, so `trigger`, `open` and `inbound …` reach its server without flags;
 * `trigger` on dev's endpoint (it verifies nothing) sends an unsigned sample and says so. Flags and
 * the environment still win, a named profile wins, and a marker whose process is gone counts for
 * nothing.
 */

let configDir: string;
let app: LocalApp;
let dev: ListenProcess;
let ready: { ingest_url: string; inbound_endpoint_id: string; api_url: string; inspector_url: string };

beforeAll(async () => {
  configDir = await makeConfigDir();
  app = await LocalApp.start((request, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`got ${request.url}`));
  dev = startCli(['dev', '--forward-to', `http://127.0.0.1:${app.port}`, '--port', String(await freePort()), '--json'], { env: {}, configDir });
  await until(() => dev.stdout.includes('\n') || !dev.running, 'the ready line', 120_000, () => dev.explain());
  ready = JSON.parse(dev.stdout.split('\n')[0]!) as typeof ready;
});
afterAll(async () => {
  dev?.kill();
  await app?.stop();
  await rm(configDir, { recursive: true, force: true });
});

const second = (args: string[], env: Record<string, string> = {}) => runCli(args, { configDir, env });

describe('a second terminal while hookrelay dev runs', () => {
  it('trigger without flags sends an unsigned sample to dev\'s endpoint, says so, and the app gets it', async () => {
    const human = await second(['trigger', ready.inbound_endpoint_id, 'github', 'push']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('(unsigned: the endpoint verifies nothing and has no secret to sign with)');
    const json = await second(['trigger', ready.inbound_endpoint_id, 'stripe', 'invoice.paid', '--json']);
    expect(json.code, json.stderr).toBe(0);
    const result = parseJsonOutput<{ message_id: string; signed: boolean; signed_by: string; ingest_status: number }>(json);
    expect(result).toMatchObject({ signed: false, signed_by: 'none', ingest_status: 200 });
    const header = (r: { headers: [string, string][] }, name: string) => r.headers.find(([key]) => key.toLowerCase() === name)?.[1];
    await until(() => app.requests.filter((r) => header(r, 'x-github-event') === 'push' || /invoice\.paid/u.test(r.body.toString())).length >= 2, 'both samples at the app', 20_000, () => dev.explain());
    const push = app.requests.find((r) => header(r, 'x-github-event') === 'push')!;
    expect(header(push, 'x-hub-signature-256')).toBeUndefined();
    const invoice = app.requests.find((r) => /invoice\.paid/u.test(r.body.toString()))!;
    expect(header(invoice, 'stripe-signature')).toBeUndefined();
  });

  it('whoami, inbound get and open use the dev server and its key', async () => {
    const whoami = await second(['whoami', '--json']);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(parseJsonOutput<{ api_url: string; profile: string | null }>(whoami)).toMatchObject({ api_url: ready.api_url, profile: null });
    const human = await second(['whoami']);
    expect(human.stdout).toMatch(/Key from:\s+the running hookrelay dev/u);
    const endpoint = await second(['inbound', 'get', ready.inbound_endpoint_id, '--json']);
    expect(endpoint.code, endpoint.stderr).toBe(0);
    expect(parseJsonOutput<{ ingest_url: string }>(endpoint).ingest_url).toBe(ready.ingest_url);
    const open = await second(['open', ready.inbound_endpoint_id, '--print', '--json']);
    expect(parseJsonOutput<{ url: string }>(open).url).toBe(ready.inspector_url);
  });

  it('a flag or the environment wins, and so does a named profile', async () => {
    // Another address given: the dev server's key is not sent there either (no key: exit 3).
    const elsewhere = await second(['whoami', '--json'], { HOOKRELAY_API_URL: 'http://127.0.0.1:1' });
    expect(elsewhere.code).toBe(3);
    const flag = await second(['whoami', '--api-url', 'http://127.0.0.1:1', '--json']);
    expect(flag.code).toBe(3);
    expect((await second(['whoami', '--api-url', 'http://127.0.0.1:1', '--api-key', `hr_${'3'.repeat(40)}`, '--json'])).code).toBe(7);
    await writeFile(join(configDir, 'config.json'), JSON.stringify({ current_profile: 'remote', profiles: { remote: { api_url: 'http://127.0.0.1:1', api_key: `hr_${'1'.repeat(40)}` } } }));
    // The current profile of config.json does not outrank the running dev; a named one does.
    expect((await second(['whoami', '--json'])).code).toBe(0);
    expect((await second(['whoami', '--profile', 'remote', '--json'])).code).toBe(7);
    expect((await second(['whoami', '--json'], { HOOKRELAY_PROFILE: 'remote' })).code).toBe(7);
    await rm(join(configDir, 'config.json'));
  });

  it('the marker goes with dev; a marker whose process is gone counts for nothing', async () => {
    const markerPath = join(configDir, 'dev-running.json');
    const marker = JSON.parse(await readFile(markerPath, 'utf8')) as { pid: number; api_url: string };
    expect(marker.api_url).toBe(ready.api_url);
    expect(await dev.stop('SIGINT', 30_000)).toBe(0);
    await expect(readFile(markerPath)).rejects.toMatchObject({ code: 'ENOENT' });
    // A marker left behind by a process that is gone (a crash): the default address is used.
    await writeFile(markerPath, JSON.stringify({ ...marker, pid: 2 ** 22 + 7 }));
    const stale = await second(['whoami', '--json']);
    expect(stale.code).toBe(3);
    expect(JSON.parse(stale.stderr)).toMatchObject({ error: { code: 'NO_API_KEY' } });
  });
});
