import { sign } from '@octokit/webhooks-methods';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, seriousA11yViolations, type TestBrowser } from './helpers/browser.js';
import { testResources } from './helpers/fixture.js';
import { api, sendWebhook } from './helpers/listen.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * The inspector's ways to send again and to find, in chromium against the real server: Edit and
 * replay (the copy checked through the API and at the app behind a running `hookrelay listen`),
 * the filter box's text search with the window it read, and "Replay these" for the list's filter:
 * the estimate, then the job to its end, or cancelled. Jobs go in chunks of two with a second's
 * pause, as a large one would, so that one is still running when the page cancels it.
 */

const SECRET = 'inspector-replay-e2e-secret';

let server: RunningServer;
let browser: TestBrowser;
const { configDir, localApp, listen, cleanup } = testResources();

beforeAll(async () => {
  server = await startServer({ env: { HOOKRELAY_BULK_CHUNK_SIZE: '2', HOOKRELAY_BULK_CHUNK_DELAY_MS: '1000' } });
  browser = await launchBrowser();
});

afterAll(async () => {
  await cleanup();
  await browser?.close();
  await server?.stop();
});

interface Message {
  id: string;
  body: string;
  raw_headers: [string, string][];
  replay_of: string | null;
  edited: boolean;
  signed: boolean | null;
  replay_count: number;
  event_type: string | null;
}

const getMessage = (id: string) => api<Message>(server.url, server.apiKey, 'GET', `/v1/inbound-messages/${id}?body_encoding=base64`);
const bodyText = (message: Message) => Buffer.from(message.body, 'base64').toString('utf8');
const header = (message: { raw_headers?: [string, string][]; headers?: [string, string][] }, name: string) =>
  (message.raw_headers ?? message.headers ?? []).filter(([n]) => n.toLowerCase() === name.toLowerCase()).map(([, v]) => v);

async function openPage(): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
  const context = await browser.context();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('dialog', (dialog) => (errors.push(`dialog: ${dialog.message()}`), void dialog.dismiss()));
  await page.goto(`${server.url}/#key=${server.apiKey}`);
  await page.getByRole('heading', { name: 'Inbound endpoints' }).waitFor();
  return { page, errors, close: () => context.close() };
}

async function createInbound(body: Record<string, unknown>): Promise<{ id: string; secret_token: string }> {
  return api(server.url, server.apiKey, 'POST', '/v1/inbound-endpoints', body);
}

/** `<input type=datetime-local>`'s value for an instant, in the page's own zone. */
const localInput = (page: Page, iso: string): Promise<string> =>
  page.evaluate((at) => {
    const d = new Date(at);
    const two = (n: number) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  }, iso);

describe('edit and replay', () => {
  it('sends an edited copy, signed with the endpoint secret or unsigned, that the app behind a listener receives', async () => {
    const endpoint = await createInbound({ name: 'edit me', mode: 'cli', verify_hmac: true, hmac_scheme: 'github', hmac_secret: SECRET });
    const app = await localApp();
    const listener = listen([endpoint.id, '--forward-to', app.url], await configDir(), { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey });
    await listener.waitForStderr(/connected \(websocket\)/u);
    const original = '{"action":"opened","number":7,"big":12345678901234567890}';
    const sent = await sendWebhook(server.url, endpoint.secret_token, {
      pathAndQuery: '/hooks?x=1',
      headers: [
        ['X-GitHub-Event', 'pull_request'],
        ['X-Hub-Signature-256', await sign(SECRET, original)],
        ['Content-Type', 'application/json'],
        ['X-Remove-Me', 'gone'],
      ],
      body: original,
    });
    await app.waitFor(1);

    const { page, errors, close } = await openPage();
    await page.goto(`${server.url}/#/inbound-messages/${sent.messageId}`);
    await page.getByRole('button', { name: 'Edit and replay' }).click();
    const editor = page.getByLabel('Body (JSON)');
    // The body laid out from its own text: the large number stays as sent.
    expect(await editor.inputValue()).toBe('{\n  "action": "opened",\n  "number": 7,\n  "big": 12345678901234567890\n}');
    const state = page.getByTestId('edit-state');
    const submit = page.getByRole('button', { name: 'Replay the edited copy' });
    expect(await state.textContent()).toBe('Nothing edited yet: Replay sends the message as it came.');
    expect(await submit.isDisabled()).toBe(true);
    await editor.fill('{"action": "closed",');
    await expect.poll(() => state.textContent()).toMatch(/^the body is not JSON: /u);
    expect(await submit.isDisabled()).toBe(true);
    const edited = '{"action": "closed", "number": 7}';
    await editor.fill(edited);
    // Content-Length is the copy's own: shown, not editable.
    const rows = page.getByRole('table', { name: 'Headers of the copy' }).locator('tr');
    const rowOf = async (name: string) => rows.nth(await rows.evaluateAll((trs, wanted) => trs.findIndex((tr) => tr.querySelector('input')!.value === wanted), name));
    expect(await (await rowOf('Content-Length')).getByRole('textbox').first().getAttribute('readonly')).not.toBeNull();
    expect(await (await rowOf('Content-Length')).getByRole('button').count()).toBe(0);
    await (await rowOf('X-Remove-Me')).getByRole('button', { name: /^Remove/ }).click();
    await (await rowOf('X-GitHub-Event')).getByRole('textbox').nth(1).fill('pull_request_review');
    await page.getByRole('button', { name: 'Add a header' }).click();
    const added = rows.nth((await rows.count()) - 1);
    await added.getByRole('textbox').nth(0).fill('X-Edited');
    await added.getByRole('textbox').nth(1).fill('by the inspector');
    expect(await page.getByRole('checkbox', { name: /Sign the copy/ }).isChecked()).toBe(true);
    expect(await state.textContent()).toBe('Edits: the body, X-GitHub-Event, X-Edited, X-Remove-Me.');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await submit.click();
    const link = page.getByTestId('edited-copy');
    await link.waitFor();
    expect(await page.getByRole('status').filter({ has: link }).textContent()).toContain('Edited copy sent (signed)');
    const copyId = (await link.textContent())!;

    const copy = await getMessage(copyId);
    expect(copy).toMatchObject({ replay_of: sent.messageId, edited: true, signed: true, event_type: 'pull_request_review' });
    expect(bodyText(copy)).toBe(edited);
    expect(header(copy, 'X-Edited')).toEqual(['by the inspector']);
    expect(header(copy, 'X-Remove-Me')).toEqual([]);
    expect(header(copy, 'X-Hub-Signature-256')).toEqual([await sign(SECRET, edited)]);
    // The original stays as it came.
    const after = await getMessage(sent.messageId);
    expect(bodyText(after)).toBe(original);
    expect(after.replay_count).toBe(0);
    await app.waitFor(2);
    const atApp = app.requests[1]!;
    expect([atApp.url, atApp.body.toString('utf8')]).toEqual(['/hooks?x=1', edited]);
    expect(header(atApp, 'X-Edited')).toEqual(['by the inspector']);
    expect(header(atApp, 'X-Hub-Signature-256')).toEqual([await sign(SECRET, edited)]);

    // Unsigned: the sender's signature header is dropped, as it no longer matches the bytes.
    await page.getByRole('checkbox', { name: /Sign the copy/ }).uncheck();
    await editor.fill('{"action": "reopened"}');
    await submit.click();
    await expect.poll(() => link.textContent()).not.toBe(copyId);
    const unsigned = await getMessage((await link.textContent())!);
    expect(unsigned).toMatchObject({ replay_of: sent.messageId, edited: true, signed: false });
    expect(bodyText(unsigned)).toBe('{"action": "reopened"}');
    expect(header(unsigned, 'X-Hub-Signature-256')).toEqual([]);
    await app.waitFor(3);
    expect(app.requests[2]!.body.toString('utf8')).toBe('{"action": "reopened"}');

    // The copy's own page names the original; the list marks both copies.
    await link.click();
    await expect.poll(() => page.getByTestId('copy-of').textContent()).toBe(`${sent.messageId} · unsigned`);
    await page.goto(`${server.url}/#/inbound/${endpoint.id}`);
    await expect.poll(() => page.locator('tr[data-message-id]').count()).toBe(3);
    for (const id of [copyId, unsigned.id]) expect(await page.locator(`tr[data-message-id="${id}"]`).textContent()).toContain('edited copy');
    expect(await page.locator(`tr[data-message-id="${sent.messageId}"]`).textContent()).not.toContain('edited copy');
    expect(errors).toEqual([]);
    await close();
  });
});

describe('search and replay these', () => {
  it("the filter box's text narrows the list to bodies and header values holding it, and says the window it read", async () => {
    const endpoint = await createInbound({ name: 'search me', mode: 'cli' });
    const ids: string[] = [];
    for (const [body, customer] of [
      ['{"customer":"cus_alpha","n":1}', 'none'],
      ['{"customer":"cus_beta","n":2}', 'none'],
      ['{"n":3}', 'cus_alpha'],
    ] as const) {
      ids.push((await sendWebhook(server.url, endpoint.secret_token, { headers: [['Content-Type', 'application/json'], ['X-Customer', customer]], body })).messageId);
    }
    const { page, errors, close } = await openPage();
    await page.goto(`${server.url}/#/inbound/${endpoint.id}`);
    const rows = page.locator('tr[data-message-id]');
    await expect.poll(() => rows.count()).toBe(3);
    await page.getByRole('searchbox', { name: 'Search' }).fill('cus_alpha');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(async () => (await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-message-id')))).join()).toBe([ids[2], ids[0]].join());
    const window = page.getByTestId('search-window');
    expect(await window.textContent()).toContain('Searched for “cus_alpha” in the bodies and header values of the messages received from');
    // By default the last 24 hours, to now.
    const [from, to] = (await window.locator('time').evaluateAll((times) => times.map((t) => t.getAttribute('datetime')!))).map((iso) => Date.parse(iso));
    expect(to! - from!).toBe(24 * 3600 * 1000);
    expect(Math.abs(to! - Date.now())).toBeLessThan(60_000);

    // Combined with the event type filter: none of these has one.
    await page.getByLabel('Event type').fill('push');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('No message matches the filters.').waitFor();
    // A window longer than a search reads is the API's refusal, named.
    await page.getByLabel('Event type').fill('');
    await page.getByLabel('From').fill(await localInput(page, new Date(Date.now() - 8 * 24 * 3600 * 1000).toISOString()));
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toMatch(/^INVALID_REQUEST: .*query\.received_after/u);
    await page.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => rows.count()).toBe(3);
    expect(await window.count()).toBe(0);
    // The browser logs the refused request itself, and nothing else.
    expect(errors).toEqual(['Failed to load resource: the server responded with a status of 400 (Bad Request)']);
    await close();
  });

  it('"replay these" shows the estimate of the list\'s filter, then runs the job to its end; a second one is cancelled from the page', async () => {
    const endpoint = await createInbound({ name: 'replay these', mode: 'cli' });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const event = i === 2 ? 'issues' : 'push';
      ids.push((await sendWebhook(server.url, endpoint.secret_token, { headers: [['X-GitHub-Event', event], ['Content-Type', 'application/json']], body: `{"n":${i}}` })).messageId);
    }
    const { page, errors, close } = await openPage();
    await page.goto(`${server.url}/#/inbound/${endpoint.id}`);
    const rows = page.locator('tr[data-message-id]');
    await expect.poll(() => rows.count()).toBe(6);
    const replayThese = page.getByRole('button', { name: 'Replay these…' });
    // The whole list has no window to give a job.
    expect(await replayThese.isDisabled()).toBe(true);
    await page.getByText('Set From (and Apply) to replay these').waitFor();
    await page.getByLabel('From').fill(await localInput(page, new Date(Date.now() - 10 * 60_000).toISOString()));
    await page.getByLabel('Event type').fill('push');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => rows.count()).toBe(5);
    await replayThese.click();
    await expect.poll(() => page.getByTestId('replay-estimate').textContent()).toBe('5 messages match, to replay to the listeners connected now, oldest first.');
    // The estimate starts nothing.
    expect(await api<unknown[]>(server.url, server.apiKey, 'GET', '/v1/bulk-retries')).toEqual([]);
    await page.getByRole('button', { name: 'Replay 5 messages' }).click();
    const job = page.getByTestId('replay-job');
    await job.waitFor();
    // Started: running, with the bar and a way to stop it, until the counts say it ended.
    expect(await job.getAttribute('data-status')).toBe('running');
    await job.getByRole('button', { name: 'Cancel the job' }).waitFor();
    await expect.poll(() => job.getAttribute('data-status'), { timeout: 20_000 }).toBe('done');
    expect(await job.getByRole('status').textContent()).toMatch(/^Job [0-9a-f-]{36} done: 5 of 5 replayed$/u);
    expect(await job.locator('progress').evaluate((bar) => [(bar as unknown as { value: number }).value, (bar as unknown as { max: number }).max])).toEqual([5, 5]);
    expect(await seriousA11yViolations(page)).toEqual([]);

    const jobs = await api<{ id: string; status: string; matched: number; done: number; filter: { event_type: string | null } }[]>(server.url, server.apiKey, 'GET', '/v1/bulk-retries');
    expect(jobs).toMatchObject([{ status: 'done', matched: 5, done: 5, filter: { event_type: 'push' } }]);
    expect(await job.locator('code').textContent()).toBe(jobs[0]!.id);
    const counts = await Promise.all(ids.map(async (id) => (await getMessage(id)).replay_count));
    expect(counts).toEqual([1, 1, 0, 1, 1, 1]);
    expect(await job.getByRole('button', { name: 'Cancel the job' }).count()).toBe(0);

    // Again, cancelled from the page at once: it stops within the chunk in flight.
    await replayThese.click();
    await page.getByRole('button', { name: 'Replay 5 messages' }).click();
    await expect.poll(() => job.locator('code').textContent()).not.toBe(jobs[0]!.id);
    await job.getByRole('button', { name: 'Cancel the job' }).click();
    await expect.poll(() => job.getAttribute('data-status')).toBe('cancelled');
    const second = await api<{ id: string; status: string; done: number }>(server.url, server.apiKey, 'GET', `/v1/bulk-retries/${await job.locator('code').textContent()}`);
    expect(second.status).toBe('cancelled');
    expect(second.done).toBeLessThan(5);
    expect(await job.getByRole('status').textContent()).toBe(`Job ${second.id} cancelled: ${second.done} of 5 replayed`);
    expect(errors).toEqual([]);
    await close();
  });
});
