import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BrowserContext, Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, seriousA11yViolations, type TestBrowser } from './helpers/browser.js';
import { MARKUP_BODY, startHttpsReceiver, type HttpsReceiver } from './helpers/https-receiver.js';
import { api, until } from './helpers/listen.js';
import { REPO_ROOT } from './helpers/paths.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * The customer portal in a real browser (Debian's chromium through playwright-core) against the
 * real server process: a customer opens the link, adds an endpoint subscribed to a catalogue type,
 * sees the operator's event delivered live with its attempt, reads a failing delivery's answer and
 * retries it, rotates the secret, sends a test event; another owner's ids show nothing, markup in
 * what customers and receivers control runs nothing, axe finds nothing serious, an ended link says
 * so, and the page works inside a frame of an allowed origin and is refused in another's. It also
 * writes docs/portal.md's screenshots.
 */

const SCREENSHOTS = join(REPO_ROOT, 'docs', 'screenshots');
const OWNER = 'cus_acme';
const MARKUP = `<img src=x onerror="alert('markup')">`;

let server: RunningServer;
let receiver: HttpsReceiver;
let browser: TestBrowser;
/** Host pages framing the portal: one of an origin the server allows, one of another. */
let allowedHost: HostPage;
let otherHost: HostPage;
let link: { id: string; token: string; url: string };

interface HostPage {
  url: string;
  stop(): Promise<void>;
}

/** A page at its own origin that frames whatever `?src=` names and records the messages it is posted. */
async function startHostPage(): Promise<HostPage> {
  const http: Server = createServer((req, res) => {
    const src = new URL(req.url ?? '/', 'http://host').searchParams.get('src') ?? '';
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><html lang="en"><head><title>host</title></head><body>
<h1>The operator's app</h1>
<iframe title="Webhooks portal" width="1200" height="700" src="${src.replace(/"/g, '&quot;')}"></iframe>
<script>window.portalMessages = []; addEventListener('message', (e) => window.portalMessages.push({ origin: e.origin, data: e.data }));</script>
</body></html>`);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, stop: () => new Promise((resolve) => http.close(() => resolve())) };
}

const operator = <T>(method: string, path: string, body?: unknown) => api<T>(server.url, server.apiKey, method, path, body);

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  allowedHost = await startHostPage();
  otherHost = await startHostPage();
  server = await startServer({
    env: {
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
      HOOKRELAY_TLS_CA_FILE: receiver.caFile,
      HOOKRELAY_RETRY_SCHEDULE: '3600',
      HOOKRELAY_PORTAL_FRAME_ANCESTORS: allowedHost.url,
    },
  });
  browser = await launchBrowser();
  await operator('POST', '/v1/event-types', {
    name: 'invoice.paid',
    description: 'An invoice was paid in full.',
    schema: { type: 'object', properties: { invoice: { type: 'string' }, amount: { type: 'integer' } }, required: ['invoice'] },
    example: { invoice: 'in_1001', amount: 4200 },
  });
  await operator('POST', '/v1/event-types', { name: 'invoice.voided', description: `Voided. ${MARKUP}`, example: { invoice: MARKUP } });
  link = await operator('POST', '/v1/portal-links', { owner_id: OWNER });
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await receiver?.stop();
  await allowedHost?.stop();
  await otherHost?.stop();
});

interface Opened {
  page: Page;
  context: BrowserContext;
  dialogs: string[];
  errors: string[];
  /** The CSP violations the page reported so far. */
  violations: () => Promise<string[]>;
}

/** A page in a fresh context recording dialogs, errors and CSP violations (a listener added before any script of the page). */
async function openPage(): Promise<Opened> {
  const context = await browser.context();
  await context.addInitScript(`window.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));`);
  const page = await context.newPage();
  const dialogs: string[] = [];
  const errors: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('console', (message) => message.type() === 'error' && errors.push(`${message.text()} ${message.location().url}`));
  page.on('pageerror', (error) => errors.push(error.message));
  return { page, context, dialogs, errors, violations: () => page.evaluate('window.cspViolations') as Promise<string[]> };
}

async function expectNoSeriousViolations(page: Page, view: string): Promise<void> {
  const violations = await seriousA11yViolations(page);
  expect(violations, `axe-core on ${view}: ${JSON.stringify(violations, null, 1)}`).toEqual([]);
}

let customer: Opened;
/** Ids made along the way. */
const made: { endpoint?: string; failing?: string } = {};

describe('the customer portal', () => {
  it('opens from the link: the token leaves the address bar, the session and the live socket come up', async () => {
    customer = await openPage();
    const { page } = customer;
    await page.goto(`${server.url}/portal#token=${link.token}`);
    await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
    expect(page.url()).toBe(`${server.url}/portal#/`);
    expect(await page.evaluate('sessionStorage.getItem("hookrelay.portalToken")')).toBe(link.token);
    await expect.poll(() => page.getByTestId('live-state').textContent()).toBe('live');
    expect(await page.getByTestId('session').textContent()).toContain('default');
    await page.getByText('No endpoint yet.').waitFor();
    expect(server.logs()).not.toContain(link.token);
  });

  it('adds an endpoint subscribed to a catalogue type; its secret is shown once', async () => {
    const { page } = customer;
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByLabel('Endpoint URL').fill(`${receiver.url}/ok/acme`);
    await page.getByLabel('Description').fill('Billing service');
    await page.getByRole('checkbox', { name: 'invoice.paid' }).check();
    await expectNoSeriousViolations(page, 'the form that adds an endpoint');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = (await page.getByTestId('secret-value').textContent())!;
    expect(secret).toMatch(/^whsec_/u);
    const [listed] = await operator<{ id: string; owner_id: string; event_types: string[] }[]>('GET', `/v1/endpoints?owner_id=${OWNER}`);
    made.endpoint = listed!.id;
    const endpoint = await operator<{ owner_id: string; event_types: string[] }>('GET', `/v1/endpoints/${made.endpoint}`);
    expect(endpoint).toMatchObject({ owner_id: OWNER, event_types: ['invoice.paid'] });
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.content()).not.toContain(secret);
    await page.locator(`tr[data-endpoint-id="${made.endpoint}"]`).waitFor();
    await expectNoSeriousViolations(page, 'the endpoint list');
    await page.screenshot({ path: join(SCREENSHOTS, 'portal-endpoints.png') });
  });

  it("shows the operator's event delivered, live, with its attempt", async () => {
    const { page } = customer;
    await page.locator(`tr[data-endpoint-id="${made.endpoint}"]`).getByRole('link').click();
    await page.getByTestId('endpoint-types').getByText('invoice.paid').waitFor();
    await page.getByText('No message yet.').waitFor();
    await operator('POST', '/v1/events', { event_type: 'invoice.paid', owner_id: OWNER, payload: { invoice: 'in_2001', amount: 990 } });
    const row = page.getByTestId('portal-messages').locator('tbody tr').first();
    await expect.poll(() => row.getByTestId('message-status').textContent(), { timeout: 15_000 }).toBe('succeeded');
    expect(await row.textContent()).toContain('200');
    await until(() => receiver.received.some((r) => r.path === '/ok/acme'), 'the delivery');
    await row.getByRole('link').click();
    const attempt = page.getByTestId('portal-attempts').locator('tbody tr');
    await expect.poll(() => attempt.count()).toBe(1);
    expect(await attempt.textContent()).toContain('200');
    await page.getByText('"in_2001"').waitFor();
    await expectNoSeriousViolations(page, 'one message');
  });

  it("a failing delivery's answer is shown as text, and a retry attempts it again", async () => {
    const { page } = customer;
    await page.goto(`${server.url}/portal#/`);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByLabel('Endpoint URL').fill(`${receiver.url}/markup?q=${encodeURIComponent(MARKUP)}`);
    await page.getByLabel('Description').fill(MARKUP);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByTestId('secret-value').waitFor();
    await page.getByRole('button', { name: 'Done' }).click();
    const endpoints = await operator<{ id: string; description: string }[]>('GET', `/v1/endpoints?owner_id=${OWNER}`);
    made.failing = endpoints.find((e) => e.description === MARKUP)!.id;
    await page.locator(`tr[data-endpoint-id="${made.failing}"]`).getByText(MARKUP, { exact: true }).waitFor();
    await page.goto(`${server.url}/portal#/endpoints/${made.failing}`);
    await expect.poll(() => page.getByTestId('live-state').textContent()).toBe('live');
    // A test event: the catalogue type's example, to this endpoint.
    await page.getByLabel('Test event').selectOption('invoice.paid');
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByRole('status').getByText(/^Sent: /u).waitFor();
    const row = page.getByTestId('portal-messages').locator('tbody tr').first();
    await expect.poll(() => row.getByTestId('message-status').textContent(), { timeout: 15_000 }).toBe('pending_retry');
    const tested = receiver.received.filter((r) => r.path === '/markup');
    expect(tested.map((r) => JSON.parse(r.body.toString()))).toEqual([{ invoice: 'in_1001', amount: 4200 }]);
    expect(tested[0]!.headers['hookrelay-event-type']).toBe('invoice.paid');
    await page.screenshot({ path: join(SCREENSHOTS, 'portal-endpoint.png') });
    await expectNoSeriousViolations(page, "an endpoint's messages");

    await row.getByRole('button', { name: /^Retry/u }).click();
    await expect.poll(() => row.getByRole('cell').nth(2).textContent(), { timeout: 15_000 }).toBe('2');
    await row.getByRole('link').click();
    const attempts = page.getByTestId('portal-attempts').locator('tbody tr');
    await expect.poll(() => attempts.count()).toBe(2);
    await attempts.first().getByText(MARKUP_BODY, { exact: true }).waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, 'portal-message.png') });
    // "Retry every failed message since …": one bulk job for the endpoint's failed messages.
    await page.goto(`${server.url}/portal#/endpoints/${made.failing}`);
    await page.getByLabel('Retry every failed message since').fill('2020-01-01T00:00:00');
    await page.getByRole('button', { name: 'Retry failed' }).click();
    await expect.poll(() => page.getByTestId('bulk-retry').textContent(), { timeout: 15_000 }).toBe('done: 1 of 1 retried');
    await until(() => receiver.received.filter((r) => r.path === '/markup').length === 3, 'the bulk retry');
  });

  it('rotates a secret and shows the new one once', async () => {
    const { page } = customer;
    await page.goto(`${server.url}/portal#/`);
    const row = page.locator(`tr[data-endpoint-id="${made.endpoint}"]`);
    await row.getByRole('button', { name: /^Rotate secret/u }).click();
    const secret = (await page.getByTestId('secret-value').textContent())!;
    expect(secret).toMatch(/^whsec_/u);
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.content()).not.toContain(secret);
    await page.reload();
    await row.waitFor();
    expect(await page.getByTestId('secret').count()).toBe(0);
  });

  it('edits, pauses and resumes an endpoint, and deletes one after a confirmation', async () => {
    const { page } = customer;
    await page.goto(`${server.url}/portal#/endpoints/${made.endpoint}`);
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Description').fill('Billing service (EU)');
    await page.getByRole('checkbox', { name: 'invoice.voided' }).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.getByTestId('endpoint-types').textContent()).toBe('invoice.paid, invoice.voided');
    expect(await page.getByTestId('endpoint-description').textContent()).toBe('Billing service (EU)');
    await page.goto(`${server.url}/portal#/`);
    const row = page.locator(`tr[data-endpoint-id="${made.failing}"]`);
    await row.getByRole('button', { name: /^Pause/u }).click();
    await row.getByText('paused').waitFor();
    await row.getByRole('button', { name: /^Resume/u }).click();
    await row.getByText('active').waitFor();
    // Keyboard: the rows' links take focus with the arrow keys.
    await page.getByTestId('portal-endpoints').getByRole('link').first().focus();
    await page.keyboard.press('ArrowDown');
    expect(await page.evaluate('document.activeElement.closest("tr").rowIndex')).toBe(2);
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await row.waitFor();
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete endpoint' }).click();
    await row.waitFor({ state: 'detached' });
  });

  it('shows the catalogue with descriptions, schemas and examples, markup as text', async () => {
    const { page } = customer;
    await page.getByRole('link', { name: 'Event types' }).click();
    await page.getByRole('heading', { name: 'invoice.paid' }).waitFor();
    await page.getByText('An invoice was paid in full.').waitFor();
    await page.getByTestId('example-invoice.paid').getByText('"in_1001"').waitFor();
    await page.getByText(`Voided. ${MARKUP}`, { exact: true }).waitFor();
    await expectNoSeriousViolations(page, 'the catalogue');
    await page.screenshot({ path: join(SCREENSHOTS, 'portal-catalogue.png') });
  });

  it("another owner's and the operator's ids typed in show nothing of theirs", async () => {
    const { page } = customer;
    const theirs = await operator<{ id: string }>('POST', '/v1/endpoints', { url: `${receiver.url}/ok/other`, owner_id: 'cus_other', description: 'other customer secret endpoint' });
    const message = await operator<{ message_id: string }>('POST', '/v1/messages', { endpoint_id: theirs.id, payload: { secret: 'other customer payload' } });
    await page.goto(`${server.url}/portal#/endpoints/${theirs.id}`);
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('ENDPOINT_NOT_FOUND');
    await page.goto(`${server.url}/portal#/messages/${message.message_id}`);
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('NOT_FOUND');
    await page.goto(`${server.url}/portal#/`);
    await page.locator(`tr[data-endpoint-id="${made.endpoint}"]`).waitFor();
    const html = await page.content();
    for (const text of ['other customer', theirs.id, message.message_id]) expect(html).not.toContain(text);
    // The API's 404s for those ids are the browser's console errors of this step, and its only ones.
    const refused = customer.errors.filter((error) => error.includes(theirs.id) || error.includes(message.message_id));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((error) => error.includes('404'))).toBe(true);
    customer.errors.splice(0, customer.errors.length, ...customer.errors.filter((error) => !refused.includes(error)));
  });

  it('a read-only link shows the same pages with nothing that changes anything', async () => {
    const readOnly = await operator<{ token: string }>('POST', '/v1/portal-links', { owner_id: OWNER, read_only: true });
    const { page, context, errors } = await openPage();
    await page.goto(`${server.url}/portal#token=${readOnly.token}`);
    await page.locator(`tr[data-endpoint-id="${made.endpoint}"]`).waitFor();
    expect(await page.getByTestId('session').textContent()).toContain('read-only');
    await page.goto(`${server.url}/portal#/endpoints/${made.endpoint}`);
    await page.getByTestId('portal-messages').locator('tbody tr').first().waitFor();
    await page.goto(`${server.url}/portal#/messages/${(await operator<{ message_id: string }[]>('GET', `/v1/logs?endpoint_id=${made.endpoint}`))[0]!.message_id}`);
    await page.getByTestId('portal-attempts').locator('tbody tr').first().waitFor();
    for (const view of ['#/', `#/endpoints/${made.endpoint}`]) {
      await page.goto(`${server.url}/portal${view}`);
      await page.getByRole('table').first().waitFor();
      expect(await page.getByRole('button').count(), view).toBe(0);
    }
    expect(errors).toEqual([]);
    await context.close();
  });

  it('ran nothing of the markup: no dialog, no CSP violation, no error', async () => {
    expect(customer.dialogs).toEqual([]);
    expect(await customer.violations()).toEqual([]);
    expect(customer.errors).toEqual([]);
  });

  it('an ended link closes the open page at once, and opens as ended', async () => {
    const { page } = customer;
    await operator('DELETE', `/v1/portal-links/${link.id}`);
    await page.getByRole('heading', { name: 'This link has ended' }).waitFor({ timeout: 10_000 });
    expect(await page.evaluate('sessionStorage.getItem("hookrelay.portalToken")')).toBeNull();
    await page.goto(`${server.url}/portal#token=${link.token}`);
    await page.getByRole('heading', { name: 'This link has ended' }).waitFor();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('UNAUTHORIZED');
    await expectNoSeriousViolations(page, 'the ended link');
    await customer.context.close();
  });
});

describe('embedded in a host page', () => {
  async function framed(host: HostPage, token: string): Promise<{ page: Page; context: BrowserContext; messages: () => Promise<{ origin: string; data: { type: string } }[]> }> {
    const context = await browser.context();
    const page = await context.newPage();
    const src = `${server.url}/portal#token=${token}&theme=dark&accent=${encodeURIComponent('#ff9f1c')}`;
    await page.goto(`${host.url}/?src=${encodeURIComponent(src)}`);
    return { page, context, messages: () => page.evaluate('window.portalMessages') as Promise<{ origin: string; data: { type: string } }[]> };
  }
  const portalFrame = (page: Page): Frame | undefined => page.frames().find((f) => f !== page.mainFrame());

  it('works inside a frame of an allowed origin, in its theme and accent, and tells the host when it is ready and when it ended', async () => {
    const embedded = await operator<{ id: string; token: string }>('POST', '/v1/portal-links', { owner_id: OWNER });
    const { page, context, messages } = await framed(allowedHost, embedded.token);
    const frame = page.frameLocator('iframe');
    await frame.getByRole('heading', { name: 'Endpoints' }).waitFor();
    await frame.locator(`tr[data-endpoint-id="${made.endpoint}"]`).waitFor();
    await expect.poll(messages).toEqual([{ origin: server.url, data: { type: 'hookrelay:portal:ready', expires_at: expect.any(String) } }]);
    const look = await portalFrame(page)!.evaluate('[document.documentElement.dataset.theme, getComputedStyle(document.documentElement).getPropertyValue("--accent").trim()]');
    expect(look).toEqual(['dark', '#ff9f1c']);
    await page.screenshot({ path: join(SCREENSHOTS, 'portal-embedded.png') });
    await operator('DELETE', `/v1/portal-links/${embedded.id}`);
    await frame.getByRole('heading', { name: 'This link has ended' }).waitFor({ timeout: 10_000 });
    await expect.poll(async () => (await messages()).map((m) => m.data.type)).toEqual(['hookrelay:portal:ready', 'hookrelay:portal:expired']);
    await context.close();
  });

  it('in the dark theme and an accent of its own, axe finds nothing serious', async () => {
    // On its own page: axe in the host page would wait for an axe of its own inside the cross-origin frame.
    const themed = await operator<{ token: string }>('POST', '/v1/portal-links', { owner_id: OWNER });
    const context = await browser.context();
    const page = await context.newPage();
    await page.goto(`${server.url}/portal#token=${themed.token}&theme=dark&accent=${encodeURIComponent('#ff9f1c')}`);
    await page.locator(`tr[data-endpoint-id="${made.endpoint}"]`).waitFor();
    await expectNoSeriousViolations(page, 'the endpoint list, dark');
    await context.close();
  });

  it('is refused inside a frame of another origin', async () => {
    const embedded = await operator<{ token: string }>('POST', '/v1/portal-links', { owner_id: OWNER });
    const { page, context, messages } = await framed(otherHost, embedded.token);
    await page.getByRole('heading', { name: "The operator's app" }).waitFor();
    // Chromium shows its own error page in place of a document its frame-ancestors refuses.
    await expect.poll(() => portalFrame(page)?.url() ?? '').toMatch(/^chrome-error:/u);
    expect(await page.frameLocator('iframe').getByRole('heading', { name: 'Endpoints' }).count()).toBe(0);
    expect(await messages()).toEqual([]);
    await context.close();
  });
});
