import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { api } from './helpers/listen.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * A portal link that expires while its page is open, in a real browser: the shortest link lives a
 * minute, so this file waits that long, beside the others of the parallel group rather than in the
 * serial one (the server ends the page by its own timer; nothing here is timed closely).
 */

let server: RunningServer;
let browser: TestBrowser;

beforeAll(async () => {
  server = await startServer();
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

it('an open page of a link that expires says it has ended, and a new visit is refused', async () => {
  const link = await api<{ token: string; expires_at: string }>(server.url, server.apiKey, 'POST', '/v1/portal-links', { owner_id: 'cus_expiring', expires_in_minutes: 1 });
  const context = await browser.context();
  const page = await context.newPage();
  await page.goto(`${server.url}/portal#token=${link.token}`);
  await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
  expect(await page.getByRole('heading', { name: 'This link has ended' }).count()).toBe(0);

  const untilExpiry = Date.parse(link.expires_at) - Date.now();
  await page.getByRole('heading', { name: 'This link has ended' }).waitFor({ timeout: untilExpiry + 15_000 });
  expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(link.expires_at));
  expect(await page.evaluate('sessionStorage.getItem("hookrelay.portalToken")')).toBeNull();

  await page.goto(`${server.url}/portal#token=${link.token}`);
  await page.getByRole('heading', { name: 'This link has ended' }).waitFor();
  await expect.poll(() => page.getByRole('alert').textContent()).toContain('UNAUTHORIZED');
  await context.close();
}, 120_000);
