import { randomUUID } from 'node:crypto';
import { sign, verify } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { testResources } from './helpers/fixture.js';
import { api, createCliEndpoint, until, type ReceivedRequest } from './helpers/listen.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * "My webhook never arrived": a webhook signed with a mistyped secret is refused at the ingest URL,
 * never reaches the app, and is shown by `listen --json` as it happens and by `inbound rejections`.
 */

let server: RunningServer;
let env: Record<string, string>;
const { configDir, localApp, cleanup, listen } = testResources();

beforeAll(async () => {
  server = await startServer();
  env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
});

afterAll(async () => {
  await cleanup();
  await server?.stop();
});

async function post(token: string, body: string, headers: Record<string, string>): Promise<number> {
  const res = await fetch(`${server.url}/in/${token}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  await res.arrayBuffer();
  return res.status;
}

function signatureOf(request: ReceivedRequest): string {
  return request.headers.find(([name]) => name.toLowerCase() === 'x-hub-signature-256')?.[1] ?? '';
}

describe('refused requests, end to end', () => {
  it('a wrongly signed GitHub webhook reaches no app; listen --json prints the refusal and inbound rejections lists it', async () => {
    const secret = `It's a Secret to Everybody ${randomUUID()}`;
    const verified: boolean[] = [];
    // The app verifies as a GitHub app does, with the provider's own library.
    const app = await localApp((request, res) => {
      void verify(secret, request.body.toString('utf8'), signatureOf(request)).then(
        (ok) => {
          verified.push(ok);
          res.writeHead(ok ? 204 : 401).end();
        },
        () => res.writeHead(500).end(),
      );
    });
    const endpoint = await createCliEndpoint(server.url, server.apiKey, { verify_hmac: true, hmac_scheme: 'github', hmac_secret: secret });
    const cli = listen([endpoint.id, '-f', app.url, '--json', '--since', '1m'], await configDir(), env);
    // Refusals come live on the connected stream: a first delivery says the listener is connected.
    const payload = '{"action":"opened","number":7}';
    expect(await post(endpoint.token, payload, { 'x-github-event': 'issues', 'x-hub-signature-256': await sign(secret, payload) })).toBe(200);
    await app.waitFor(1);
    await until(() => cli.records().length === 1, 'the first delivery line', 10_000, () => cli.explain());

    const wrong = await sign('a mistyped secret', payload);
    expect(await post(endpoint.token, payload, { 'x-github-event': 'issues', 'x-hub-signature-256': wrong })).toBe(401);
    await until(() => cli.records().some((r) => r.type === 'rejection'), 'the refusal line', 10_000, () => cli.explain());
    const refusal = cli.records().find((r) => r.type === 'rejection')!;
    expect(refusal).toMatchObject({ type: 'rejection', endpoint_id: endpoint.id, status: 401, reason: 'signature_mismatch', method: 'POST', path: '/' });
    expect(String(refusal.detail)).toContain('x-hub-signature-256');
    expect(String(refusal.detail)).not.toContain(secret);
    // The app got only the well-signed webhook, and it verified.
    expect(app.requests).toHaveLength(1);
    expect(verified).toEqual([true]);
    // The refusal moved no cursor and took no result: the next webhook arrives as usual.
    expect(await post(endpoint.token, '{"n":2}', { 'x-hub-signature-256': await sign(secret, '{"n":2}') })).toBe(200);
    await app.waitFor(2);
    expect(verified).toEqual([true, true]);
    expect(await cli.stop()).toBe(0);

    const listed = await runCli(['inbound', 'rejections', endpoint.id, '--json'], { env });
    expect(listed.code, listed.stderr).toBe(0);
    const rows = (JSON.parse(listed.stdout) as { data: { id: string; reason: string; raw_headers: [string, string][] }[] }).data;
    expect(rows.map((r) => [r.id, r.reason])).toEqual([[refusal.rejection_id, 'signature_mismatch']]);
    expect(rows[0]!.raw_headers).toContainEqual(['x-hub-signature-256', wrong]);
    const human = await runCli(['inbound', 'rejections', endpoint.id, '--reason', 'signature_mismatch'], { env });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/401\s+signature_mismatch\s+POST \//u);
    const none = await runCli(['inbound', 'rejections', endpoint.id, '--reason', 'token_missing'], { env });
    expect(none.code, none.stderr).toBe(0);
    expect(`${none.stdout}${none.stderr}`).toContain('No refused requests match.');
  });

  it('pull rejections lists what a paused pull endpoint refused', async () => {
    const pull = await api<{ id: string; secret_token: string }>(server.url, server.apiKey, 'POST', '/v1/pull-endpoints', { name: 'refusals' });
    await api(server.url, server.apiKey, 'POST', `/v1/pull-endpoints/${pull.id}/pause`);
    const res = await fetch(`${server.url}/pull/${pull.id}/${pull.secret_token}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(503);
    let rows: { reason: string; status: number }[] = [];
    // The refusal is written off the request path: listed a moment after the answer.
    for (let i = 0; i < 20 && rows.length === 0; i++) {
      const listed = await runCli(['pull', 'rejections', pull.id, '--json'], { env });
      expect(listed.code, listed.stderr).toBe(0);
      rows = (JSON.parse(listed.stdout) as { data: { reason: string; status: number }[] }).data;
    }
    expect(rows).toEqual([expect.objectContaining({ reason: 'endpoint_paused', status: 503 })]);
  });
});
