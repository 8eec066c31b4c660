import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sign, verify } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonError, parseJsonOutput, runCli } from './helpers/cli.js';
import { testResources } from './helpers/fixture.js';
import { api, createCliEndpoint, delay, sendWebhook, until, type ListenProcess } from './helpers/listen.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * `hookrelay listen` end to end: the real server (PGlite), the built CLI as a subprocess, and a
 * local HTTP app that records exactly what it receives.
 */

let server: RunningServer;
let env: Record<string, string>;
const { configDir, localApp, cleanup, listen: listenWith } = testResources();

beforeAll(async () => {
  server = await startServer();
  env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
});

afterAll(async () => {
  await cleanup();
  await server?.stop();
});

function listen(args: string[], dir: string, extraEnv: Record<string, string> = {}): ListenProcess {
  return listenWith(args, dir, { ...env, ...extraEnv });
}

/** The header lines a sender's HTTP client adds itself, and the listener's undici too. */
const TRANSPORT_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding']);

function withoutTransportHeaders(headers: [string, string][]): [string, string][] {
  return headers.filter(([name]) => !TRANSPORT_HEADERS.has(name.toLowerCase()));
}

function header(headers: [string, string][], name: string): string[] {
  return headers.filter(([n]) => n.toLowerCase() === name).map(([, value]) => value);
}

async function messageRecord(id: string): Promise<{ status: string; attempt_count: number; response_status: number | null; replay_count: number }> {
  return api(server.url, server.apiKey, 'GET', `/v1/inbound-messages/${id}`);
}

describe('hookrelay listen: exact forwarding', () => {
  it('delivers binary, JSON and form bodies byte for byte, with method, sub-path, query and header lines', async () => {
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const cli = listen([endpoint.id, '--forward-to', `${app.url}/hooks`], await configDir());
    await cli.waitForStderr(/connected \(websocket\)/u);

    const binary = Buffer.concat([Buffer.from([0, 0, 1, 0xff, 0xfe, 0x0d, 0x0a, 0x80]), randomBytes(4096)]);
    const json = Buffer.from('{ "zeta" : 1,\n\t"alpha":[ 1 ,2.50, -0 ],   "nested": {"y":null , "b":"é ☃ \\u00e9"}, "big": 12345678901234567890 }  \n');
    const form = Buffer.from('b=%20x+y&a=1&a=2&empty=&emoji=%F0%9F%98%80');
    const cases = [
      {
        method: 'PUT',
        pathAndQuery: '/files/upload?name=a%20b.bin&v=1&v=2',
        forwardedUrl: '/hooks/files/upload?name=a%20b.bin&v=1&v=2',
        headers: [
          ['Content-Type', 'application/octet-stream'],
          ['X-Dup', 'one'],
          ['X-Dup', 'two'],
          ['X-Custom-Case', 'MiXeD value'],
        ] as [string, string][],
        body: binary,
      },
      {
        method: 'POST',
        pathAndQuery: '/github/push',
        forwardedUrl: '/hooks/github/push',
        headers: [
          ['User-Agent', 'Provider-Hookshot/1.0'],
          ['Content-Type', 'application/json; charset=utf-8'],
          ['Accept', '*/*'],
        ] as [string, string][],
        body: json,
      },
      {
        method: 'POST',
        pathAndQuery: '?source=form',
        forwardedUrl: '/hooks?source=form',
        headers: [['Content-Type', 'application/x-www-form-urlencoded']] as [string, string][],
        body: form,
      },
      {
        method: 'DELETE',
        pathAndQuery: '/items/42/?soft=true',
        forwardedUrl: '/hooks/items/42/?soft=true',
        headers: [['X-Request-Id', 'abc-123']] as [string, string][],
        body: undefined,
      },
    ];
    const ids: string[] = [];
    for (const c of cases) ids.push((await sendWebhook(server.url, endpoint.token, c)).messageId);
    await app.waitFor(cases.length);

    cases.forEach((c, i) => {
      const got = app.requests[i]!;
      expect(got.method, `case ${i}`).toBe(c.method);
      expect(got.url, `case ${i}`).toBe(c.forwardedUrl);
      expect(got.body.equals(c.body ?? Buffer.alloc(0)), `case ${i} body`).toBe(true);
      expect(withoutTransportHeaders(got.headers), `case ${i} headers`).toEqual(c.headers);
      expect(header(got.headers, 'host')).toEqual([`127.0.0.1:${app.port}`]);
      expect(header(got.headers, 'content-length')).toEqual(c.body === undefined ? [] : [String(c.body.length)]);
      expect(header(got.headers, 'transfer-encoding')).toEqual([]);
    });

    await until(
      () => cli.stderr.split('\n').filter((line) => / 200 {2}\d+ ms {2}/u.test(line)).length === cases.length,
      'one line per delivery',
      10_000,
      () => cli.explain(),
    );
    for (const [i, id] of ids.entries()) {
      const line = cli.stderr.split('\n').find((l) => l.includes(id));
      expect(line, cli.explain()).toMatch(new RegExp(`^\\d\\d:\\d\\d:\\d\\d  ${cases[i]!.method} \\S+  200  \\d+ ms  ${id}$`, 'u'));
    }
    expect(await cli.stop()).toBe(0);
    expect(cli.stdout).toBe('');
  });

  it('a GitHub-signed payload still verifies at the local app (and at the server)', async () => {
    const secret = `It's a Secret to Everybody ${randomUUID()}`;
    const verified: boolean[] = [];
    const app = await localApp((request, res) => {
      const signature = header(request.headers, 'x-hub-signature-256')[0] ?? '';
      void verify(secret, request.body.toString('utf8'), signature).then(
        (ok) => {
          verified.push(ok);
          res.writeHead(ok ? 204 : 401).end();
        },
        () => {
          verified.push(false);
          res.writeHead(500).end();
        },
      );
    });
    const endpoint = await createCliEndpoint(server.url, server.apiKey, { verify_hmac: true, hmac_scheme: 'github', hmac_secret: secret });
    const cli = listen([endpoint.id, '-f', `${app.url}/github`], await configDir());
    await cli.waitForStderr(/connected \(websocket\)/u);

    const payload = `{"action":"opened",  "number": 7,\n "pull_request": {"title": "Ünïcödé ✓ \\"quoted\\"", "body": null}, "sender":{"login":"octocat"}}`;
    const signature = await sign(secret, payload);
    const { messageId } = await sendWebhook(server.url, endpoint.token, {
      headers: [
        ['User-Agent', 'GitHub-Hookshot/044aadd'],
        ['Content-Type', 'application/json'],
        ['X-GitHub-Event', 'pull_request'],
        ['X-GitHub-Delivery', randomUUID()],
        ['X-GitHub-Hook-ID', '292430182'],
        ['X-Hub-Signature-256', signature],
      ],
      body: payload,
    });
    await app.waitFor(1);
    expect(verified).toEqual([true]);
    expect(app.requests[0]!.url).toBe('/github');
    await until(() => cli.stderr.includes(messageId), 'the delivery line', 10_000, () => cli.explain());
    // The line names the provider its headers show and the event type.
    expect(cli.stderr).toMatch(new RegExp(`POST /  github pull_request  204  \\d+ ms  ${messageId}$`, 'mu'));
    // The app's answer was reported to the server.
    let record = await messageRecord(messageId);
    for (let i = 0; i < 100 && record.attempt_count === 0; i++) {
      await delay(50);
      record = await messageRecord(messageId);
    }
    expect(record).toMatchObject({ status: 'succeeded', attempt_count: 1, response_status: 204 });
    expect(await cli.stop()).toBe(0);
  });
});

describe('hookrelay listen: never loses a message', () => {
  it('resume: stopped, 20 webhooks sent, started again: all 20 arrive exactly once, in order', async () => {
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    // Sent before the very first run: a first run starts from now, so this one is not delivered.
    await sendWebhook(server.url, endpoint.token, { body: '{"before":"first run"}', headers: [['Content-Type', 'application/json']] });
    const dir = await configDir();

    const first = listen([endpoint.id, '-f', app.url], dir);
    await first.waitForStderr(/connected \(websocket\)/u);
    expect(first.stderr).toContain('first run on this endpoint: starting from now');
    const { messageId: firstId } = await sendWebhook(server.url, endpoint.token, { body: '{"n":0}', headers: [['Content-Type', 'application/json']] });
    await app.waitFor(1);
    await until(() => first.stderr.includes(firstId), 'the first delivery line', 10_000, () => first.explain());
    expect(await first.stop('SIGINT')).toBe(0);
    expect(first.stderr).toMatch(/stopped\. Listener "default" resumes after/u);

    const sent: string[] = [];
    for (let n = 1; n <= 20; n++) sent.push((await sendWebhook(server.url, endpoint.token, { body: `{"n":${n}}`, headers: [['Content-Type', 'application/json']] })).messageId);

    const cursorFile = join(dir, 'cursors', 'default', `${endpoint.id}.json`);
    expect(JSON.parse(await readFile(cursorFile, 'utf8'))).toMatchObject({ endpoint_id: endpoint.id, cursor: firstId });

    const second = listen([endpoint.id, '-f', app.url], dir);
    await app.waitFor(21, 30_000);
    await second.waitForStderr(/caught up: 20 messages from the backlog forwarded/u);
    await delay(500);
    expect(app.requests.map((r) => JSON.parse(r.body.toString()).n)).toEqual(Array.from({ length: 21 }, (_, n) => n));
    expect(second.stderr).toContain(`resuming after ${firstId}`);
    for (const id of sent) expect(second.stderr.split('\n').filter((line) => line.includes(id))).toHaveLength(1);
    expect(await second.stop()).toBe(0);
    expect(JSON.parse(await readFile(cursorFile, 'utf8')).cursor).toBe(sent[19]);
  });

  it('two listeners on one endpoint each get every message, each with a cursor of its own', async () => {
    const appA = await localApp();
    const appB = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const dir = await configDir();
    const a = listen([endpoint.id, '-f', appA.url], dir);
    await a.waitForStderr(/connected \(websocket\)/u);
    const b = listen([endpoint.id, '-f', appB.url], dir);
    await b.waitForStderr(/connected \(websocket\)/u);
    expect(a.stderr).toContain('listener "default"');
    expect(b.stderr).toContain('listener "2"');

    // A third one cannot take a name that is running.
    const clash = await runCli(['listen', endpoint.id, '-f', appA.url, '--name', 'default', '--json'], { env, configDir: dir });
    expect(clash.code, clash.stderr).toBe(5);
    expect(parseJsonError(clash).error.code).toBe('SLOT_IN_USE');

    const ids: string[] = [];
    for (let n = 0; n < 5; n++) ids.push((await sendWebhook(server.url, endpoint.token, { body: `{"n":${n}}` })).messageId);
    await appA.waitFor(5);
    await appB.waitFor(5);
    await delay(300);
    expect(appA.requests.map((r) => r.body.toString())).toEqual(ids.map((_, n) => `{"n":${n}}`));
    expect(appB.requests.map((r) => r.body.toString())).toEqual(ids.map((_, n) => `{"n":${n}}`));
    expect(await a.stop()).toBe(0);
    expect(await b.stop()).toBe(0);
    const files = (await readdir(join(dir, 'cursors', 'default'))).sort();
    expect(files).toEqual([`${endpoint.id}.2.json`, `${endpoint.id}.json`]);
    for (const file of files) expect(JSON.parse(await readFile(join(dir, 'cursors', 'default', file), 'utf8')).cursor).toBe(ids[4]);
  });
});

describe('hookrelay listen --json', () => {
  it('prints one NDJSON object per delivery on stdout and nothing else; every outcome is reported to the server', async () => {
    const app = await localApp((request, res) => res.writeHead(request.url.startsWith('/fail') ? 500 : 200).end());
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const dir = await configDir();
    // --since: messages sent before the listener is up are delivered too, so no need to wait for it.
    const cli = listen([endpoint.id, '-f', app.url, '--json', '--since', '1m'], dir);
    const ids = [
      (await sendWebhook(server.url, endpoint.token, { pathAndQuery: '/ok?x=1', body: 'a' })).messageId,
      (await sendWebhook(server.url, endpoint.token, { pathAndQuery: '/fail', body: 'b' })).messageId,
      (await sendWebhook(server.url, endpoint.token, { method: 'PATCH', body: 'c' })).messageId,
    ];
    await until(() => cli.records().length === 3, '3 NDJSON lines', 30_000, () => cli.explain());
    expect(await cli.stop()).toBe(0);
    const lines = cli.stdout.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(3);
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const record of records) {
      expect(Object.keys(record)).toEqual([
        'message_id',
        'cursor',
        'method',
        'path',
        'status',
        'latency_ms',
        'attempt',
        'error',
        'target',
        'provider',
        'event_type',
        'resigned',
        'response_headers',
        'response_body',
        'response_body_truncated',
      ]);
      expect(record.latency_ms).toEqual(expect.any(Number));
    }
    expect(records.map((r) => [r.message_id, r.cursor, r.method, r.path, r.status, r.attempt, r.error])).toEqual([
      [ids[0], ids[0], 'POST', '/ok', 200, 1, null],
      [ids[1], ids[1], 'POST', '/fail', 500, 1, null],
      [ids[2], ids[2], 'PATCH', '/', 200, 1, null],
    ]);
    // Nothing human on stderr under --json.
    expect(cli.stderr).toBe('');
    // The app's answers, as the server recorded them: 2xx succeeded, anything else failed.
    const expected = [
      ['succeeded', 200],
      ['failed_permanent', 500],
      ['succeeded', 200],
    ];
    for (const [i, id] of ids.entries()) {
      let record = await messageRecord(id);
      for (let tries = 0; tries < 100 && record.attempt_count === 0; tries++) {
        await delay(50);
        record = await messageRecord(id);
      }
      expect(record, id).toMatchObject({ status: expected[i]![0], response_status: expected[i]![1], attempt_count: 1 });
    }
  });

  it('exit codes: bad key 3, forward-mode endpoint 2 with the server message, unknown endpoint 4, bad flags 2', async () => {
    const dir = await configDir();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);

    const badKey = await runCli(['listen', endpoint.id, '-f', '3000', '--json'], { env: { ...env, HOOKRELAY_API_KEY: `hr_${'0'.repeat(40)}` }, configDir: dir });
    expect(badKey.code, badKey.stderr).toBe(3);
    expect(badKey.stdout).toBe('');
    expect(parseJsonError(badKey).error).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });

    const unknown = await runCli(['listen', '01900000-0000-7000-8000-000000000000', '-f', '3000', '--json'], { env, configDir: dir });
    expect(unknown.code, unknown.stderr).toBe(4);
    expect(parseJsonError(unknown).error).toMatchObject({ code: 'ENDPOINT_NOT_FOUND', status: 404 });

    // For people: the error alone, no banner that claims forwarding has begun.
    const badKeyHuman = await runCli(['listen', endpoint.id, '-f', '3000'], { env: { ...env, HOOKRELAY_API_KEY: `hr_${'0'.repeat(40)}` }, configDir: dir });
    expect(badKeyHuman.code, badKeyHuman.stderr).toBe(3);
    expect(badKeyHuman.stderr).toMatch(/^UNAUTHORIZED: /u);
    expect(badKeyHuman.stderr).not.toMatch(/Forwarding|connecting|listener "|Ctrl-C to stop/u);
    const unknownHuman = await runCli(['listen', '01900000-0000-7000-8000-000000000000', '-f', '3000'], { env, configDir: dir });
    expect(unknownHuman.code, unknownHuman.stderr).toBe(4);
    expect(unknownHuman.stderr).toMatch(/^ENDPOINT_NOT_FOUND: /u);
    expect(unknownHuman.stderr).not.toMatch(/Forwarding|connecting|listener "|Ctrl-C to stop/u);
    // Nor a cursor slot claimed for an endpoint that is not there.
    expect(await readdir(join(dir, 'cursors', 'default')).catch(() => [])).not.toContain('01900000-0000-7000-8000-000000000000.json');
    // A server that cannot be reached is no answer to the check: the listener starts and reconnects.
    const down = await runCli(['listen', endpoint.id, '-f', '3000', '--exit-on-disconnect', '1s'], { env: { ...env, HOOKRELAY_API_URL: 'http://127.0.0.1:1' }, configDir: dir });
    expect(down.code, down.stderr).toBe(7);
    expect(down.stderr).toMatch(/^Forwarding inbound endpoint /u);
    expect(down.stderr).toMatch(/NETWORK_ERROR: no connection to the server for 1s/u);

    const forward = await api<{ id: string }>(server.url, server.apiKey, 'POST', '/v1/inbound-endpoints', {
      name: 'forward mode',
      url: `https://example.com/forward-${randomUUID()}`,
    });
    for (const transport of ['auto', 'ws', 'poll']) {
      const result = await runCli(['listen', forward.id, '-f', '3000', '--transport', transport, '--json'], { env, configDir: dir });
      expect(result.code, `${transport}: ${result.stderr}`).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      const { error } = parseJsonError(result);
      expect(error).toMatchObject({ code: 'INVALID_REQUEST', status: 400 });
      expect(error.message).toMatch(/forward mode/u);
    }
    // The same without --json, for people.
    const human = await runCli(['listen', forward.id, '-f', '3000'], { env, configDir: dir });
    expect(human.code).toBe(2);
    expect(human.stderr).toMatch(/INVALID_REQUEST: .*forward mode/u);

    for (const args of [
      ['not-a-uuid', '-f', '3000'],
      [endpoint.id, '-f', 'nonsense'],
      [endpoint.id, '-f', '3000', '--since', 'yesterday'],
      [endpoint.id, '-f', '3000', '--max-wait', '5'],
      [endpoint.id, '-f', '3000', '--transport', 'carrier-pigeon'],
      [endpoint.id, '-f', '3000', '--from-start', '--skip-backlog'],
      [endpoint.id],
    ]) {
      const result = await runCli(['listen', ...args, '--json'], { env, configDir: dir });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(parseJsonError(result).error.code).toBe('INVALID_ARGUMENTS');
    }
  });

  it('--help shows the flags and examples', async () => {
    const result = await runCli(['listen', '--help']);
    expect(result.code).toBe(0);
    for (const text of ['--forward-to', '--transport', '--since', '--from-start', '--skip-backlog', '--max-wait', '--exit-on-disconnect', '--preserve-host', '--name', 'EXAMPLES']) {
      expect(result.stdout).toContain(text);
    }
  });
});

describe('hookrelay inbound messages', () => {
  it('get shows a message; replay pushes it again to a running listener, which forwards it without moving its cursor', async () => {
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const dir = await configDir();
    const cli = listen([endpoint.id, '-f', app.url, '--json', '--since', '1m'], dir);
    const first = (await sendWebhook(server.url, endpoint.token, { body: '{"n": 1}', headers: [['Content-Type', 'application/json']] })).messageId;
    const second = (await sendWebhook(server.url, endpoint.token, { body: 'two', pathAndQuery: '/x?y=1' })).messageId;
    await until(() => cli.records().length === 2, 'two deliveries', 30_000, () => cli.explain());

    const got = await runCli(['inbound', 'messages', 'get', first, '--json'], { env, configDir: dir });
    expect(got.code, got.stderr).toBe(0);
    expect(parseJsonOutput(got)).toMatchObject({ id: first, inbound_endpoint_id: endpoint.id, method: 'POST', path: '/', body: { n: 1 } });
    const exact = await runCli(['inbound', 'messages', 'get', first, '--json', '--base64'], { env, configDir: dir });
    expect(Buffer.from(parseJsonOutput<{ body: string }>(exact).body, 'base64').toString()).toBe('{"n": 1}');
    const human = await runCli(['inbound', 'messages', 'get', second], { env, configDir: dir });
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('POST /x?y=1');
    expect(human.stdout).toContain('two');

    const replay = await runCli(['inbound', 'messages', 'replay', first, '--json'], { env, configDir: dir });
    expect(replay.code, replay.stderr).toBe(0);
    expect(parseJsonOutput(replay)).toMatchObject({ message_id: first, replay_count: 1 });
    await until(() => cli.records().length === 3, 'the replay', 20_000, () => cli.explain());
    const records = cli.records<{ message_id: string; cursor: string }>();
    expect(records.map((r) => r.message_id)).toEqual([first, second, first]);
    // A replay is forwarded again; the cursor stays on the newest message.
    expect(records[2]!.cursor).toBe(second);
    expect(app.requests.map((r) => r.body.toString())).toEqual(['{"n": 1}', 'two', '{"n": 1}']);

    const missing = await runCli(['inbound', 'messages', 'get', '01900000-0000-7000-8000-000000000000', '--json'], { env, configDir: dir });
    expect(missing.code).toBe(4);
    expect(await cli.stop()).toBe(0);
  });
});

describe('hookrelay listen over the server\'s socket limit', () => {
  it('a listener refused 429 says so plainly, keeps trying the WebSocket (never polling) and connects once a slot is free', async () => {
    const limited = await startServer({ env: { HOOKRELAY_MAX_SOCKETS_PER_KEY: '1' } });
    try {
      const limitedEnv = { HOOKRELAY_API_URL: limited.url, HOOKRELAY_API_KEY: limited.apiKey };
      const endpoint = await createCliEndpoint(limited.url, limited.apiKey);
      const app = await localApp();
      const dir = await configDir();
      const first = listenWith([endpoint.id, '-f', app.url], dir, limitedEnv);
      await first.waitForStderr(/connected \(websocket\)/u);
      const second = listenWith([endpoint.id, '-f', app.url], dir, limitedEnv);
      await second.waitForStderr(/the server refused the stream: too many open WebSockets for this API key \(limit 1 per server process\)/u);
      await second.waitForStderr(/reconnecting in \d+s \(too many open streams\)/u);
      expect(second.running).toBe(true);
      expect(await first.stop()).toBe(0);
      // The server's Retry-After is 10 s.
      await second.waitForStderr(/connected \(websocket\)/u, 40_000);
      expect(second.stderr).not.toMatch(/polling/u);
      await sendWebhook(limited.url, endpoint.token, { body: '{"n":1}' });
      await app.waitFor(1);
      expect(await second.stop()).toBe(0);
    } finally {
      await cleanup();
      await limited.stop();
    }
  });
});
