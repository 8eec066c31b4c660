import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { get, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { sign } from '@octokit/webhooks-methods';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, seriousA11yViolations, type TestBrowser } from './helpers/browser.js';
import { runCli } from './helpers/cli.js';
import { testResources } from './helpers/fixture.js';
import { startHttpsReceiver, type HttpsReceiver } from './helpers/https-receiver.js';
import { api, LocalApp, sendWebhook, until } from './helpers/listen.js';
import { REPO_ROOT, SERVER_MAIN } from './helpers/paths.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * The inspector in a real browser (Debian's chromium through playwright-core) against the real
 * server process: sign-in through the fragment, a webhook appearing live, the exact headers and
 * bytes, replay through a connected `hookrelay listen`, outbound attempts, XSS bodies, wrong and
 * foreign keys, and axe-core on the main views. It also writes the README's screenshots.
 */

const execFileAsync = promisify(execFile);
const SCREENSHOTS = join(REPO_ROOT, 'docs', 'screenshots');
const GITHUB_SECRET = 'inspector-e2e-github-secret';

let server: RunningServer;
let receiver: HttpsReceiver;
let browser: TestBrowser;
let dataDir: string;
/** Keys of two projects (`main`, `other`), made with the admin commands before the server starts. */
let key: string;
let otherKey: string;
const { configDir, localApp, listen, cleanup } = testResources();

async function admin(args: string[]): Promise<unknown> {
  const { stdout } = await execFileAsync(process.execPath, [SERVER_MAIN, ...args, '--json'], {
    cwd: REPO_ROOT,
    env: { HOOKRELAY_DATA_DIR: dataDir },
    timeout: 180_000,
  });
  return JSON.parse(stdout);
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-inspector-'));
  const newKey = async (name: string) => {
    const project = (await admin(['projects', 'create', '--name', name])) as { id: string };
    return ((await admin(['keys', 'create', '--project', project.id])) as { key: string }).key;
  };
  key = await newKey('main');
  otherKey = await newKey('other');
  receiver = await startHttpsReceiver();
  server = await startServer({
    dataDir,
    env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_RETRY_SCHEDULE: '3600' },
  });
  browser = await launchBrowser();
  await mkdir(SCREENSHOTS, { recursive: true });
});

afterAll(async () => {
  await cleanup();
  await browser?.close();
  await server?.stop();
  await receiver?.stop();
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
});

/** A page in a fresh context, recording dialogs, console errors, uncaught errors and requests. */
async function openPage(options?: { timezoneId?: string }): Promise<{ page: Page; context: BrowserContext; dialogs: string[]; errors: string[]; requests: string[] }> {
  const context = await browser.context(options);
  const page = await context.newPage();
  const dialogs: string[] = [];
  const errors: string[] = [];
  const requests: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('request', (request) => requests.push(request.url()));
  return { page, context, dialogs, errors, requests };
}

async function signIn(page: Page, withKey = key, fragmentExtra = ''): Promise<void> {
  await page.goto(`${server.url}/#key=${withKey}${fragmentExtra}`);
}

async function expectNoSeriousViolations(page: Page, view: string): Promise<void> {
  const violations = await seriousA11yViolations(page);
  expect(violations, `axe-core on ${view}: ${JSON.stringify(violations, null, 1)}`).toEqual([]);
}

interface Created {
  id: string;
  secret_token: string;
}

async function createInbound(body: Record<string, unknown>): Promise<Created> {
  return api<Created>(server.url, key, 'POST', '/v1/inbound-endpoints', body);
}

/** A POST with the request target exactly as given (no URL parsing: `{`, `[` and `/../` are sent as they are); resolves to the status. */
function postRaw(path: string, body: string, headers: Record<string, string> = {}): Promise<number> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, agent: false, timeout: 15_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('timeout', () => req.destroy(new Error('ingest timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Runs a copied curl command with the real curl, every connection taken to `capture` instead
 * (`--connect-to`, so the command's URL stays as copied), and waits until curl has exited.
 */
async function runCopiedCurl(command: string, capture: LocalApp): Promise<void> {
  await execFileAsync('sh', ['-c', `${command} --connect-to ::127.0.0.1:${capture.port} -s -o /dev/null --max-time 10`], { timeout: 20_000 });
}

describe('sign-in', () => {
  it('takes the key from the fragment, keeps it in sessionStorage only and removes it from the address bar', async () => {
    const { page, context } = await openPage();
    await signIn(page);
    await page.getByRole('heading', { name: 'Inbound endpoints' }).waitFor();
    expect(page.url()).toBe(`${server.url}/#/`);
    expect(await page.evaluate('sessionStorage.getItem("hookrelay.apiKey")')).toBe(key);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect(server.logs()).not.toContain(key);
    await context.close();
  });

  it('a wrong key shows the error and no data', async () => {
    await createInbound({ name: 'visible only with the right key', mode: 'cli' });
    const { page, context } = await openPage();
    await signIn(page, `hr_${'0'.repeat(40)}`);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('UNAUTHORIZED');
    await page.getByLabel('API key').waitFor();
    expect(await page.locator('table').count()).toBe(0);
    expect(await page.content()).not.toContain('visible only with the right key');
    expect(await page.evaluate('sessionStorage.getItem("hookrelay.apiKey")')).toBeNull();
    await expectNoSeriousViolations(page, 'the sign-in form');

    // The form: a wrong key again, then the right one.
    await page.getByLabel('API key').fill('hr_wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('UNAUTHORIZED');
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'visible only with the right key' }).first().waitFor();
    await context.close();
  });

  it("another project's key shows none of the first project's resources", async () => {
    const mine = await createInbound({ name: 'first project endpoint', mode: 'cli' });
    const sent = await sendWebhook(server.url, mine.secret_token, { body: '{"secret":"first project"}', headers: [['Content-Type', 'application/json']] });
    const { page, context } = await openPage();
    await signIn(page, otherKey);
    await page.getByText('project other').waitFor();
    await page.getByText('No inbound endpoint yet.').waitFor();
    await page.goto(`${server.url}/#/inbound/${mine.id}`);
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('ENDPOINT_NOT_FOUND');
    await page.goto(`${server.url}/#/inbound-messages/${sent.messageId}`);
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('NOT_FOUND');
    expect(await page.content()).not.toContain('first project');
    await context.close();
  });
});

describe('inbound', () => {
  it('a GitHub-signed webhook appears live, shows its exact headers and bytes, and a replay reaches the connected listener', async () => {
    const endpoint = await createInbound({ name: 'github (cli)', mode: 'cli', verify_hmac: true, hmac_scheme: 'github', hmac_secret: GITHUB_SECRET });
    // The app refuses the pull request, with a JSON body: the page shows that answer open.
    const refusal = '{"error":{"code":"unknown_repository","detail":["octo/e2e",7]}}';
    const app = await localApp((request, res) => {
      const event = request.headers.find(([name]) => name.toLowerCase() === 'x-github-event')?.[1];
      if (event === 'pull_request') res.writeHead(422, { 'content-type': 'application/json' }).end(refusal);
      else res.writeHead(200).end('ok');
    });
    const cli = listen([endpoint.id, '--forward-to', app.url], await configDir(), { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: key });
    await cli.waitForStderr(/connected \(websocket\)/u);

    // `hookrelay open ID --print`: the URL with the key in its fragment.
    const opened = await runCli(['open', endpoint.id, '--print'], { env: { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: key } });
    expect(opened.code, opened.stderr).toBe(0);
    expect(opened.stdout.trim()).toBe(`${server.url}/#key=${key}&endpoint=${endpoint.id}`);
    // Times read in the browser's zone: New York's, whatever the machine's.
    const { page, context, errors } = await openPage({ timezoneId: 'America/New_York' });
    await page.goto(opened.stdout.trim());
    await page.getByRole('heading', { name: /github \(cli\)/ }).waitFor();
    await expect.poll(() => page.getByTestId('live-state').textContent()).toBe('live');
    expect(page.url()).toBe(`${server.url}/#/inbound/${endpoint.id}`);

    const body = Buffer.from(`{"action":"opened","number":7,"pull_request":{"title":"Add the inspector","body":"ünïcödé ☃"},"zen":"${'x'.repeat(300)}"}`);
    const headers: [string, string][] = [
      ['User-Agent', 'GitHub-Hookshot/e2e'],
      ['X-GitHub-Event', 'pull_request'],
      ['X-GitHub-Delivery', '72d3162e-cc78-11e3-81ab-4c9367dc0958'],
      ['X-Hub-Signature-256', await sign(GITHUB_SECRET, body.toString('utf8'))],
      ['Content-Type', 'application/json'],
      ['X-Multi', 'first'],
      ['X-Multi', 'second'],
    ];
    // Two more first, so that the list (and its screenshot) holds several.
    for (const [event, action] of [['push', 'pushed'], ['issues', 'opened']]) {
      const other = Buffer.from(JSON.stringify({ action, ref: 'refs/heads/main' }));
      const signed = await sign(GITHUB_SECRET, other.toString('utf8'));
      await sendWebhook(server.url, endpoint.secret_token, {
        pathAndQuery: '/github',
        headers: [['X-GitHub-Event', event!], ['X-Hub-Signature-256', signed], ['Content-Type', 'application/json']],
        body: other,
      });
    }
    const sent = await sendWebhook(server.url, endpoint.secret_token, { pathAndQuery: '/github?source=e2e', headers, body });
    const row = page.locator(`tr[data-message-id="${sent.messageId}"]`);
    await row.waitFor({ timeout: 10_000 });
    const rowText = await row.textContent();
    for (const cell of ['POST', '/github?source=e2e', `${body.length} B`, 'GitHub', 'pull_request', 'hmac']) expect(rowText).toContain(cell);
    await until(() => app.requests.length === 3, 'the listener to forward the webhooks');
    // The local app's answer, reported by the listener, shows up without a reload.
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain('default: 422');
    // The time in New York's zone, named; the same instant in UTC as its tooltip.
    const { received_at: receivedAt } = await api<{ received_at: string }>(server.url, key, 'GET', `/v1/inbound-messages/${sent.messageId}`);
    const shownTime = (await row.locator('time').textContent())!;
    const local = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d{3}) (EST|EDT)$/u.exec(shownTime);
    expect(local, shownTime).not.toBeNull();
    expect(Date.parse(`${local![1]}T${local![2]}${local![3] === 'EST' ? '-05:00' : '-04:00'}`)).toBe(Date.parse(receivedAt));
    expect(await row.locator('time').getAttribute('title')).toBe(`${receivedAt.slice(0, 10)} ${receivedAt.slice(11, 23)} UTC`);
    await page.screenshot({ path: join(SCREENSHOTS, 'messages.png') });
    await expectNoSeriousViolations(page, 'the live message list');

    // Filters, through the endpoint message list: an event type glob, then an answer class.
    const rows = page.locator('tr[data-message-id]');
    await page.getByLabel('Event type').fill('pu*');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => rows.count()).toBe(2);
    await page.getByLabel('Event type').fill('');
    await page.getByLabel('Answer').selectOption('5xx');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('No message matches the filters.').waitFor();
    await page.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => rows.count()).toBe(3);

    await row.getByRole('link').click();
    await page.getByRole('heading', { name: 'pull_request · GitHub · 422' }).waitFor();
    expect(await page.getByTestId('request-line').textContent()).toBe('POST /github?source=e2e');
    expect(await page.getByTestId('provider').textContent()).toBe('GitHub');
    const stored = await api<{ raw_headers: [string, string][] }>(server.url, key, 'GET', `/v1/inbound-messages/${sent.messageId}`);
    const shown: [string, string][] = [];
    for (const tr of await page.getByTestId('headers').locator('tr').all()) {
      shown.push([(await tr.locator('th').textContent())!, (await tr.locator('td').textContent())!]);
    }
    expect(shown).toEqual(stored.raw_headers);
    // Every header line sent, in the order sent, repeats kept.
    const sentNames = new Set(headers.map(([name]) => name.toLowerCase()));
    expect(shown.filter(([name]) => sentNames.has(name.toLowerCase()))).toEqual(headers);
    const sha = createHash('sha256').update(body).digest('hex');
    expect(await page.getByTestId('body-sha256').textContent()).toBe(sha);
    await page.getByText('matches the stored hash').waitFor();
    expect(await page.getByTestId('body-size').textContent()).toBe(`${body.length} B`);
    await page.getByTestId('body').getByText('"Add the inspector"').waitFor();
    expect(await page.getByTestId('event-type').textContent()).toBe('pull_request');
    await page.getByRole('heading', { name: /Listener default · 422/ }).waitFor();
    // A non-2xx answer's body is open, laid out as JSON.
    const answerBody = page.getByTestId('answer-body');
    expect(await answerBody.isVisible()).toBe(true);
    expect(await answerBody.textContent()).toBe(JSON.stringify(JSON.parse(refusal), null, 2));
    // A CLI's reports carry no body of their own (the answer has it): no empty column for one.
    await page.getByTestId('inbound-attempts').locator('tbody tr').first().waitFor();
    expect(await page.getByTestId('inbound-attempts').getByRole('columnheader').allTextContents()).toEqual(['#', 'Started', 'Status', 'Latency', 'Error']);
    // Request and answer side by side at 1280 pixels; one under the other on a narrow screen.
    const sides = async () => {
      const [request, answer] = [await page.getByTestId('request-side').boundingBox(), await page.getByTestId('answer-side').boundingBox()];
      return { request: request!, answer: answer! };
    };
    const wide = await sides();
    expect(wide.answer.x).toBeGreaterThanOrEqual(wide.request.x + wide.request.width);
    expect(wide.answer.y).toBe(wide.request.y);
    await page.screenshot({ path: join(SCREENSHOTS, 'message.png') });
    await expectNoSeriousViolations(page, 'one message');
    await page.setViewportSize({ width: 800, height: 800 });
    const narrow = await sides();
    expect(narrow.answer.x).toBe(narrow.request.x);
    expect(narrow.answer.y).toBeGreaterThanOrEqual(narrow.request.y + narrow.request.height);
    await page.setViewportSize({ width: 1280, height: 800 });

    // The curl command carries the exact bytes.
    await page.getByText('Copy as curl').click();
    const curl = (await page.getByTestId('curl').textContent())!;
    const printf = /^printf '((?:[^']|\\')*)' \|/u.exec(curl);
    expect(printf).not.toBeNull();
    const { stdout } = await execFileAsync('sh', ['-c', `printf '${printf![1]}'`], { encoding: 'buffer' });
    expect(createHash('sha256').update(stdout).digest('hex')).toBe(sha);

    await page.getByRole('button', { name: /^Replay/ }).click();
    await page.getByText(/Replayed: replay #1/).waitFor();
    await until(() => app.requests.length === 4, 'the listener to forward the replay');
    expect(app.requests[3]!.body.equals(body)).toBe(true);

    // The endpoint list counts the connected listener.
    await page.getByRole('link', { name: 'Inbound endpoints' }).click();
    const listed = page.getByTestId('inbound-endpoints').locator('tr', { has: page.getByRole('link', { name: 'github (cli)' }) });
    await expect.poll(() => listed.locator('td').nth(3).textContent()).toBe('1');
    await expect.poll(() => listed.locator('td').nth(4).textContent()).toBe('3');
    await expect.poll(() => listed.locator('code.url').textContent()).toMatch(/\/in\/[0-9a-f]{32}$/);
    await page.screenshot({ path: join(SCREENSHOTS, 'endpoints.png') });
    expect(errors).toEqual([]);
    await context.close();
  });

  it('a message\'s "copy as curl" sends exactly one request, to the path and query as received', async () => {
    const endpoint = await createInbound({ name: 'plain (curl)', mode: 'cli' });
    const pathAndQuery = "/g{1,2,3}/../z'$(id)?q=[1-4]&r={a,b}";
    expect(await postRaw(`/in/${endpoint.secret_token}${pathAndQuery}`, '{"n":1}')).toBe(200);
    const [message] = await api<{ id: string }[]>(server.url, key, 'GET', `/v1/inbound-endpoints/${endpoint.id}/messages`);
    const capture = await LocalApp.start();
    const { page, context, errors } = await openPage();
    await signIn(page, key, `&endpoint=${endpoint.id}`);
    await page.goto(`${server.url}/#/inbound-messages/${message!.id}`);
    await page.getByRole('heading', { name: `POST ${pathAndQuery}` }).waitFor();
    await page.getByText('Copy as curl').click();
    await page.getByLabel('Local URL').fill(capture.url);
    const command = (await page.getByTestId('curl').textContent())!;
    await runCopiedCurl(command, capture);
    expect(capture.requests.map((r) => [r.method, r.url, r.body.toString()])).toEqual([['POST', pathAndQuery, '{"n":1}']]);
    await capture.stop();

    // A listener's report of a re-signed delivery the app refused: the title gains the status, the
    // answer, its attempt and the list's row say re-signed, and a body that is not JSON reads as sent.
    await api(server.url, key, 'POST', `/v1/inbound-messages/${message!.id}/result`, {
      message_id: message!.id,
      status: 503,
      latency_ms: 9,
      error: null,
      response_headers: [['content-type', 'text/plain']],
      response_body: Buffer.from('down for maintenance').toString('base64'),
      resigned: true,
    });
    await page.reload();
    await page.getByRole('heading', { name: `POST ${pathAndQuery} · 503` }).waitFor();
    const answer = page.getByTestId('answers').locator('article');
    expect(await answer.locator('h3').textContent()).toMatch(/^Listener default · 503 · 9 ms · .* re-signed$/u);
    expect(await answer.getByTestId('answer-body').textContent()).toBe('down for maintenance');
    const attempt = page.getByTestId('inbound-attempts').locator('tbody tr');
    await expect.poll(() => attempt.count()).toBe(1);
    expect(await attempt.locator('td').nth(2).textContent()).toBe('503 re-signed');
    await page.goto(`${server.url}/#/inbound/${endpoint.id}`);
    await expect.poll(() => page.locator(`tr[data-message-id="${message!.id}"]`).textContent()).toContain('default: 503 · 9 ms · re-signed');
    expect(errors).toEqual([]);
    await context.close();
  });

  it('the endpoint list shows each endpoint, creates, pauses and deletes with confirmation', async () => {
    const { page, context } = await openPage();
    await signIn(page);
    await page.getByText('New inbound endpoint').click();
    await page.getByLabel('Name').fill('stripe (forward)');
    await page.getByLabel('Mode').selectOption('forward');
    await page.getByLabel('Forward URL').fill(`${receiver.url}/ok/stripe`);
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('status').getByText(/\/in\/[0-9a-f]{32}/).waitFor();
    await page.getByText('New inbound endpoint').click();
    const table = page.getByTestId('inbound-endpoints');
    const row = table.locator('tr', { has: page.getByRole('link', { name: 'stripe (forward)' }) });
    await row.getByText('active').waitFor();
    await expect.poll(() => row.locator('code.url').textContent()).toMatch(/^http:\/\/[^/]+\/in\/[0-9a-f]{32}$/);
    await expectNoSeriousViolations(page, 'the endpoint list');

    await row.getByRole('button', { name: 'Pause' }).click();
    await row.getByText('paused').waitFor();
    await row.getByRole('button', { name: 'Resume' }).click();
    await row.getByText('active').waitFor();

    // Keyboard: the rows' links take focus with the arrow keys.
    await table.getByRole('link').first().focus();
    await page.keyboard.press('ArrowDown');
    expect(await page.evaluate('document.activeElement.closest("tr").rowIndex')).toBe(2);

    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await row.waitFor();
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete endpoint' }).click();
    await row.waitFor({ state: 'detached' });
    await context.close();
  });

  it('bodies that are HTML execute nothing: they are shown as text', async () => {
    const endpoint = await createInbound({ name: '<img src=x onerror="alert(\'name\')">', mode: 'cli' });
    const bodies = ["<script>alert('xss-script')</script>", '<img src=x onerror=alert(\'xss-img\')>'];
    const { page, context, dialogs, errors, requests } = await openPage();
    await signIn(page);
    await page.getByRole('link', { name: '<img src=x onerror="alert(\'name\')">' }).click();
    await expect.poll(() => page.getByTestId('live-state').textContent()).toBe('live');
    const ids: string[] = [];
    for (const body of bodies) {
      const sent = await sendWebhook(server.url, endpoint.secret_token, {
        pathAndQuery: '/<script>alert(1)</script>',
        headers: [['Content-Type', 'text/html'], ['X-Evil', '<img src=x onerror=alert(\'header\')>']],
        body,
      });
      ids.push(sent.messageId);
    }
    await page.locator(`tr[data-message-id="${ids[1]}"]`).waitFor();
    for (const [i, id] of ids.entries()) {
      await page.goto(`${server.url}/#/inbound-messages/${id}`);
      await page.getByTestId('body').locator('pre').getByText(bodies[i]!, { exact: true }).waitFor();
      await page.getByText("<img src=x onerror=alert('header')>", { exact: true }).waitFor();
    }
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(requests.filter((url) => new URL(url).pathname === '/x')).toEqual([]);
    await context.close();
  });
});

describe('large bodies', () => {
  it('shows the start of a large body, keeps the rest out of the page, and downloads it whole', async () => {
    const endpoint = await createInbound({ name: 'large bodies', mode: 'cli' });
    const size = 4 * 1024 * 1024;
    const body = Buffer.alloc(size);
    for (let i = 0; i < size; i++) body[i] = 0x61 + ((i * 7 + (i >> 10)) % 26);
    const res = await fetch(`${server.url}/in/${endpoint.secret_token}`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { message_id: string } };
    const { page, context, errors } = await openPage();
    await signIn(page);
    await page.goto(`${server.url}/#/inbound-messages/${data.message_id}`);
    const preview = page.getByTestId('body-preview').locator('pre');
    await preview.waitFor();
    expect(await preview.evaluate((el) => el.textContent)).toBe(body.subarray(0, 64 * 1024).toString('latin1'));
    // The page holds the start only: far less than the body.
    expect(await page.locator('body').evaluate((el) => el.textContent?.length ?? 0)).toBeLessThan(200 * 1024);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-body').click()]);
    expect(download.suggestedFilename()).toBe(`${data.message_id}.txt`);
    const saved = await download.path();
    const bytes = await readFile(saved);
    expect(bytes.length).toBe(size);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(createHash('sha256').update(body).digest('hex'));
    expect(errors).toEqual([]);
    await context.close();
  });
});

describe('outbound and pull', () => {
  it('a failing outbound receiver shows its attempts, and Resend makes another', async () => {
    const endpoint = await api<{ id: string }>(server.url, key, 'POST', '/v1/endpoints', { url: `${receiver.url}/fail` });
    const message = await api<{ message_id: string }>(server.url, key, 'POST', '/v1/messages', { endpoint_id: endpoint.id, payload: { type: 'order.created' } });
    const { page, context } = await openPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Outbound' }).click();
    await page.getByRole('link', { name: `${receiver.url}/fail` }).click();
    await page.getByTestId('outbound-messages').waitFor();
    await page.goto(`${server.url}/#/outbound-messages/${message.message_id}`);
    const attemptRows = async () => {
      await page.reload();
      await page.getByRole('heading', { name: 'Attempts' }).waitFor();
      return page.getByTestId('attempts').locator('tbody tr').count();
    };
    await expect.poll(attemptRows, { timeout: 20_000 }).toBe(1);
    const attempt = page.getByTestId('attempts').locator('tbody tr').first();
    expect(await attempt.textContent()).toContain('500');
    expect(await attempt.textContent()).toContain('receiver says no');
    // What the receiver answered is in its own column.
    expect(await page.getByTestId('attempts').getByRole('columnheader').last().textContent()).toBe('Response body');
    await page.getByRole('button', { name: 'Resend' }).click();
    await expect.poll(attemptRows, { timeout: 20_000 }).toBe(2);
    await context.close();
  });

  it('pull events: list with filters, one payload, ack and delete', async () => {
    const created = await api<{ id: string; full_ingest_url: string }>(server.url, key, 'POST', '/v1/pull-endpoints', {
      name: 'pull e2e',
      event_type_source: 'body',
      event_type_path: 'type',
    });
    for (const type of ['invoice.paid', 'customer.created']) {
      const res = await fetch(created.full_ingest_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type }) });
      expect(res.status).toBeLessThan(300);
    }
    const { page, context } = await openPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Pull' }).click();
    await page.getByRole('link', { name: 'pull e2e' }).click();
    const rows = page.getByTestId('pull-events').locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    await page.getByLabel('Event type').fill('invoice.paid');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => rows.count()).toBe(1);
    await rows.first().getByRole('link').click();
    await page.getByText('"invoice.paid"').waitFor();
    await page.getByRole('button', { name: 'Ack' }).click();
    await expect.poll(() => page.getByTestId('pull-status').textContent()).toBe('delivered');
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete event' }).click();
    await expect.poll(() => page.getByTestId('pull-status').textContent()).toMatch(/^deleted/);
    await context.close();
  });
});

describe('serving', () => {
  it('every inspector response carries the CSP, frame-ancestors and nosniff; the API keeps its 404 envelope', async () => {
    const index = await fetch(`${server.url}/`);
    const html = await index.text();
    const script = /src="(assets\/[^"]+\.js)"/u.exec(html)![1]!;
    for (const res of [index, await fetch(`${server.url}/${script}`), await fetch(`${server.url}/assets/missing.js`)]) {
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/u);
    const unknown = await fetch(`${server.url}/v1/no-such-route`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('ROUTE_NOT_FOUND');
  });

  it('the bundled server sends the built assets brotli- or gzip-compressed by Accept-Encoding, decompressing to the asset', async () => {
    const html = await (await fetch(`${server.url}/`)).text();
    const names = [...html.matchAll(/(?:src|href)="(assets\/[^"]+\.(?:js|css))"/gu)].map((m) => m[1]!);
    expect(names).toHaveLength(2);
    /** The response's bytes as sent (fetch would decompress them). */
    const raw = (path: string, acceptEncoding: string) =>
      new Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
        get(`${server.url}/${path}`, { headers: { 'accept-encoding': acceptEncoding }, agent: false, timeout: 15_000 }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        }).on('error', reject);
      });
    for (const name of names) {
      const file = await readFile(join(REPO_ROOT, 'packages', 'server', 'dist', 'ui', name));
      const plain = await raw(name, 'identity');
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.body.equals(file)).toBe(true);
      for (const [accept, coding, decompress] of [['gzip, deflate, br', 'br', brotliDecompressSync], ['gzip', 'gzip', gunzipSync]] as const) {
        const res = await raw(name, accept);
        expect(res.headers['content-encoding'], `${name} for ${accept}`).toBe(coding);
        expect(res.headers.vary).toBe('accept-encoding');
        expect(res.body.length).toBeLessThan(file.length);
        expect(decompress(res.body).equals(file), `${name} as ${coding}`).toBe(true);
      }
    }
  });
});

describe('refused requests', () => {
  it('"copy as curl" sends exactly one request, to the path and query as refused: no globbing, no dot segments resolved, a redacted token kept literal', async () => {
    const endpoint = await createInbound({ name: 'token (curl)', mode: 'cli', verify_static_token: true, static_token_query_param: 'token', static_token: 'the-right-static-token-0123' });
    const glob = `/in/${endpoint.secret_token}/g{1,2,3}/z?q=[1-4]&token=wrong&x={a,b}`;
    const dots = `/in/${endpoint.secret_token}/../../v1/inbound-endpoints`;
    expect(await postRaw(glob, '{"glob":true}')).toBe(401);
    expect(await postRaw(dots, '{"dots":true}', { 'x-odd': 'caf\u00e9' })).toBe(401);
    let listed: { id: string; path: string; query: string }[] = [];
    for (let i = 0; i < 50 && listed.length < 2; i++) {
      listed = await api<typeof listed>(server.url, key, 'GET', `/v1/inbound-endpoints/${endpoint.id}/rejections`);
      if (listed.length < 2) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(listed.map((r) => [r.path, r.query])).toEqual([
      ['/../../v1/inbound-endpoints', ''],
      ['/g{1,2,3}/z', 'q=[1-4]&token=[redacted]&x={a,b}'],
    ]);
    const capture = await LocalApp.start();
    const { page, context, errors } = await openPage();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await signIn(page);
    const cases = [
      { rejection: listed[1]!, sent: `/in/${endpoint.secret_token}/g{1,2,3}/z?q=[1-4]&token=[redacted]&x={a,b}`, body: '{"glob":true}' },
      { rejection: listed[0]!, sent: dots, body: '{"dots":true}' },
    ];
    for (const [i, { rejection, sent, body }] of cases.entries()) {
      await page.goto(`${server.url}/#/inbound/${endpoint.id}/rejections/${rejection.id}`);
      await page.getByRole('heading', { name: `Refused: POST ${rejection.path}${rejection.query ? `?${rejection.query}` : ''}` }).waitFor();
      await page.getByRole('button', { name: 'Copy as curl' }).click();
      await page.getByRole('button', { name: 'Copy as curl' }).getByText('Copied').waitFor();
      const command = (await page.evaluate('navigator.clipboard.readText()')) as string;
      expect(command).toMatch(/^[\x20-\x7e\n]*$/u);
      await runCopiedCurl(command, capture);
      expect(capture.requests.length, `requests after the command of ${sent}`).toBe(i + 1);
      expect(capture.requests[i]).toMatchObject({ method: 'POST', url: sent });
      expect(capture.requests[i]!.body.toString()).toBe(body);
    }
    // The header line with bytes outside printable ASCII arrives as the same bytes as refused.
    const detail = await api<{ raw_headers: [string, string][] }>(server.url, key, 'GET', `/v1/inbound-endpoints/${endpoint.id}/rejections/${listed[0]!.id}`);
    const odd = detail.raw_headers.find(([name]) => name === 'x-odd')!;
    expect(odd[1]).toMatch(/^caf[^\x20-\x7e]+$/u);
    expect(capture.requests[1]!.headers).toContainEqual(odd);
    await capture.stop();
    expect(errors).toEqual([]);
    await context.close();
  });

  it('appear live beside the messages; the detail says what to check, shows the request, and "copy as curl" sends it again', async () => {
    const endpoint = await createInbound({ name: 'github (refusals)', mode: 'cli', verify_hmac: true, hmac_scheme: 'github', hmac_secret: GITHUB_SECRET });
    const { page, context, errors } = await openPage();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await signIn(page, key, `&endpoint=${endpoint.id}`);
    await page.getByRole('heading', { name: /github \(refusals\)/ }).waitFor();
    await expect.poll(() => page.getByTestId('live-state').textContent()).toBe('live');
    await page.getByText('None: every request that reached the ingest URL was accepted.').waitFor();

    const body = '{"action":"opened","number":7}';
    const wrong = await sign('a mistyped secret', body);
    const refused = await fetch(`${server.url}/in/${endpoint.secret_token}/github?source=e2e`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-hub-signature-256': wrong },
    });
    expect(refused.status).toBe(401);
    const rows = page.getByTestId('rejections').locator('tr[data-rejection-id]');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(1);
    const rowText = (await rows.first().textContent())!;
    for (const cell of ['401', 'signature_mismatch', 'POST /github?source=e2e', 'the x-hub-signature-256 header does not match']) expect(rowText).toContain(cell);
    await expectNoSeriousViolations(page, 'the messages with refused requests');

    await rows.first().getByRole('link').click();
    await page.getByRole('heading', { name: 'Refused: POST /github?source=e2e' }).waitFor();
    expect(await page.getByTestId('rejection-detail').textContent()).toContain('signature_mismatch: the x-hub-signature-256 header does not match the HMAC-SHA256 of the body');
    const shown: [string, string][] = [];
    for (const tr of await page.getByTestId('headers').locator('tr').all()) {
      shown.push([(await tr.locator('th').textContent())!, (await tr.locator('td').textContent())!]);
    }
    expect(shown).toContainEqual(['x-hub-signature-256', wrong]);
    await page.getByText('matches the stored hash').waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, 'refused.png') });
    await expectNoSeriousViolations(page, 'one refused request');

    // The copy button puts the command shown on the clipboard; run, it is refused the same way again.
    const command = (await page.getByTestId('curl').textContent())!;
    await page.getByRole('button', { name: 'Copy as curl' }).click();
    await page.getByRole('button', { name: 'Copy as curl' }).getByText('Copied').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(command);
    const { stdout } = await execFileAsync('sh', ['-c', `${command} -s -o /dev/null -w '%{http_code}'`]);
    expect(stdout).toBe('401');
    // Refusals are written off the request path: listed a moment after the answer.
    const refusals = async (count: number) => {
      for (let i = 0; i < 50; i++) {
        const list = await api<{ id: string; body_sha256: string; path: string; query: string }[]>(server.url, key, 'GET', `/v1/inbound-endpoints/${endpoint.id}/rejections`);
        if (list.length === count) return list;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`${count} refusals were not listed`);
    };
    const stored = await refusals(2);
    expect(stored[0]).toMatchObject({ path: '/github', query: 'source=e2e', body_sha256: stored[1]!.body_sha256 });

    // A body over the 64 KiB kept: the curl says it sends only the start.
    const big = `{"zen":"${'x'.repeat(70 * 1024)}"}`;
    const bigRefused = await fetch(`${server.url}/in/${endpoint.secret_token}`, { method: 'POST', body: big, headers: { 'content-type': 'application/json', 'x-hub-signature-256': wrong } });
    expect(bigRefused.status).toBe(401);
    const [latest] = await refusals(3);
    await page.goto(`${server.url}/#/inbound/${endpoint.id}/rejections/${latest!.id}`);
    await page.getByRole('heading', { name: 'Refused: POST /' }).waitFor();
    expect(await page.getByTestId('curl-note').first().textContent()).toContain(`the command sends only that start`);
    expect(errors).toEqual([]);
    await context.close();
  });
});
