import { createHash, randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { sign, verify } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeConfigDir } from './helpers/cli.js';
import { LocalApp, startCli, until, type ListenProcess } from './helpers/listen.js';
import { freePort } from './helpers/processes.js';

/**
 * `hookrelay dev` (the embedded server, PGlite) with GitHub's largest webhook, 25 MiB, signed as
 * GitHub signs it: the app verifies the signature over the bytes it receives with @octokit's own
 * check, over the WebSocket stream and over polling. The sender's answer comes before GitHub's
 * 10 s delivery timeout.
 */

const SIZE = 25 * 1024 * 1024;
const SECRET = 'dev-large-secret';

let app: LocalApp;
const verdicts: { ok: boolean; size: number; sha256: string }[] = [];
const processes: ListenProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  // The app checks X-Hub-Signature-256 over the raw body, as an Express app with @octokit/webhooks does.
  app = await LocalApp.start((request, res) => {
    const signature = request.headers.find(([name]) => name.toLowerCase() === 'x-hub-signature-256')?.[1] ?? '';
    void verify(SECRET, request.body.toString('utf8'), signature).then((ok) => {
      verdicts.push({ ok, size: request.body.length, sha256: createHash('sha256').update(request.body).digest('hex') });
      res.writeHead(ok ? 200 : 401).end(ok ? 'verified' : 'bad signature');
    });
  });
});
afterAll(async () => {
  for (const cli of processes) cli.kill();
  await app?.stop();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A push-like JSON document of exactly `size` bytes (ASCII, so that the app's utf8 string is the bytes). */
function pushPayload(size: number): string {
  const prefix = `${JSON.stringify({ ref: 'refs/heads/main', commits: [] }).slice(0, -1)},"filler":"`;
  const suffix = '"}';
  return prefix + randomBytes(Math.ceil(size / 2)).toString('hex').slice(0, size - prefix.length - suffix.length) + suffix;
}

describe.each([
  ['ws', 'websocket'],
  ['poll', 'polling'],
])('hookrelay dev --transport %s', (transport, shown) => {
  it('hands a 25 MiB GitHub-signed webhook to the app, whose signature check passes, and answers the sender within GitHub’s 10 s', async () => {
    const configDir = await makeConfigDir();
    dirs.push(configDir);
    const port = await freePort();
    const cli = startCli(['dev', '--forward-to', `http://127.0.0.1:${app.port}/hooks`, '--port', String(port), '--transport', transport], { env: {}, configDir });
    processes.push(cli);
    await cli.waitForStderr(new RegExp(`connected \\(${shown}\\)`, 'u'), 120_000);
    const ingestUrl = /^ {2}(http:\/\/\S+\/in\/[0-9a-f]{32})$/mu.exec(cli.stderr)?.[1];
    expect(ingestUrl, cli.explain()).toBeDefined();

    const body = pushPayload(SIZE);
    expect(body.length).toBe(SIZE);
    const before = verdicts.length;
    const started = performance.now();
    const res = await fetch(ingestUrl!, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': randomBytes(8).toString('hex'), 'x-hub-signature-256': await sign(SECRET, body) },
      body,
      signal: AbortSignal.timeout(60_000),
    });
    const answeredMs = performance.now() - started;
    expect(res.status, await res.text()).toBe(200);
    expect(answeredMs).toBeLessThan(10_000);

    await until(() => verdicts.length > before, 'the app to receive it', 120_000, () => cli.explain());
    expect(verdicts[before]).toEqual({ ok: true, size: SIZE, sha256: createHash('sha256').update(body).digest('hex') });
    expect(await cli.stop('SIGINT', 30_000)).toBe(0);
  }, 240_000);
});
