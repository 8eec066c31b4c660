import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRunningDev, runningDevEndpoint, writeRunningDev } from '../src/dev/running.js';
import { parseDevState } from '../src/dev/state.js';
import { parseVerifyFlags, routesByProvider, verifySettings } from '../src/flags/verify.js';
import { parseRoute } from '../src/listen/routes.js';
import { usageError } from './usage-failure.js';

const KEY = `hr_${'a'.repeat(40)}`;
const GITHUB_ID = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
const STRIPE_ID = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71';
const SECRET = 'It5-a-s3cret';

/** The usage failure `run` throws; its message and hint never hold the secret. */
async function refused(run: () => unknown): Promise<{ message: string; hint: string | undefined }> {
  const failure = await usageError(Promise.resolve().then(run));
  expect(`${failure.message} ${failure.hint}`).not.toContain(SECRET);
  return { message: failure.message, hint: failure.hint };
}

describe('--verify PROVIDER=SECRET', () => {
  it('takes each provider once, in order, the secret as given or from env:NAME', () => {
    expect(parseVerifyFlags([`github=${SECRET}`, 'stripe=env:STRIPE_SECRET', 'standard_webhooks=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], { STRIPE_SECRET: 'whsec_stripe=x' })).toEqual([
      { provider: 'github', secret: SECRET },
      { provider: 'stripe', secret: 'whsec_stripe=x' },
      { provider: 'standard_webhooks', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
    ]);
    // Only the first = separates: a secret may hold = itself.
    expect(parseVerifyFlags([`slack==${SECRET}=`], {})).toEqual([{ provider: 'slack', secret: `=${SECRET}=` }]);
  });

  it('refuses an unknown provider, a value without =, an empty secret and a provider given twice, as usage errors', async () => {
    expect(await refused(() => parseVerifyFlags([`gitlab=${SECRET}`], {}))).toEqual({
      message: '--verify: unknown provider "gitlab"',
      hint: 'Use one of github, stripe, slack, shopify, standard_webhooks.',
    });
    expect((await refused(() => parseVerifyFlags([SECRET], {}))).message).toBe('--verify needs PROVIDER=SECRET (the value given has no =)');
    const empty = await refused(() => parseVerifyFlags(['github='], {}));
    expect(empty.message).toBe('--verify github: the secret is empty');
    expect(empty.hint).toContain('a shell variable that is unset gives an empty one');
    expect((await refused(() => parseVerifyFlags([`github=${SECRET}`, `github=${SECRET}x`], {}))).message).toBe('--verify: github is given twice');
  });

  it('refuses env:NAME of a variable that is unset or empty, or of no variable name at all', async () => {
    expect(await refused(() => parseVerifyFlags(['github=env:GITHUB_SECRET'], { OTHER: SECRET }))).toEqual({
      message: '--verify github: the environment variable GITHUB_SECRET is not set',
      hint: 'Export GITHUB_SECRET with the github webhook secret before starting dev.',
    });
    expect((await refused(() => parseVerifyFlags(['github=env:GITHUB_SECRET'], { GITHUB_SECRET: '' }))).message).toMatch(/GITHUB_SECRET is not set/u);
    // An inherited member of the environment object is no variable.
    expect((await refused(() => parseVerifyFlags(['github=env:__proto__'], {}))).message).toMatch(/__proto__ is not set/u);
    expect((await refused(() => parseVerifyFlags(['github=env:'], {}))).message).toBe('--verify github: "env:" does not name an environment variable');
    expect((await refused(() => parseVerifyFlags(['github=env:A-B'], {}))).message).toBe('--verify github: "env:A-B" does not name an environment variable');
  });

  it('refuses a Standard Webhooks secret that is not whsec_ and base64, before anything starts', async () => {
    expect((await refused(() => parseVerifyFlags([`standard_webhooks=whsec_${SECRET}`], {}))).message).toBe(
      '--verify standard_webhooks: a Standard Webhooks secret is whsec_ followed by base64',
    );
    await refused(() => parseVerifyFlags(['standard_webhooks=whsec_'], {}));
  });
});

describe('what dev verifies: --verify, else hookrelay.json', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-dev-verify-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'hookrelay.json'), JSON.stringify({ verify: { stripe: 'env:STRIPE_SECRET', github: SECRET }, routes: [{ forward_to: '3000' }] }));

  it("reads the file's verify, its env: values from the environment given, when there is no --verify", () => {
    expect(verifySettings({}, { STRIPE_SECRET: 'from-env' }, dir)).toEqual([
      { provider: 'stripe', secret: 'from-env' },
      { provider: 'github', secret: SECRET },
    ]);
    expect(verifySettings({ verify: [`slack=${SECRET}`] }, {}, dir)).toEqual([{ provider: 'slack', secret: SECRET }]);
    expect(verifySettings({}, {}, join(dir, 'nowhere'))).toEqual([]);
  });

  it("names the file and the field when the file's variable is unset", async () => {
    expect((await refused(() => verifySettings({}, {}, dir))).message).toBe(`${join(dir, 'hookrelay.json')}: verify.stripe: the environment variable STRIPE_SECRET is not set`);
    expect((await refused(() => verifySettings({ config: 'missing.json' }, {}, dir))).message).toMatch(/^cannot read .*missing\.json/u);
  });
});

describe("each provider's routes", () => {
  const github = { provider: 'github' as const, secret: SECRET };
  const stripe = { provider: 'stripe' as const, secret: SECRET };

  it("are the routes that name it or no provider, in order, its condition met by its endpoint", () => {
    const routes = [parseRoute('stripe=4000'), parseRoute('event:push=3000/gh'), parseRoute('3000')];
    const [forGithub, forStripe] = routesByProvider(routes, '--forward-to', [github, stripe]);
    expect(forGithub!.provider).toBe('github');
    expect(forGithub!.routes.map((route) => route.display)).toEqual(['event:push → http://localhost:3000/gh', 'http://localhost:3000']);
    expect(forStripe!.routes.map((route) => [route.provider, route.display])).toEqual([
      [null, 'stripe → http://localhost:4000'],
      [null, 'event:push → http://localhost:3000/gh'],
      [null, 'http://localhost:3000'],
    ]);
    // Without --verify the one endpoint has the routes as they are (a provider's goes by the headers).
    expect(routesByProvider(routes, '--forward-to', [])).toEqual([]);
  });

  it('refuse a route for a provider dev does not verify, and a provider no route takes', async () => {
    expect(await refused(() => routesByProvider([parseRoute('slack=5000'), parseRoute('3000')], '--forward-to', [github]))).toEqual({
      message: 'the route slack → http://localhost:5000 (--forward-to) is for slack, which dev does not verify',
      hint: 'Add --verify slack=SECRET (or to "verify" in hookrelay.json), or drop the route.',
    });
    expect((await refused(() => routesByProvider([parseRoute('stripe=4000')], '/app/hookrelay.json', [github, stripe]))).message).toBe('no route takes the webhooks of github');
  });
});

describe("dev's endpoints in dev.json and in the running marker", () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-dev-marker-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("dev.json keeps each provider's endpoint, only known providers with ids", () => {
    const text = JSON.stringify({ api_key: KEY, verify_endpoints: { github: GITHUB_ID, stripe: 'nope', gitlab: STRIPE_ID, constructor: STRIPE_ID } });
    expect(parseDevState(text)).toEqual({ api_key: KEY, verify_endpoints: { github: GITHUB_ID } });
    expect(parseDevState(JSON.stringify({ verify_endpoints: [GITHUB_ID] }))).toEqual({});
  });

  it('the marker names every endpoint; trigger picks the provider\'s, else the one that verifies nothing', async () => {
    const dataDir = join(dir, 'data');
    await mkdir(dataDir, { recursive: true });
    await writeFile(join(dataDir, 'dev.json'), JSON.stringify({ api_key: KEY }));
    const endpoints = [
      { provider: 'github' as const, inbound_endpoint_id: GITHUB_ID },
      { provider: 'stripe' as const, inbound_endpoint_id: STRIPE_ID },
    ];
    await writeRunningDev(dir, { pid: process.pid, api_url: 'http://127.0.0.1:8787', data_dir: dataDir, inbound_endpoint_id: GITHUB_ID, endpoints });
    const dev = await readRunningDev(dir);
    expect(dev).toMatchObject({ inboundEndpointId: GITHUB_ID, endpoints });
    expect(runningDevEndpoint(dev!, 'stripe')).toBe(STRIPE_ID);
    expect(runningDevEndpoint(dev!, 'slack')).toBeUndefined();
    expect(runningDevEndpoint({ endpoints: [{ provider: null, inbound_endpoint_id: GITHUB_ID }] }, 'slack')).toBe(GITHUB_ID);

    // A marker of a dev before --verify has its one endpoint; entries that are not an endpoint are left out.
    await writeFile(join(dir, 'dev-running.json'), JSON.stringify({ pid: process.pid, api_url: 'http://127.0.0.1:8787', data_dir: dataDir, inbound_endpoint_id: GITHUB_ID }));
    expect((await readRunningDev(dir))?.endpoints).toEqual([{ provider: null, inbound_endpoint_id: GITHUB_ID }]);
    const odd = [{ provider: 'gitlab', inbound_endpoint_id: STRIPE_ID }, { provider: 'stripe', inbound_endpoint_id: 'x' }, null, { provider: 'slack', inbound_endpoint_id: STRIPE_ID }];
    await writeFile(join(dir, 'dev-running.json'), JSON.stringify({ pid: process.pid, api_url: 'http://127.0.0.1:8787', data_dir: dataDir, inbound_endpoint_id: GITHUB_ID, endpoints: odd }));
    expect((await readRunningDev(dir))?.endpoints).toEqual([{ provider: 'slack', inbound_endpoint_id: STRIPE_ID }]);
  });
});
