import { readFile, rm, writeFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeConfigDir, parseJsonError, parseJsonOutput, runCli } from './helpers/cli.js';
import { LocalApp, startCli, until, type ListenProcess, type ReceivedRequest } from './helpers/listen.js';
import { freePort, processAlive } from './helpers/processes.js';
import { headerOf, PROVIDER_CHECKS } from './helpers/provider-checks.js';

/**
 * `hookrelay dev --verify github=… --verify stripe=…`: one verifying endpoint per provider, each
 * forwarded (Stripe's to an app of its own by `-f stripe=…`); `trigger` without `--secret`, and
 * without an endpoint id while dev runs, sends samples the server signs with the stored secrets,
 * which the app's own checks (@octokit/webhooks-methods, stripe) accept. A restart from the
 * `verify` of hookrelay.json reuses the endpoints, and `--since` forwards what came before again.
 */

const GITHUB_SECRET = 'gh-e2e-Secret-4711';
const STRIPE_SECRET = 'whsec_e2eStripeSecret0815';

interface ReadyLine {
  ingest_url: string;
  inbound_endpoint_id: string;
  inspector_url: string;
  endpoints: { provider: string | null; inbound_endpoint_id: string; ingest_url: string; inspector_url: string }[];
}
interface DeliveryLine {
  message_id: string;
  status: number | null;
  target: string | null;
  provider: string | null;
}

/** An app that checks the signature with the provider's own library, as a real one does: 200, or 401 with the reason. */
function verifyingApp(provider: 'github' | 'stripe', secret: string) {
  return (request: ReceivedRequest, res: ServerResponse): void => {
    PROVIDER_CHECKS[provider]!(request, secret).then(
      (ok) => res.writeHead(ok ? 200 : 401, { 'content-type': 'text/plain' }).end(ok ? `${provider} signature verified` : 'bad signature'),
      (error: unknown) => res.writeHead(401, { 'content-type': 'text/plain' }).end(String(error)),
    );
  };
}

let configDir: string;
let projectDir: string;
let githubApp: LocalApp;
let stripeApp: LocalApp;
let port: number;
let dev: ListenProcess;
let ready: ReadyLine;
/** The embedded servers' pids (the data dir's lock file): a test that fails leaves none behind. */
const serverPids = new Set<number>();
const env = { GITHUB_WEBHOOK_SECRET: GITHUB_SECRET, STRIPE_WEBHOOK_SECRET: STRIPE_SECRET };

async function startDev(args: string[], cwd?: string): Promise<ReadyLine> {
  dev = startCli(['dev', '--port', String(port), '--json', ...args], { env, configDir, ...(cwd === undefined ? {} : { cwd }) });
  await until(() => dev.stdout.includes('\n') || !dev.running, 'the ready line', 120_000, () => dev.explain());
  const line = JSON.parse(dev.stdout.split('\n')[0]!) as ReadyLine;
  serverPids.add(Number.parseInt((await readFile(join(configDir, 'dev', 'hookrelay.pid'), 'utf8')).split('\n')[0] ?? '', 10));
  return line;
}

/** The --json lines after the ready line: deliveries, and the refused requests (`type: "rejection"`). */
const lines = (): (DeliveryLine & { type?: string; endpoint_id?: string; reason?: string })[] => dev.records<DeliveryLine>().slice(1);
const deliveries = (): DeliveryLine[] => lines().filter((line) => line.type === undefined);

beforeAll(async () => {
  configDir = await makeConfigDir();
  projectDir = await makeConfigDir();
  githubApp = await LocalApp.start(verifyingApp('github', GITHUB_SECRET));
  stripeApp = await LocalApp.start(verifyingApp('stripe', STRIPE_SECRET));
  port = await freePort();
  ready = await startDev(['--verify', 'github=env:GITHUB_WEBHOOK_SECRET', '--verify', `stripe=${STRIPE_SECRET}`, '-f', `stripe=${stripeApp.url}`, '-f', githubApp.url]);
});
afterAll(async () => {
  dev?.kill();
  for (const pid of serverPids) {
    if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  }
  await githubApp?.stop();
  await stripeApp?.stop();
  await rm(configDir, { recursive: true, force: true });
  await rm(projectDir, { recursive: true, force: true });
});

describe('hookrelay dev --verify', () => {
  it('lists one endpoint per provider in the ready line, the first one also at the top level', () => {
    expect(ready.endpoints.map((endpoint) => endpoint.provider)).toEqual(['github', 'stripe']);
    const [github, stripe] = ready.endpoints;
    expect(github!.inbound_endpoint_id).not.toBe(stripe!.inbound_endpoint_id);
    expect(ready).toMatchObject({ inbound_endpoint_id: github!.inbound_endpoint_id, ingest_url: github!.ingest_url, inspector_url: github!.inspector_url });
    expect(stripe!.ingest_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/in\/[0-9a-f]+$/u);
  });

  it("trigger signs with the stored secret, and each app's own library accepts the signature", async () => {
    // No endpoint id: dev's github endpoint.
    const push = await runCli(['trigger', 'github', 'push', '--json'], { configDir });
    expect(push.code, push.stderr).toBe(0);
    expect(parseJsonOutput(push)).toMatchObject({ inbound_endpoint_id: ready.endpoints[0]!.inbound_endpoint_id, signed: true, signed_by: 'server' });
    const payment = await runCli(['trigger', ready.endpoints[1]!.inbound_endpoint_id, 'stripe', 'payment_intent.succeeded', '--json'], { configDir });
    expect(payment.code, payment.stderr).toBe(0);
    expect(parseJsonOutput(payment)).toMatchObject({ signed: true, signed_by: 'server' });

    await until(() => deliveries().length >= 2, 'both deliveries', 20_000, () => dev.explain());
    expect(deliveries().map((line) => [line.provider, line.status, line.target])).toEqual(
      expect.arrayContaining([
        ['github', 200, githubApp.url],
        ['stripe', 200, stripeApp.url],
      ]),
    );
    expect(headerOf(githubApp.requests[0]!, 'x-github-event')).toBe('push');
    expect(headerOf(stripeApp.requests[0]!, 'stripe-signature')).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/u);
  });

  it("refuses what its provider's secret did not sign, and a provider dev does not verify", async () => {
    const forged = await fetch(ready.endpoints[0]!.ingest_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
      body: '{}',
    });
    expect(forged.status).toBe(401);
    await until(() => lines().some((line) => line.type === 'rejection'), 'the rejection line', 20_000, () => dev.explain());
    expect(lines().find((line) => line.type === 'rejection')).toMatchObject({ endpoint_id: ready.endpoints[0]!.inbound_endpoint_id, reason: 'signature_mismatch' });
    const slack = await runCli(['trigger', 'slack', 'url_verification', '--json'], { configDir });
    expect(slack.code).toBe(2);
    expect(parseJsonError(slack).error.message).toBe('the running hookrelay dev has no slack endpoint (it verifies github, stripe)');
  });

  it('bad --verify values are usage errors that name the problem, never the secret', async () => {
    const cases: [string[], string][] = [
      [['--verify', `gitlab=${GITHUB_SECRET}`], '--verify: unknown provider "gitlab"'],
      [['--verify', 'github='], '--verify github: the secret is empty'],
      [['--verify', 'github=env:NOT_SET_ANYWHERE'], '--verify github: the environment variable NOT_SET_ANYWHERE is not set'],
      [['--verify', `github=${GITHUB_SECRET}`, '-f', 'stripe=4000'], 'the route stripe → http://localhost:4000 (--forward-to) is for stripe, which dev does not verify'],
    ];
    for (const [args, message] of cases) {
      // A config dir of its own: no data dir, so no server is started early beside the running one.
      const result = await runCli(['dev', '-f', '3000', '--port', String(port), ...args, '--json']);
      expect(result.code, result.stderr).toBe(2);
      expect(parseJsonError(result).error).toMatchObject({ code: 'INVALID_ARGUMENTS', message });
      expect(result.stderr).not.toContain(GITHUB_SECRET);
    }
  });

  it("restarted from hookrelay.json's verify, reuses both endpoints; --since forwards what came since again", async () => {
    const before = deliveries();
    expect(await dev.stop('SIGINT', 30_000)).toBe(0);
    const secrets = `${dev.stdout}${dev.stderr}${await readFile(join(configDir, 'dev', 'dev.json'), 'utf8')}${await readFile(join(configDir, 'dev', 'server.log'), 'utf8')}`;
    expect(secrets).not.toContain(GITHUB_SECRET);
    expect(secrets).not.toContain(STRIPE_SECRET);

    await writeFile(
      join(projectDir, 'hookrelay.json'),
      JSON.stringify({
        verify: { github: 'env:GITHUB_WEBHOOK_SECRET', stripe: 'env:STRIPE_WEBHOOK_SECRET' },
        routes: [{ provider: 'stripe', forward_to: stripeApp.url }, { forward_to: githubApp.url }],
      }),
    );
    const first = before.map((line) => line.message_id).sort()[0]!;
    const again = await startDev(['--since', first], projectDir);
    expect(again.endpoints).toEqual(ready.endpoints);
    await until(() => deliveries().length >= 2, 'both messages forwarded again', 20_000, () => dev.explain());
    expect(deliveries().map((line) => [line.message_id, line.status]).sort()).toEqual(before.map((line) => [line.message_id, 200]).sort());
    expect(dev.stderr).not.toMatch(/warning/u);
    expect(await dev.stop('SIGINT', 30_000)).toBe(0);
  });
});
